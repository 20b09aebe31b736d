package loadtest

import (
	"errors"
	"fmt"
	"sync"
)

// ErrProblems is what a rehearsal returns, after its report, when it found something wrong, so that a
// rehearsal in a deploy pipeline fails it; the report lists what.
var ErrProblems = errors.New("the rehearsal found problems")

// problemsFound returns ErrProblems, with their count, when there are problems.
func problemsFound(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d, listed in the report", ErrProblems, len(problems))
}

// findings is what a rehearsal found amiss while it ran: answers it did not expect, counted by code,
// and problems, each said once in the order first found, with how often it was found.
type findings struct {
	mu       sync.Mutex
	errors   map[string]int
	problems []string
	times    map[string]int
}

// fail counts an answer the run did not expect.
func (f *findings) fail(code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errors == nil {
		f.errors = map[string]int{}
	}
	f.errors[code]++
}

// failures is how many answers the run did not expect.
func (f *findings) failures() (n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.errors {
		n += c
	}
	return n
}

// problem notes what went wrong; the report says each once, with how often when more than once (every
// watcher that missed the end).
func (f *findings) problem(format string, args ...any) {
	p := fmt.Sprintf(format, args...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.times == nil {
		f.times = map[string]int{}
	}
	if f.times[p]++; f.times[p] == 1 && len(f.problems) < 100 {
		f.problems = append(f.problems, p)
	}
}

// found returns the errors by code and the problems, each with its count when above one.
func (f *findings) found() (errors map[string]int, problems []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	errors, problems = map[string]int{}, []string{}
	for k, n := range f.errors {
		errors[k] = n
	}
	for _, p := range f.problems {
		if n := f.times[p]; n > 1 {
			p += fmt.Sprintf(" (%d times)", n)
		}
		problems = append(problems, p)
	}
	return errors, problems
}
