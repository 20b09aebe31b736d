package console_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rushgate/rushgate"
)

// textKeys returns the keys of one language's texts in console.js, which lists them as
// `lang: { key: '...', ... },`.
func textKeys(t *testing.T, js, lang string) []string {
	t.Helper()
	start := strings.Index(js, "\n    "+lang+": {")
	if start < 0 {
		t.Fatalf("console.js has no %s texts", lang)
	}
	block := js[start:]
	block = block[:strings.Index(block, "\n    },")]
	var keys []string
	for _, m := range regexp.MustCompile(`([a-z][a-z_0-9]*):\s*'`).FindAllStringSubmatch(block, -1) {
		keys = append(keys, m[1])
	}
	slices.Sort(keys)
	return keys
}

// TestTextsInBothLanguages: the console says everything in English and Korean, every action the
// audit log records included; before, "invites" and "restore" showed as their bare keys.
func TestTextsInBothLanguages(t *testing.T) {
	b, err := os.ReadFile("assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	en, ko := textKeys(t, string(b), "en"), textKeys(t, string(b), "ko")
	if len(en) < 50 || !slices.Equal(en, ko) {
		t.Fatalf("English and Korean texts differ:\nen %v\nko %v", en, ko)
	}
	for _, a := range rushgate.Actions {
		if _, ok := slices.BinarySearch(en, "act_"+a); !ok {
			t.Errorf("no label for the audit action %q", a)
		}
	}
}
