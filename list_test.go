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
		all = append(all, page.Items...)
		if page.Next == "" {
			break
		}
		if want := page.Items[len(page.Items)-1][len("got "):]; page.Next != want {
			t.Fatalf("a full page ending with %s says to read on after %q", want, page.Next)
		}
		after = page.Next
	}
	want := []string{"got e0", "got e4", "got e5", "got e6", "got e8", "got e9"}
	if !slices.Equal(all, want) {
		t.Fatalf("paged through %v, want %v", all, want)
	}
	if pages != 4 { // three full pages, then an empty one that says the list ended
		t.Fatalf("%d pages, want 4", pages)
	}

	// Past the end, a page is empty, not nil: it encodes as a JSON list.
	if page, err := rushgate.Page(ctx, "e9", 5, c.list, get, errGone); err != nil || page.Items == nil || len(page.Items) != 0 ||
		page.Unavailable == nil || page.Next != "" {
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
	if page, err := rushgate.Page(ctx, "", 5, stuck, allGone, errGone); err != nil || len(page.Items) != 0 || page.Next != "" {
		t.Fatalf("a stuck list: %v, %v", page, err)
	}
	failing := func(context.Context, string, int) ([]string, error) { return nil, boom }
	if _, err := rushgate.Page(ctx, "", 5, failing, get, errGone); !errors.Is(err, boom) {
		t.Fatalf("a failed list: %v", err)
	}
}

// TestPageShowsWhatItCanRead: ids whose entity cannot be read because part of the store does not
// answer (a Redis Cluster master down) are named in the page's Unavailable, counting toward its
// limit, and the rest is read, page after page, rather than the whole list failing.
func TestPageShowsWhatItCanRead(t *testing.T) {
	ctx := context.Background()
	c := &catalog{ids: []string{"a", "b", "c", "d", "e"}}
	get := func(_ context.Context, id string) (string, error) {
		if id == "b" || id == "c" {
			return "", fmt.Errorf("%w: dial tcp 10.0.0.7:6379: connection refused", rushgate.ErrUnavailable)
		}
		return id, nil
	}
	var items, unavailable []string
	for after := ""; ; {
		page, err := rushgate.Page(ctx, after, 2, c.list, get, errGone)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items)+len(page.Unavailable) > 2 {
			t.Fatalf("a page of 2 holds %v and %v unavailable", page.Items, page.Unavailable)
		}
		items, unavailable = append(items, page.Items...), append(unavailable, page.Unavailable...)
		if after = page.Next; after == "" {
			break
		}
	}
	if !slices.Equal(items, []string{"a", "d", "e"}) || !slices.Equal(unavailable, []string{"b", "c"}) {
		t.Fatalf("paged through %v with %v unavailable; want a, d, e with b, c", items, unavailable)
	}
	// A caller gone away is no part of the store down: the page fails.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	canceled := func(ctx context.Context, _ string) (string, error) {
		return "", fmt.Errorf("%w: %w", rushgate.ErrUnavailable, ctx.Err())
	}
	if _, err := rushgate.Page(gone, "", 2, c.list, canceled, errGone); err == nil {
		t.Fatal("a page whose caller went away answered")
	}
}
