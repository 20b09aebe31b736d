package loadtest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rushgate/rushgate/internal/challenge"
)

// runPow plays a scripted attacker on one core against rooms with proof of work: it joins as fast as it
// can, solving each challenge, for a while at each difficulty, and reports the joins per second it got
// against the same attacker without a challenge, and the server's CPU per join.
func runPow(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pow", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:19086", "rushgate base URL (loopback only)")
	adminKey := fs.String("admin-key", "", "admin key, to create the rooms")
	dur := fs.Duration("d", 5*time.Second, "how long the attacker runs at each difficulty")
	levels := fs.String("difficulties", "0,16,18,20", "difficulties to try; 0 is the room without a challenge")
	pid := fs.Int("pid", 0, "the server's pid, for its CPU per join")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopback(*target); err != nil {
		return err
	}
	runtime.GOMAXPROCS(1) // one core, as a script on one machine has
	client := &http.Client{Timeout: 10 * time.Second}
	base := strings.TrimSuffix(*target, "/")
	// The server spends some CPU idle (its gates, history, journal); that is not the joins'.
	idle := 0.0
	if *pid > 0 {
		c0, _ := cpuTime(*pid)
		time.Sleep(2 * time.Second)
		c1, _ := cpuTime(*pid)
		idle = float64(c1-c0) / 2
		fmt.Printf("server CPU idle: %.1f ms/s\n", idle/1e6)
	}
	fmt.Printf("%-10s %10s %10s %14s %16s\n", "difficulty", "joins", "joins/s", "vs no challenge", "server CPU/join")
	var plain float64
	for _, l := range strings.Split(*levels, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil || d < 0 || d > challenge.MaxDifficulty {
			return fmt.Errorf("-difficulties: %q", l)
		}
		room := fmt.Sprintf("pow%d-%d", d, time.Now().UnixNano())
		cfg := fmt.Sprintf(`{"capacity": 1, "paused": true, "challenge": {"difficulty": %d}}`, d)
		if err := put(ctx, client, base+"/v1/rooms/"+room, *adminKey, cfg); err != nil {
			return err
		}
		before, _ := cpuTime(*pid)
		n, took, err := attack(ctx, client, base+"/v1/rooms/"+room+"/join", *dur)
		if err != nil {
			return err
		}
		after, _ := cpuTime(*pid)
		rate := float64(n) / took.Seconds()
		if d == 0 {
			plain = rate
		}
		ratio, cpu := "", ""
		if plain > 0 {
			ratio = fmt.Sprintf("%.4f", rate/plain)
		}
		if *pid > 0 && n > 0 {
			cpu = fmt.Sprintf("%.1f µs", max(0, float64(after-before)-idle*took.Seconds())/float64(n)/1e3)
		}
		fmt.Printf("%-10d %10d %10.1f %14s %16s\n", d, n, rate, ratio, cpu)
	}
	return nil
}

// attack joins as a new visitor again and again for dur, solving the challenge each join is answered
// with, and returns the joins that took a place.
func attack(ctx context.Context, client *http.Client, url string, dur time.Duration) (int, time.Duration, error) {
	start := time.Now()
	n := 0
	for time.Since(start) < dur && ctx.Err() == nil {
		code, body, err := post(ctx, client, url, "")
		if err != nil {
			return n, time.Since(start), err
		}
		if code == http.StatusUnauthorized {
			var c struct {
				Challenge  string `json:"challenge"`
				Difficulty int    `json:"difficulty"`
			}
			if err := json.Unmarshal(body, &c); err != nil || c.Challenge == "" {
				return n, time.Since(start), fmt.Errorf("join: 401 without a challenge: %s", body)
			}
			nonce := 0
			for !challenge.Solves(c.Challenge, strconv.Itoa(nonce), c.Difficulty) {
				nonce++
			}
			code, body, err = post(ctx, client, url, c.Challenge+":"+strconv.Itoa(nonce))
			if err != nil {
				return n, time.Since(start), err
			}
		}
		if code != http.StatusOK {
			return n, time.Since(start), fmt.Errorf("join: %d %s", code, body)
		}
		n++
	}
	return n, time.Since(start), nil
}

func post(ctx context.Context, client *http.Client, url, solution string) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if solution != "" {
		req.Header.Set("Rushgate-Challenge", solution)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	return res.StatusCode, body, err
}

func put(ctx context.Context, client *http.Client, url, key, body string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT %s: %d", url, res.StatusCode)
	}
	return nil
}
