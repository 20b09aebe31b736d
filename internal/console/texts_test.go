package console_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rushgate/rushgate"
)

// texts returns one language's texts in console.js, which lists them as `lang: { key: '...', ... },`.
func texts(t *testing.T, js, lang string) map[string]string {
	t.Helper()
	start := strings.Index(js, "\n    "+lang+": {")
	if start < 0 {
		t.Fatalf("console.js has no %s texts", lang)
	}
	block := js[start:]
	block = block[:strings.Index(block, "\n    },")]
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`([a-z][a-z_0-9]*):\s*'((?:[^'\\]|\\.)*)'`).FindAllStringSubmatch(block, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// textKeys returns the keys of one language's texts in console.js, sorted.
func textKeys(t *testing.T, js, lang string) []string {
	t.Helper()
	keys := slices.Collect(maps.Keys(texts(t, js, lang)))
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

// TestKoreanTellsApartWhatEnglishDoes: two texts that differ in English do not read alike in Korean.
// A room's state "admitting" and its count of "Active" visitors were both 입장 중, side by side on its
// page, and the audit log's "opened now" read as the button "Open now" (지금 열기). Korean has no
// plural, so a heading and its entity's kind ("Rooms", "Room") may share a word, as may a few labels
// that say one thing twice.
func TestKoreanTellsApartWhatEnglishDoes(t *testing.T) {
	b, err := os.ReadFile("assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	en, ko := texts(t, string(b), "en"), texts(t, string(b), "ko")
	alike := map[string]bool{ // pairs of keys, sorted and joined by a space
		"kind_room rooms": true, "drops kind_drop": true, "auctions kind_auction": true, "state status": true,
		"admitted admitted_total": true, "chart_claims claims_s": true, "reserve reserve_price": true,
	}
	byKo := map[string][]string{}
	for k, v := range ko {
		byKo[v] = append(byKo[v], k)
	}
	for v, keys := range byKo {
		slices.Sort(keys)
		for i, a := range keys {
			for _, b := range keys[i+1:] {
				if !strings.EqualFold(en[a], en[b]) && !alike[a+" "+b] {
					t.Errorf("%s (%q) and %s (%q) both read %q in Korean", a, en[a], b, en[b], v)
				}
			}
		}
	}
}
