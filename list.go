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

// Listed is one page of a list of rooms, drops or auctions.
type Listed[T any] struct {
	// Items are the entities read, in id order.
	Items []T
	// Unavailable are the ids listed whose entity could not be read because the part of the store
	// that holds it does not answer (a Redis Cluster master down): the page shows the rest rather than
	// nothing, which an operator pausing every room needs most then.
	Unavailable []string
	// Next is the id to read the next page after, "" once the list has ended.
	Next string
}

// Page reads up to limit entities after the id after, in id order: their ids from list, each one from
// get. An id whose entity get reports gone (deleted since it was listed, or listed by a step that
// failed halfway) is left out and the page reads on past it, so that a page short of limit means the
// list has ended and never hides the entities after a gone one. An id whose read fails with
// ErrUnavailable counts toward limit among the page's Unavailable; any other failure fails the page.
func Page[T any](ctx context.Context, after string, limit int, list Lister, get func(ctx context.Context, id string) (T, error), gone error) (Listed[T], error) {
	page := Listed[T]{Items: []T{}, Unavailable: []string{}}
	for {
		want := limit - len(page.Items) - len(page.Unavailable)
		ids, err := list(ctx, after, want)
		if err != nil {
			return Listed[T]{}, err
		}
		for _, id := range ids {
			v, err := get(ctx, id)
			switch {
			case errors.Is(err, gone):
				continue
			case errors.Is(err, ErrUnavailable) && ctx.Err() == nil:
				page.Unavailable = append(page.Unavailable, id)
			case err != nil:
				return Listed[T]{}, err
			default:
				page.Items = append(page.Items, v)
			}
		}
		if len(ids) < want || ids[len(ids)-1] <= after {
			return page, nil // the end, or a list that does not move on
		}
		after = ids[len(ids)-1]
		if len(page.Items)+len(page.Unavailable) >= limit {
			page.Next = after
			return page, nil
		}
	}
}
