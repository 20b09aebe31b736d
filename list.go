package rushgate

import (
	"context"
	"errors"
)

// Lister pages through the ids of one kind in id order: up to limit ids after the id after ("" for
// the first page). The stores of drops and auctions list this way.
type Lister func(ctx context.Context, after string, limit int) ([]string, error)

// EachID calls fn with every id list returns, in pages of 500, until the list ends or fails: how a
// service visits all its entities to sample them.
func EachID(ctx context.Context, list Lister, fn func(id string)) {
	for after := ""; ; {
		ids, err := list(ctx, after, 500)
		if err != nil || len(ids) == 0 {
			return
		}
		for _, id := range ids {
			fn(id)
		}
		after = ids[len(ids)-1]
	}
}

// Page reads up to limit entities after the id after, in id order: their ids from list, each one from
// get. An id whose entity get reports gone (deleted since it was listed, or listed by a step that
// failed halfway) is left out and the page reads on past it, so that a page shorter than limit means
// the list has ended and never hides the entities after a gone one.
func Page[T any](ctx context.Context, after string, limit int, list Lister, get func(ctx context.Context, id string) (T, error), gone error) ([]T, error) {
	out := []T{}
	for len(out) < limit {
		want := limit - len(out)
		ids, err := list(ctx, after, want)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			v, err := get(ctx, id)
			if errors.Is(err, gone) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if len(ids) < want || ids[len(ids)-1] <= after {
			break // the end, or a list that does not move on
		}
		after = ids[len(ids)-1]
	}
	return out, nil
}
