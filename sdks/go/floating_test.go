package licensor

import (
	"testing"
	"time"
)

func TestFloatingLeaseCountsUntilItsSignedEnd(t *testing.T) {
	f := newFakeService(t)
	root := t.TempDir()
	clock := &testClock{}
	client := newTestClient(t, testConfig(t, f, floatingLicence(t), FileStore(root), clock))

	r := client.Check(ctx)
	expectState(t, r, Valid)
	if until := time.Until(r.LeaseEndsAt); until < 899*time.Second || until > 901*time.Second {
		t.Fatalf("lease ends in %v", until)
	}
	state := readStateFile(t, root)
	if answer := state["answer"].(map[string]any); answer["tag"] != "SVCR2" || answer["leaseEndsAt"] != r.Answer.LeaseEndsAt || answer["leaseEndsAt"] == "" {
		t.Fatalf("kept answer %v", answer)
	}

	f.set(func(f *fakeService) { f.httpStatus = 503 })
	for _, c := range []struct {
		after time.Duration
		state CheckState
	}{
		{2 * time.Minute, Valid},   // past max: the lease decides, not max
		{899 * time.Second, Valid}, // just before the lease ends
		{901 * time.Second, Stale}, // the lease has lapsed
	} {
		clock.move(c.after)
		if r := client.Check(ctx); r.State != c.state || r.Fresh() {
			t.Fatalf("after %v: %s (fresh %v)", c.after, r.State, r.Fresh())
		}
	}
}

func TestFloatingLeaseEndIsJudgedWithTheOffsetClampedToAMinute(t *testing.T) {
	f := newFakeService(t)
	f.set(func(f *fakeService) { f.offset = 10 * time.Minute }) // the service's clock is ten minutes ahead
	clock := &testClock{}
	client := newTestClient(t, testConfig(t, f, floatingLicence(t), MemoryStore(), clock))
	expectState(t, client.Check(ctx), Valid)
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	// The lease ends 25 minutes from now by this clock; the offset counts for one minute only.
	clock.move(23 * time.Minute)
	expectState(t, client.Check(ctx), Valid)
	clock.move(24*time.Minute + time.Second)
	expectState(t, client.Check(ctx), Stale)
}

func TestFloatingWithoutALease(t *testing.T) {
	f := newFakeService(t)
	f.set(func(f *fakeService) { f.bound = false }) // seats full: no lease, no lease end signed
	r := newTestClient(t, testConfig(t, f, floatingLicence(t), MemoryStore(), &testClock{})).Check(ctx)
	expectState(t, r, Invalid, NoSeat)
	if !r.LeaseEndsAt.IsZero() {
		t.Fatalf("lease end %v", r.LeaseEndsAt)
	}
}

func TestFloatingLeaseEndIsSigned(t *testing.T) {
	f := newFakeService(t)
	f.set(func(f *fakeService) { f.stretch = time.Hour })
	r := newTestClient(t, testConfig(t, f, floatingLicence(t), MemoryStore(), &testClock{})).Check(ctx)
	expectState(t, r, Stale)
	if r.NoAnswer == nil || r.NoAnswer.Code != CodeBadReceipt {
		t.Fatalf("no answer %+v", r.NoAnswer)
	}
}

func TestBorrowKeepsTheLeaseOffline(t *testing.T) {
	f := newFakeService(t)
	clock := &testClock{}
	client := newTestClient(t, testConfig(t, f, floatingLicence(t), MemoryStore(), clock))
	expectState(t, client.Check(ctx), Valid)
	until := time.Now().Add(48 * time.Hour).Truncate(time.Millisecond)
	r, err := client.Borrow(ctx, until)
	if err != nil {
		t.Fatal(err)
	}
	expectState(t, r, Valid)
	if f.lastBody["until"] != until.UTC().Format(timestampLayout) || !r.LeaseEndsAt.Equal(until) || f.count("borrow") != 1 {
		t.Fatalf("borrow sent %v, lease ends %v", f.lastBody, r.LeaseEndsAt)
	}
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	clock.move(24 * time.Hour)
	expectState(t, client.Check(ctx), Valid)
	clock.move(48*time.Hour + time.Second)
	expectState(t, client.Check(ctx), Stale)

	f.set(func(f *fakeService) { f.httpStatus = 403 }) // borrowing is off
	clock.move(0)
	refused, err := client.Borrow(ctx, until)
	if err != nil || refused.NoAnswer == nil || refused.NoAnswer.Status != 403 || refused.State != Valid || refused.Fresh() {
		t.Fatalf("refused borrow: %v %s %+v", err, refused.State, refused.NoAnswer)
	}
}

func TestBorrowRefusesANodeLockedLicenceUnsent(t *testing.T) {
	f := newFakeService(t)
	client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{}))
	_, err := client.Borrow(ctx, time.Now().Add(time.Hour))
	expectCode(t, err, CodeInvalidOptions)
	_, err = client.Borrow(ctx, time.Time{})
	expectCode(t, err, CodeInvalidOptions)
	if f.count("borrow") != 0 {
		t.Fatal("a refused borrow was sent")
	}
}
