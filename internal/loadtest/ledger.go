package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ledger keeps the claims a run was answered from one drop, to hold the drop's own account against
// afterwards: a drop's rehearsal and a room's with a drop behind it both read the drop back through
// one.
type ledger struct {
	findings
	base, id, adminKey string
	client             *http.Client
	first              dropView     // the drop when the run began
	unsure             atomic.Int64 // claims whose answer was lost in transport: each may have been made
	repeats            atomic.Int64 // claims answered again under their idempotency key

	mu       sync.Mutex
	claims   map[string]claimSeen // by claim id
	byKey    map[string]string    // idempotency key -> claim id
	bySeq    map[int64]string     // claim number -> claim id
	byCode   map[string]string    // code -> claim id
	mine     map[string]int       // visitor -> claims
	lastUnit time.Time            // when the claim that took the last unit was answered
}

// dropView is what a run reads of a drop.
type dropView struct {
	Status     string    `json:"status"`
	Stock      int64     `json:"stock"`
	Remaining  int64     `json:"remaining"`
	Claimed    int64     `json:"claimed"`
	PerVisitor int64     `json:"per_visitor"`
	OpensAt    time.Time `json:"opens_at"`
	Room       string    `json:"room"`
}

// claimSeen is a claim as the drop answered or listed it.
type claimSeen struct {
	ID      string `json:"claim_id"`
	Seq     int64  `json:"seq"`
	Code    string `json:"code"`
	Visitor string `json:"visitor"`
}

// lookups is how many of the run's codes it looks up afterwards.
const lookups = 20

// openLedger reads drop id as the run begins; the admin key reads its claims back at the end.
func openLedger(ctx context.Context, base, id, adminKey string, client *http.Client) (*ledger, error) {
	l := &ledger{base: base, id: url.PathEscape(id), adminKey: adminKey, client: client, claims: map[string]claimSeen{},
		byKey: map[string]string{}, bySeq: map[int64]string{}, byCode: map[string]string{}, mine: map[string]int{}}
	var err error
	l.first, err = l.view(ctx)
	return l, err
}

// view reads the drop.
func (l *ledger) view(ctx context.Context) (dropView, error) {
	var v dropView
	err := getJSON(ctx, l.client, l.base+"/v1/drops/"+l.id, "", &v)
	return v, err
}

// getJSON reads the JSON answer of a GET of u into out, with the admin key when key is not "": what a
// rehearsal reads of the entity it rehearses, before and after.
func getJSON(ctx context.Context, c *http.Client, u, key string, out any) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
		return fmt.Errorf("GET %s: %s %s", u, res.Status, b)
	}
	return json.NewDecoder(io.LimitReader(res.Body, 16<<20)).Decode(out)
}

// made notes a claim answered under key ("" for none): a repeat must be the claim the key was first
// answered with, and a new one must share no number or code with another.
func (l *ledger) made(key string, c claimSeen) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if first, ok := l.byKey[key]; ok && key != "" {
		l.repeats.Add(1)
		if first != c.ID {
			l.problem("a repeat under one Idempotency-Key was answered with claim %s after %s", c.ID, first)
		}
		return
	}
	if key != "" {
		l.byKey[key] = c.ID
	}
	if _, ok := l.claims[c.ID]; ok {
		l.problem("claim %s was answered to two requests", c.ID)
		return
	}
	l.claims[c.ID] = c
	if other, ok := l.bySeq[c.Seq]; ok {
		l.problem("claims %s and %s have the same number, %d", other, c.ID, c.Seq)
	}
	if other, ok := l.byCode[c.Code]; ok {
		l.problem("claims %s and %s have the same code", other, c.ID)
	}
	l.bySeq[c.Seq], l.byCode[c.Code] = c.ID, c.ID
	l.mine[c.Visitor]++
	if c.Seq == l.first.Stock {
		l.lastUnit = time.Now()
	}
}

