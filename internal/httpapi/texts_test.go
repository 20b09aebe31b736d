package httpapi

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLanguagesHaveEveryText: each language's table of the visitor pages has the texts English has,
// and no others, and every text the pages' scripts ask for is there, so that no page shows a key's
// name or falls back to English.
func TestLanguagesHaveEveryText(t *testing.T) {
	if languages[0].Code != "en" || len(languages) < 2 {
		t.Fatalf("languages %v: want English first, and more than it", languages)
	}
	en := languages[0].texts
	for _, l := range languages[1:] {
		for k := range en {
			if l.texts[k] == "" {
				t.Errorf("%s lacks %q (English: %q)", l.Code, k, en[k])
			}
		}
		for k := range l.texts {
			if _, ok := en[k]; !ok {
				t.Errorf("%s has %q, which English lacks", l.Code, k)
			}
		}
	}
	// text("key") and text(cond ? "a" : "b") in the scripts, and the keys of page.js's failures.
	asked := regexp.MustCompile(`text\(\s*(?:[^"()]*\?\s*)?"([a-z_]+)"(?:\s*:\s*"([a-z_]+)")?`)
	failure := regexp.MustCompile(`(?m)^\s+(?:[a-z_]+: "[a-z_]+",\s*)+$`)
	pair := regexp.MustCompile(`[a-z_]+: "([a-z_]+)"`)
	scripts, _ := fs.Glob(assets, "assets/*.js")
	var keys []string
	for _, name := range scripts {
		src, _ := fs.ReadFile(assets, name)
		for _, m := range asked.FindAllStringSubmatch(string(src), -1) {
			keys = append(keys, m[1:]...)
		}
		if strings.HasSuffix(name, "page.js") {
			for _, line := range failure.FindAllString(string(src), -1) {
				for _, m := range pair.FindAllStringSubmatch(line, -1) {
					keys = append(keys, m[1])
				}
			}
		}
	}
	if !slices.Contains(keys, "busy_retry") || !slices.Contains(keys, "claim") {
		t.Fatalf("found %d keys in the scripts, missing some that are there: the patterns are stale", len(keys))
	}
	for _, k := range keys {
		if _, ok := en[k]; k != "" && !ok {
			t.Errorf("a script asks for %q, which no table has", k)
		}
	}
}

// TestLanguagesTellApartWhatEnglishDoes: two texts of the visitor pages that differ in English read
// differently in every other language (as the console's do), but for a plural that Korean does not
// mark.
func TestLanguagesTellApartWhatEnglishDoes(t *testing.T) {
	alike := map[string]bool{"won won_more": true} // keys sorted, joined by a space
	en := languages[0].texts
	for _, l := range languages[1:] {
		byText := map[string][]string{}
		for k, v := range l.texts {
			byText[v] = append(byText[v], k)
		}
		for v, keys := range byText {
			slices.Sort(keys)
			for i, a := range keys {
				for _, b := range keys[i+1:] {
					if !strings.EqualFold(en[a], en[b]) && !alike[a+" "+b] {
						t.Errorf("%s: %s (%q) and %s (%q) both read %q", l.Code, a, en[a], b, en[b], v)
					}
				}
			}
		}
	}
}
