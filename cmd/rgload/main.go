// Command rgload measures a rushgate server from another process. Every run is bounded in requests and
// time and targets loopback only, and every figure it prints is a ratio against a baseline measured in
// the same run, because the machines it runs on are shared and noisy.
//
//	rgload null  --addr 127.0.0.1:9090                  serve the null handler (the baseline)
//	rgload join  --target URL --null URL                 join requests/s against the null handler
//	rgload sse   --target URL --admin-key K --pid PID    memory per idle stream and admission latency
//	rgload bid   --target URL --admin-key K --null URL   accepted bids/s on one hot auction, p99 latency
//	rgload claim --target URL --admin-key K --null URL   successful drop claims/s, p99 latency
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rgload null|join|sse|bid|claim [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "null":
		err = runNull(ctx, os.Args[2:])
	case "join":
		err = runJoin(ctx, os.Args[2:])
	case "sse":
		err = runSSE(ctx, os.Args[2:])
	case "bid":
		err = runBid(ctx, os.Args[2:])
	case "claim":
		err = runClaim(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "rgload:", err)
		os.Exit(1)
	}
}

// runNull serves the baseline: the cheapest JSON answer net/http can give, on the same server settings
// rushgate uses.
func runNull(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("null", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9090", "loopback address to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopback(*addr); err != nil {
		return err
	}
	body := []byte(`{"visitor_token":"v2.v_aaaaaaaaaaaaaaaaaaaaaaaaaa.bench.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","state":"waiting","position":1,"eta_seconds":1}` + "\n")
	srv := &http.Server{
		Addr: *addr,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}),
		// The timeouts rushgate serve sets, so that the baseline pays for the same deadlines.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loopback refuses any target that is not on this machine.
func loopback(hostport string) error {
	if u, err := url.Parse(hostport); err == nil && u.Host != "" {
		hostport = u.Host
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s is not a loopback address; rgload only loads this machine", host)
	}
	return nil
}