// judge holds the drop's end against the claims answered. A claim whose answer was lost in transport
// may have been made, so the counts it could upset allow for it.
func (l *ledger) judge(end dropView) (problems []string) {
	say := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	l.mu.Lock()
	defer l.mu.Unlock()
	made, unsure := int64(len(l.claims)), l.unsure.Load()
	if made > l.first.Remaining {
		say("the run was given %d claims, while %d units remained", made, l.first.Remaining)
	}
	if got := end.Claimed - l.first.Claimed; got < made || got > made+unsure {
		say("the drop counts %d claims made during the run, while the run was given %d", got, made)
	}
	if end.Remaining != end.Stock-end.Claimed || end.Remaining < 0 {
		say("the drop counts %d remaining of %d with %d claimed", end.Remaining, end.Stock, end.Claimed)
	}
	for _, v := range slices.Sorted(maps.Keys(l.mine)) {
		if n := int64(l.mine[v]); n > l.first.PerVisitor {
			say("visitor %s was given %d claims, over its limit of %d", v, n, l.first.PerVisitor)
		}
	}
	for _, seq := range slices.Sorted(maps.Keys(l.bySeq)) {
		if seq <= l.first.Claimed || seq > end.Stock {
			say("claim %s has the number %d, outside the units the run could take (%d to %d)", l.bySeq[seq], seq, l.first.Claimed+1, end.Stock)
		}
	}
	return problems
}

// readBack reads the drop's claims made since the run began and holds each against its answer, then
// looks up some of their codes as a checkout does. It returns how many claims were listed as they
// were answered, and how many codes were found as their claim's.
func (l *ledger) readBack(ctx context.Context, end dropView) (listed, looked int64) {
	var got []claimSeen
	for try := 0; ; try++ { // a record read behind the store catches up in a moment
		got = got[:0]
		for after := l.first.Claimed; ; {
			var page struct {
				Claims []claimSeen `json:"claims"`
				Next   int64       `json:"next_after"`
			}
			u := fmt.Sprintf("%s/v1/drops/%s/claims?after=%d&limit=1000", l.base, l.id, after)
			if err := getJSON(ctx, l.client, u, l.adminKey, &page); err != nil {
				l.problem("reading the drop's claims: %v", err)
				return 0, 0
			}
			if len(page.Claims) == 0 {
				break
			}
			got, after = append(got, page.Claims...), page.Next
		}
		if int64(len(got)) >= end.Claimed-l.first.Claimed || try == 20 || !sleepUntil(ctx, time.Now().Add(500*time.Millisecond)) {
			break
		}
	}
	l.mu.Lock()
	ours := maps.Clone(l.claims)
	unsure := l.unsure.Load()
	l.mu.Unlock()
	for _, c := range got {
		mine, ok := ours[c.ID]
		switch {
		case !ok && unsure == 0:
			l.problem("the drop lists claim %s, which no answer of the run gave", c.ID)
		case !ok:
		case mine != c:
			l.problem("claim %s is listed as %+v, while it was answered as %+v", c.ID, c, mine)
		default:
			listed++
		}
		delete(ours, c.ID)
	}
	for _, id := range slices.Sorted(maps.Keys(ours)) {
		l.problem("claim %s, answered to the run, is not in the drop's listing", id)
	}
	// A checkout looks a code up: a few of the run's, the first and the last among them.
	l.mu.Lock()
	seqs := slices.Sorted(maps.Keys(l.bySeq))
	picked := make([]claimSeen, 0, lookups)
	for i, seq := range seqs {
		if i < lookups/2 || i >= len(seqs)-lookups/2 {
			picked = append(picked, l.claims[l.bySeq[seq]])
		}
	}
	l.mu.Unlock()
	for _, c := range picked {
		var found claimSeen
		if err := getJSON(ctx, l.client, l.base+"/v1/drops/"+l.id+"/codes/"+url.PathEscape(c.Code), l.adminKey, &found); err != nil {
			l.problem("looking up a code of the run: %v", err)
			continue
		}
		if found != c {
			l.problem("code %s is found as %+v, while its claim was answered as %+v", c.Code, found, c)
			continue
		}
		looked++
	}
	return listed, looked
}
