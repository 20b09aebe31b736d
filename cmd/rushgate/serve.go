package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rushgate/rushgate/internal/httpapi"
	"github.com/rushgate/rushgate/internal/keyring"
	"github.com/rushgate/rushgate/internal/memstore"
	"github.com/rushgate/rushgate/internal/metrics"
	"github.com/rushgate/rushgate/internal/room"
	"github.com/rushgate/rushgate/internal/visitor"
)

type serveFlags struct {
	addr          string
	data          string
	adminKey      string
	logLevel      string
	logFormat     string
	newVisitors   int
	secureCookies bool
	drainTimeout  time.Duration
	debugAddr     string
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&f.data, "data", "./rushgate-data", "directory for signing keys and local data")
	fs.StringVar(&f.adminKey, "admin-key", "", "admin credential; generated and stored under --data when empty")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "json", "json or text")
	fs.IntVar(&f.newVisitors, "new-visitors-per-minute", 0, "most new anonymous visitors per client address per minute (0: no limit)")
	fs.BoolVar(&f.secureCookies, "secure-cookies", false, "mark cookies Secure (set when TLS ends at a proxy)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 15*time.Second, "how long SIGTERM waits for in-flight requests")
	fs.StringVar(&f.debugAddr, "debug-addr", "", "serve net/http/pprof on this separate address (empty: off)")
}

// applyEnv sets every flag not given on the command line from RUSHGATE_<NAME>, so that containers can
// be configured through the environment alone.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "RUSHGATE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && !given[f.Name] && err == nil {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	fset := flag.NewFlagSet("serve", flag.ContinueOnError)
	fset.SetOutput(stderr)
	f.register(fset)
	if err := fset.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fset); err != nil {
		return err
	}
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	adminKey, generated, err := loadSecret(f.adminKey, filepath.Join(f.data, "admin.key"))
	if err != nil {
		return err
	}
	if generated {
		fmt.Fprintf(stdout, "Generated admin key (stored in %s):\n%s\n", filepath.Join(f.data, "admin.key"), adminKey)
	}
	visitorSecret, _, err := loadSecret("", filepath.Join(f.data, "visitor.secret"))
	if err != nil {
		return err
	}
	visitors, err := visitor.NewIssuer([]byte(visitorSecret))
	if err != nil {
		return err
	}
	keys, err := keyring.Open(f.data)
	if err != nil {
		return err
	}

	store := memstore.New(memstore.Options{})
	m := metrics.New()
	svc := room.NewService(store, room.Options{Observer: m, Logger: log})
	m.WatchRooms(svc)
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Stop() // after the HTTP server has drained: producers of requests stop before the gates

	api := httpapi.New(httpapi.Config{
		Rooms: svc, Keys: keys, Visitors: visitors, Metrics: m, Logger: log,
		AdminKey: adminKey, NewVisitorsPerMinute: f.newVisitors, SecureCookies: f.secureCookies,
	})
	return listenAndServe(ctx, log, f, api)
}

func listenAndServe(ctx context.Context, log *slog.Logger, f serveFlags, api *httpapi.Server) error {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(api.Drain)
	if f.debugAddr != "" {
		dbg, err := debugServer(f.debugAddr)
		if err != nil {
			return err
		}
		defer dbg.Close()
	}
	log.Info("rushgate listening", "addr", ln.Addr().String(), "data", f.data, "store", "memory", "version", buildVersion())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("draining", "timeout", f.drainTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), f.drainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	api.Wait() // streams on taken-over connections, ended by Drain

	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// loadSecret returns given when set; otherwise the secret stored at path, creating a random one there on
// first start. It reports whether it generated one.
func loadSecret(given, path string) (string, bool, error) {
	if given != "" {
		return given, false, nil
	}
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", false, err
	}
	secret := "rg_" + hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", false, err
	}
	return secret, true, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be json or text, not %q", format)
	}
}

// debugServer serves the profiler on its own listener, so that it is never exposed with the API.
func debugServer(addr string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with Close; its error is always ErrServerClosed then
	return srv, nil
}
