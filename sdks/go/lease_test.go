package licensor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// leaseRun runs KeepLease in the background and collects its events.
type leaseRun struct {
	mu     sync.Mutex
	events []LeaseEvent
	cancel context.CancelFunc
	done   chan error
}

func startLease(t *testing.T, client *Client) *leaseRun {
	ctx, cancel := context.WithCancel(context.Background())
	run := &leaseRun{cancel: cancel, done: make(chan error, 1)}
	go func() {
		run.done <- client.KeepLease(ctx, LeaseOptions{Every: 20 * time.Millisecond, OnEvent: func(e LeaseEvent) {
			run.mu.Lock()
			defer run.mu.Unlock()
			run.events = append(run.events, e)
		}})
	}()
	t.Cleanup(cancel)
	return run
}

// waitFor waits until an event of this kind arrived (after skipping n of them).
func (r *leaseRun) waitFor(t *testing.T, kind LeaseEventKind) LeaseEvent {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, e := range r.events {
			if e.Kind == kind {
				r.mu.Unlock()
				return e
			}
		}
		r.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s event: %v", kind, r.kinds())
	return LeaseEvent{}
}

func (r *leaseRun) kinds() []LeaseEventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var kinds []LeaseEventKind
	for _, e := range r.events {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

func (r *leaseRun) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("KeepLease did not return")
	}
}

func TestKeepLeaseRenewsAndReleasesOnStop(t *testing.T) {
	f := newFakeService(t)
	f.set(func(f *fakeService) {
		f.released = map[string]any{"released": true, "releasedAt": "2026-11-22T07:00:00.000Z"}
	})
	run := startLease(t, newTestClient(t, testConfig(t, f, floatingLicence(t), MemoryStore(), &testClock{})))
	run.waitFor(t, LeaseHeld)
	for f.count("check") < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	run.stop(t)
	if e := run.waitFor(t, LeaseReleased); e.Err != nil || f.count("release") != 1 {
		t.Fatalf("release: %v, %d requests", e.Err, f.count("release"))
	}
}

func TestKeepLeaseReportsALeaseAtRiskThenLost(t *testing.T) {
	f := newFakeService(t)
	clock := &testClock{}
	run := startLease(t, newTestClient(t, testConfig(t, f, floatingLicence(t), MemoryStore(), clock)))
	run.waitFor(t, LeaseHeld)
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	risk := run.waitFor(t, LeaseAtRisk)
	if risk.Result.NoAnswer == nil || risk.Result.LeaseEndsAt.IsZero() {
		t.Fatalf("at risk: %+v", risk.Result)
	}
	clock.move(901 * time.Second)
	run.waitFor(t, LeaseLost)
	run.stop(t)
	if f.count("release") != 0 {
		t.Fatal("a lost lease was released")
	}
}

func TestKeepLeaseNeverReleasesABorrowedLease(t *testing.T) {
	f := newFakeService(t)
	client := newTestClient(t, testConfig(t, f, floatingLicence(t), MemoryStore(), &testClock{}))
	expectState(t, client.Check(ctx), Valid)
	borrowed, err := client.Borrow(ctx, time.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	expectState(t, borrowed, Valid)
	f.set(func(f *fakeService) { f.httpStatus = 503 }) // the laptop is offline
	run := startLease(t, client)
	run.waitFor(t, LeaseAtRisk)
	run.stop(t)
	if f.count("release") != 0 {
		t.Fatal("a borrowed lease was released")
	}
}

func TestKeepLeaseFetchesARenewedTerm(t *testing.T) {
	f := newFakeService(t)
	next := floatingLicence(t)
	f.set(func(f *fakeService) { f.renewed, f.fetched = true, next })
	client := newTestClient(t, testConfig(t, f, floatingLicence(t), MemoryStore(), &testClock{}))
	run := startLease(t, client)
	if e := run.waitFor(t, TermFetched); e.Err != nil || e.Licence != next {
		t.Fatalf("fetched %q: %v", e.Licence, e.Err)
	}
	run.stop(t)
}

func TestKeepLeaseNeedsAFloatingLicence(t *testing.T) {
	f := newFakeService(t)
	client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{}))
	if err := client.KeepLease(ctx, LeaseOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("want invalid options, got %v", err)
	}
}
