package rushgate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rushgate/rushgate"
)

// catalog lists ids in order, in pages, and counts the pages it was asked for.
type catalog struct {
	ids   []string
	pages int
}

func (c *catalog) list(_ context.Context, after string, limit int) ([]string, error) {
	c.pages++
	i, found := slices.BinarySearch(c.ids, after)
	if found {
		i++
	}
	return c.ids[i:min(len(c.ids), i+limit)], nil
}

var errGone = errors.New("gone")

// TestPageReadsPastGoneEntities: ids listed whose entity is gone (deleted since, or left behind by a
// step that failed halfway) are left out, and the page reads on, so that it is full unless the list
// has ended: a short page must not hide the entities after them.
func TestPageReadsPastGoneEntities(t *testing.T) {
	ctx := context.Background()
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("e%d", i))
	}
	gone := map[string]bool{"e1": true, "e2": true, "e3": true, "e7": true}
	get := func(_ context.Context, id string) (string, error) {
		if gone[id] {
			return "", fmt.Errorf("entity %s: %w", id, errGone)
		}
		return "got " + id, nil
	}
	c := &catalog{ids: ids}
	var all []string
	pages := 0
	for after := ""; ; {
		page, err := rushgate.Page(ctx, after, 2, c.list, get, errGone)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1][len("got "):]
	}
	want := []string{"got e0", "got e4", "got e5", "got e6", "got e8", "got e9"}
	if !slices.Equal(all, want) {
		t.Fatalf("paged through %v, want %v", all, want)
	}
	if pages != 4 { // three full pages, then an empty one that says the list ended
		t.Fatalf("%d pages, want 4", pages)
	}

	// Past the end, a page is empty, not nil: it encodes as a JSON list.
	if page, err := rushgate.Page(ctx, "e9", 5, c.list, get, errGone); err != nil || page == nil || len(page) != 0 {
		t.Fatalf("past the end: %v, %v", page, err)
	}
	// Any other failure of a read fails the page, and of the list too.
	boom := errors.New("store down")
	if _, err := rushgate.Page(ctx, "", 5, c.list, func(context.Context, string) (string, error) { return "", boom }, errGone); !errors.Is(err, boom) {
		t.Fatalf("a failed read: %v", err)
	}
	// A list that does not move on past after ends the page rather than read it forever.
	stuck := func(_ context.Context, _ string, limit int) ([]string, error) { return ids[:limit], nil }
	allGone := func(context.Context, string) (string, error) { return "", errGone }
	if page, err := rushgate.Page(ctx, "", 5, stuck, allGone, errGone); err != nil || len(page) != 0 {
		t.Fatalf("a stuck list: %v, %v", page, err)
	}
	failing := func(context.Context, string, int) ([]string, error) { return nil, boom }
	if _, err := rushgate.Page(ctx, "", 5, failing, get, errGone); !errors.Is(err, boom) {
		t.Fatalf("a failed list: %v", err)
	}
}
