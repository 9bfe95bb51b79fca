package licensor

import (
	"context"
	"math/rand"
	"time"
)

// LeaseEventKind says what KeepLease saw.
type LeaseEventKind string

// The lease events.
const (
	// LeaseHeld: a fresh verified answer grants this machine a lease (until Result.LeaseEndsAt).
	LeaseHeld LeaseEventKind = "HELD"
	// LeaseAtRisk: the renewal failed twice in a row (Result.NoAnswer says why) while the lease
	// still holds: it is lost at Result.LeaseEndsAt unless a later renewal succeeds.
	LeaseAtRisk LeaseEventKind = "AT_RISK"
	// LeaseLost: the state is no longer VALID (the lease lapsed, or an answer refused one).
	LeaseLost LeaseEventKind = "LOST"
	// TermFetched: an answer said renewed and Fetch ran: Licence is the new term (store it), or
	// Err says why it could not be fetched.
	TermFetched LeaseEventKind = "FETCHED"
	// LeaseReleased: KeepLease stopped and released the lease (Err when the release failed).
	LeaseReleased LeaseEventKind = "RELEASED"
)

// LeaseEvent is one report of KeepLease.
type LeaseEvent struct {
	Kind    LeaseEventKind
	Result  *CheckResult
	Licence string
	Err     error
}

// LeaseOptions tune KeepLease.
type LeaseOptions struct {
	// OnEvent receives every event, on KeepLease's goroutine.
	OnEvent func(LeaseEvent)
	// Every is the time between checks; default max(lse / 3, 60 s). Each wait varies by ±10%,
	// so the machines of one site do not check in step.
	Every time.Duration
}

// KeepLease keeps this machine's lease of a floating licence (v 5, DESIGN.md 13) until ctx ends:
// it checks every max(lse / 3, 60 s), retries a failed renewal at once, reports a lease at risk
// before it is lost and a lost lease when it is, and fetches the new term when an answer says
// renewed. When ctx ends it releases the lease, unless it is borrowed. To release on SIGINT and
// SIGTERM, pass signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM). It returns
// CodeInvalidOptions for a licence that is not floating, else nil once released.
func (c *Client) KeepLease(ctx context.Context, options LeaseOptions) error {
	v := c.Verify(c.Licence())
	if !v.Signed || v.Claims.V != 5 {
		return newError(CodeInvalidOptions, "KeepLease needs a floating licence (v 5)")
	}
	every := options.Every
	if every <= 0 {
		every = time.Duration(*v.Claims.Lse) * time.Second / 3
		if every < time.Minute {
			every = time.Minute
		}
	}
	emit := func(event LeaseEvent) {
		if options.OnEvent != nil {
			options.OnEvent(event)
		}
	}
	jitter := rand.New(rand.NewSource(time.Now().UnixNano()))
	lse := time.Duration(*v.Claims.Lse) * time.Second
	var last *CheckResult
	lost := false
	for {
		result := c.Check(ctx)
		if result.NoAnswer != nil && ctx.Err() == nil {
			result = c.Check(ctx)
		}
		if ctx.Err() != nil {
			break
		}
		last = result
		switch {
		case result.State != Valid || result.LeaseEndsAt.IsZero():
			if !lost {
				emit(LeaseEvent{Kind: LeaseLost, Result: result})
			}
			lost = true
		case result.Fresh():
			lost = false
			emit(LeaseEvent{Kind: LeaseHeld, Result: result})
		default:
			emit(LeaseEvent{Kind: LeaseAtRisk, Result: result})
		}
		if result.Renewed {
			licence, err := c.Fetch(ctx)
			emit(LeaseEvent{Kind: TermFetched, Result: result, Licence: licence, Err: err})
		}
		if !sleep(ctx, time.Duration(float64(every)*(0.9+0.2*jitter.Float64()))) {
			break
		}
	}
	if last == nil || lost || borrowed(last.Answer, lse) {
		return nil
	}
	// ctx has ended: the release gets a timeout of its own.
	releaseCtx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	_, err := c.Release(releaseCtx)
	emit(LeaseEvent{Kind: LeaseReleased, Result: last, Err: err})
	return nil
}

// sleep waits for d, or less when ctx ends first (then it answers false).
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// borrowed reports a lease that ends later than one lease length after its answer: a borrow,
// which only an operator frees early (DESIGN.md 13).
func borrowed(a *Answer, lse time.Duration) bool {
	checked, _ := time.Parse(time.RFC3339Nano, a.CheckedAt)
	return a.leaseEnd().Sub(checked) > lse
}
