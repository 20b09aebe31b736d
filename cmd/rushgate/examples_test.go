package main

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenExamples runs the examples that check an admission token in other languages (Python with
// Debian's python3-jwt, Node.js with jose, Java with JDK 17 alone) against a live rushgate: each says
// valid for a token of the room and invalid for a token of another room, and for a forged one. The
// Java servlet filter runs too, on requests with and without a token.
func TestTokenExamples(t *testing.T) {
	base, _ := serveInProcess(t)
	token := func(room string) string {
		if code, body, _ := do(t, "PUT", base+"/v1/rooms/"+room, testAdminKey, `{"capacity": 5}`); code != 200 {
			t.Fatalf("PUT: %d %v", code, body)
		}
		_, j, _ := do(t, "POST", base+"/v1/rooms/"+room+"/join", "", "")
		return waitAdmitted(t, base, room, j["visitor_token"].(string))
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
	t.Run("java servlet filter", func(t *testing.T) {
		cases := runFilterCheck(t, base, "sale", good)
		away := base + "/r/sale?return_to=" + url.QueryEscape("https://shop.example/checkout")
		want := map[string][]string{
			"none":   {"redirect", away, "-"},
			"cookie": {"through", "sale", "-"},
			"bearer": {"through", "sale", "-"},
			// The site's own bearer token does not hide the admission cookie.
			"site-bearer": {"through", "sale", "-"},
			// A token brought back from the room's page moves into an HttpOnly cookie.
			"query": {"through", "sale", "rg_admission;HttpOnly;Secure"},
			// ...unless the visitor holds a live admission already: a link must not replace it.
			"query-held":  {"through", "sale", "-"},
			"query-stale": {"through", "sale", "rg_admission;HttpOnly;Secure"},
			"forged":      {"redirect", away, "-"},
		}
		for name, w := range want {
			if got := cases[name]; strings.Join(got, " ") != strings.Join(w, " ") {
				t.Errorf("%s: the filter did %q, want %q", name, got, w)
			}
		}
	})
}

// runFilterCheck compiles the Java servlet filter example with its verifier against Debian's Jakarta
// Servlet API and runs it, through testdata/java/FilterCheck, on requests with and without a token of
// the room: it returns each case's line split into fields.
func runFilterCheck(t *testing.T, base, room, token string) map[string][]string {
	const jar = "/usr/share/java/jakarta-servlet-api.jar"
	for _, need := range []string{"javac", jar} {
		if _, err := exec.LookPath(need); err != nil {
			if _, serr := os.Stat(need); serr == nil {
				continue
			}
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing; .ci/run installs openjdk-17-jdk-headless and libjakarta-servlet-api-java", need)
			}
			t.Skipf("%s is missing", need)
		}
	}
	examples, _ := filepath.Abs("../../examples/java")
	classes := t.TempDir()
	javac := exec.Command("javac", "-d", classes, "-cp", jar, filepath.Join(examples, "RushgateVerifier.java"),
		filepath.Join(examples, "RushgateFilter.java"), filepath.Join("testdata", "java", "FilterCheck.java"))
	if b, err := javac.CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, b)
	}
	b, err := exec.Command("java", "-cp", classes+string(os.PathListSeparator)+jar, "FilterCheck", base, room, token).CombinedOutput()
	if err != nil {
		t.Fatalf("FilterCheck: %v\n%s", err, b)
	}
	cases := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) == 4 {
			cases[f[0]] = f[1:]
		}
	}
	return cases
}
