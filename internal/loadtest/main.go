// Package loadtest is rushgate's one load tool, run as `rushgate loadtest`. With a room it rehearses an
// on-sale: simulated visitors join at a given arrival rate, wait by SSE or polling as the page does,
// verify their admission offline, stay for a think time and release; it reports latencies, the
// admission rate against the room's, ETA accuracy and errors by code (see rehearse.go). With an
// auction it rehearses the last minutes of bidding while watchers hold the live feed (auction.go), and
// with a drop the rush at its opening, then reads back what the drop keeps (drop.go). Its
// other modes are the benchmarks of bench/*.sh, each bounded in requests and time and aimed at
// loopback only, each figure a ratio against a baseline measured in the same run, because the
// machines they run on are shared and noisy:
//
//	rushgate loadtest --room R --visitors N ...               rehearse an on-sale against any rushgate
//	rushgate loadtest auction --auction A --admin-key K ...   rehearse an auction's bidding and live feed
//	rushgate loadtest drop --drop D --admin-key K ...         rehearse a drop's opening rush and read it back
//	rushgate loadtest null  --addr 127.0.0.1:9090 [--page N]    serve the null handler (the baseline), or a page origin
//	rushgate loadtest join  --target URL --null URL             join requests/s against the null handler
//	rushgate loadtest sse   --target URL --admin-key K --pid P  memory per idle stream and admission latency
//	rushgate loadtest bid   --target URL --admin-key K --null U accepted bids/s on one hot auction, p99 latency
//	rushgate loadtest claim --target URL --admin-key K --null U successful drop claims/s, p99 latency
//	rushgate loadtest pow   --target URL --admin-key K --pid P  an attacker's joins/s through proof of work
//	rushgate loadtest get   --target URL --null URL --header H   GETs/s of the proxy or the check endpoint
package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Run runs the load tool with the arguments that follow "loadtest", writing its progress and report to
// out.
func Run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || len(args[0]) > 0 && args[0][0] == '-' {
		return rehearse(ctx, args, out)
	}
	switch args[0] {
	case "null":
		return runNull(ctx, args[1:])
	case "join":
		return runJoin(ctx, args[1:])
	case "sse":
		return runSSE(ctx, args[1:])
	case "auction":
		return rehearseAuction(ctx, args[1:], out)
	case "drop":
		return rehearseDrop(ctx, args[1:], out)
	case "bid":
		return runBid(ctx, args[1:])
	case "claim":
		return runClaim(ctx, args[1:])
	case "pow":
		return runPow(ctx, args[1:])
	case "get":
		return runGet(ctx, args[1:])
	}
	return fmt.Errorf("unknown mode %q: rushgate loadtest [auction|drop|null|join|sse|bid|claim|pow|get] [flags], or --room R to rehearse", args[0])
}

// runNull serves the baseline: the cheapest JSON answer net/http can give, on the same server settings
// rushgate uses.
func runNull(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("null", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9090", "loopback address to listen on")
	page := fs.Int("page", 0, "instead, render a shop's HTML page listing this many tickets for each request (a site's origin)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopback(*addr); err != nil {
		return err
	}
	body := []byte(`{"visitor_token":"v2.v_aaaaaaaaaaaaaaaaaaaaaaaaaa.bench.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","state":"waiting","position":1,"eta_seconds":1}` + "\n")
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	if *page > 0 {
		handler = pageHandler(*page)
	}
	srv := &http.Server{
		Addr:    *addr,
		Handler: handler,
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
		return fmt.Errorf("%s is not a loopback address; the benchmark modes load this machine only", host)
	}
	return nil
}
