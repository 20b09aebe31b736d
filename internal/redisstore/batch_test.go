package redisstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rushgate/rushgate"
)

// TestBatchCallerKeepsTheTimeout gives the batcher a client that overruns the batch's deadline, as
// rueidis does while it reconnects to a Redis that stopped answering: the caller still gets
// ErrUnavailable once the timeout has passed, and the answer that comes later goes nowhere.
func TestBatchCallerKeepsTheTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	release := make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	sent := make(chan struct{}, 1)
	b := newBatcher(timeout, func(ctx context.Context, _ string, reqs []int) ([]int, error) {
		sent <- struct{}{}
		<-release // deaf to ctx
		return reqs, nil
	})
	defer func() {
		let()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, _, ok := b.queue("k"); !ok {
				return // the runner is gone
			}
			if time.Now().After(deadline) {
				t.Fatal("the runner did not retire")
			}
		}
	}()
	began := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := b.do(context.Background(), "k", 1)
		done <- err
	}()
	select {
	case err := <-done:
		took := time.Since(began)
		if !errors.Is(err, rushgate.ErrUnavailable) || took < timeout || took > timeout+200*time.Millisecond {
			t.Fatalf("a batch the client holds past its deadline: %v after %v, want ErrUnavailable after %v", err, took, timeout)
		}
	case <-time.After(2 * time.Second):
		let()
		<-done
		t.Fatalf("the caller waited for as long as the client held the batch, over %v", 2*time.Second)
	}
	<-sent
}
