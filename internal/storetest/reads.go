package storetest

import "sync"

// Reads counts a store's reads by entity, for tests that hold a service to how often it reads: embed it
// in a wrapper of the store and call Add from the read. The zero value is ready.
type Reads struct {
	mu sync.Mutex
	n  map[string]int
}

// Add counts one read of id.
func (r *Reads) Add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = make(map[string]int)
	}
	r.n[id]++
}

// Take returns the reads counted since the last Take, and counts afresh.
func (r *Reads) Take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = nil
	if n == nil {
		n = map[string]int{}
	}
	return n
}
