package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTokenExamples runs the examples that check an admission token in other languages (Python with
// Debian's python3-jwt, Node.js with jose, Java with JDK 17 alone) against a live rushgate: each says
// valid for a token of the room and invalid for a token of another room, and for a forged one.
func TestTokenExamples(t *testing.T) {
	addr := freeAddr(t)
	base := "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", addr, "--data", t.TempDir(), "--admin-key", testAdminKey, "--log-level", "warn"}, &out, &errb)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitHealthy(t, base)
	token := func(room string) string {
		if code, body, _ := do(t, "PUT", base+"/v1/rooms/"+room, testAdminKey, `{"capacity": 5}`); code != 200 {
			t.Fatalf("PUT: %d %v", code, body)
		}
		_, j, _ := do(t, "POST", base+"/v1/rooms/"+room+"/join", "", "")
		for range 100 {
			_, st, _ := do(t, "GET", base+"/v1/rooms/"+room+"/status", j["visitor_token"].(string), "")
			if a, _ := st["admission_token"].(string); a != "" {
				return a
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("not admitted")
		return ""
	}
	good, other := token("sale"), token("other")
	forged := good[:len(good)-4] + "AAAA"
	examples, _ := filepath.Abs("../../examples")

	nodeDir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "verify.mjs"} {
		b, err := os.ReadFile(filepath.Join(examples, "node", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(nodeDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	langs := []struct {
		name, tool string
		prepare    []string
		cmd        []string
	}{
		{"python", "/usr/bin/python3", nil, []string{"/usr/bin/python3", filepath.Join(examples, "python", "verify.py")}},
		{"node", "node", []string{"npm", "ci", "--no-audit", "--no-fund", "--prefix", nodeDir}, []string{"node", filepath.Join(nodeDir, "verify.mjs")}},
		{"java", "java", nil, []string{"java", filepath.Join(examples, "java", "RushgateVerifier.java")}},
	}
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			if _, err := exec.LookPath(l.tool); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is not installed; .ci/run installs it", l.tool)
				}
				t.Skipf("%s is not installed", l.tool)
			}
			if l.prepare != nil {
				if b, err := exec.Command(l.prepare[0], l.prepare[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%v: %v\n%s", l.prepare, err, b)
				}
			}
			check := func(tok string) (string, int) {
				cmd := exec.Command(l.cmd[0], append(l.cmd[1:], base, "sale", tok)...)
				b, err := cmd.CombinedOutput()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return strings.TrimSpace(string(b)), code
			}
			if got, code := check(good); code != 0 || !strings.HasPrefix(got, "valid ") || !strings.Contains(got, " sale ") {
				t.Fatalf("a token of the room: %d %q", code, got)
			}
			for name, tok := range map[string]string{"another room": other, "forged": forged} {
				if got, code := check(tok); code != 1 || !strings.HasPrefix(got, "invalid") {
					t.Errorf("%s: %d %q", name, code, got)
				}
			}
		})
	}
}
