package licensor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestUsageReceiptMessageIsDesignsExample(t *testing.T) {
	limit, overage, remaining := int64(1_000_000_000_000), int64(0), int64(999_999_999_997)
	signed := &verifiedUsage{lid: "L", status: "ACTIVE", boundAt: "2026-11-20T09:00:00.000Z",
		events: []UsageEventResult{{ID: "e-1", Result: "ACCEPTED"}},
		meters: []UsageBalance{{Key: "exports", Used: 3, Limit: &limit, Overage: &overage, Remaining: &remaining, ResetsAt: "2026-12-01T00:00:00.000Z"}}}
	message, ok := signed.message("N", "2026-11-22T07:00:00.000Z", "D")
	want := "SVCU1␟L␟ACTIVE␟N␟2026-11-22T07:00:00.000Z␟2026-11-20T09:00:00.000Z␟D␟1␟e-1␟ACCEPTED␟1␟exports␟3␟1000000000000␟0␟999999999997␟2026-12-01T00:00:00.000Z"
	if got := strings.ReplaceAll(string(message), "\x1f", "␟"); !ok || got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	// Null is empty, so a last empty field ends the text in 0x1F.
	unlimited := &verifiedUsage{lid: "L", meters: []UsageBalance{{Key: "seats"}}}
	message, _ = unlimited.message("N", "T", "D")
	if string(message) != "SVCU1\x1fL\x1f\x1fN\x1fT\x1f\x1fD\x1f0\x1f1\x1fseats\x1f0\x1f\x1f\x1f\x1f" {
		t.Fatalf("message %q", message)
	}
	if _, ok := (&verifiedUsage{lid: "L\x1f"}).message("N", "T", "D"); ok {
		t.Fatal("a separator inside a field was signed")
	}
}

// usageClient is a client with a file store in its own directory, against the fake.
func usageClient(t *testing.T, f *fakeService, root string) (*Client, string) {
	client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), FileStore(root), &testClock{}))
	return client, filepath.Join(root, "usage", testLidValue)
}

func queuedFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	names := []string{}
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	return names
}

func record(t *testing.T, client *Client, meter string, amount int64) *UsageReport {
	t.Helper()
	report, err := client.RecordUsage(ctx, meter, amount)
	if err != nil {
		t.Fatal(err)
	}
	return report
}

func TestRecordUsageQueuesBeforeSendingAndRemovesOnAVerifiedReceipt(t *testing.T) {
	f := newFakeService(t)
	client, dir := usageClient(t, f, t.TempDir())
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	first := record(t, client, "exports", 3)
	if first.Licensed != nil || first.Meters != nil || first.Fresh != nil || first.NoAnswer == nil || first.NoAnswer.Status != 503 {
		t.Fatalf("without an answer: %+v", first)
	}
	if len(first.Events) != 1 || first.Events[0].Result != UsageQueued || len(first.Events[0].ID) != 22 {
		t.Fatalf("events %+v", first.Events)
	}
	id := first.Events[0].ID
	data, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(data, &stored); err != nil || len(stored) != 4 || stored["id"] != id || stored["meter"] != "exports" || stored["amount"] != 3.0 {
		t.Fatalf("queued file %s", data)
	}
	if at, err := time.Parse(time.RFC3339Nano, stored["at"].(string)); err != nil || time.Since(at) > time.Minute || !eventAt.MatchString(stored["at"].(string)) {
		t.Fatalf("at %v", stored["at"])
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, id+".json"): 0o600} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != want {
			t.Fatalf("%s: %v %v", path, info, err)
		}
	}

	// A restart: another client on the same directory sends what the first queued, then its own.
	f.set(func(f *fakeService) { f.httpStatus = 0 })
	again, _ := usageClient(t, f, filepath.Dir(filepath.Dir(dir)))
	report := record(t, again, "exports", 2)
	if sent := f.usageSent[len(f.usageSent)-1]; len(sent) != 2 || sent[0].ID != id || sent[0].At != stored["at"] || sent[1].Amount != 2 {
		t.Fatalf("sent %+v", sent)
	}
	if report.NoAnswer != nil || report.Licensed == nil || !*report.Licensed || report.Reason != "" || report.Fresh == nil || !*report.Fresh || report.Pending != 0 {
		t.Fatalf("report %+v", report)
	}
	if len(report.Events) != 2 || report.Events[0].Result != "ACCEPTED" || report.Events[1].Result != "ACCEPTED" {
		t.Fatalf("events %+v", report.Events)
	}
	m := report.Meters
	if len(m) != 1 || m[0].Key != "exports" || m[0].Used != 5 || *m[0].Limit != 1000 || *m[0].Overage != 0 || *m[0].Remaining != 995 || m[0].ResetsAt != "2026-12-01T00:00:00.000Z" || m[0].Pending != 0 {
		t.Fatalf("meters %+v", m)
	}
	if files := queuedFiles(t, dir); len(files) != 0 {
		t.Fatalf("left queued: %v", files)
	}
	// usage with nothing queued reads the balances with events [].
	if report, err := again.Usage(ctx); err != nil || len(report.Events) != 0 || len(f.usageSent[len(f.usageSent)-1]) != 0 || report.Meters[0].Used != 5 {
		t.Fatalf("usage %+v %v", report, err)
	}
}

func TestUsageWithoutAVerifiedReceiptKeepsEverything(t *testing.T) {
	f := newFakeService(t)
	client, dir := usageClient(t, f, t.TempDir())
	record(t, client, "exports", 1)
	f.set(func(f *fakeService) { f.forge = true })
	report := record(t, client, "exports", 2)
	if report.NoAnswer == nil || report.NoAnswer.Code != CodeBadReceipt || *report.Fresh || report.Meters[0].Used != 1 || report.Meters[0].Pending != 2 {
		t.Fatalf("forged: %+v", report)
	}
	f.set(func(f *fakeService) { f.forge, f.body = false, `{"events":[],"meters":[],"checkedAt":"x"}` })
	if report := record(t, client, "exports", 1); report.NoAnswer == nil || report.NoAnswer.Code != CodeBadResponse {
		t.Fatalf("no receipt: %+v", report.NoAnswer)
	}
	if files := queuedFiles(t, dir); len(files) != 2 {
		t.Fatalf("queued %v", files)
	}
}

func TestRecordUsageRefusesWhatTheServiceWould(t *testing.T) {
	f := newFakeService(t)
	client, dir := usageClient(t, f, t.TempDir())
	for _, c := range []struct {
		meter  string
		amount int64
	}{{"1exports", 1}, {"", 1}, {"exports", 0}, {"exports", -1}, {"exports", MaxUsageAmount + 1}, {strings.Repeat("a", 65), 1}} {
		if _, err := client.RecordUsage(ctx, c.meter, c.amount); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%q %d: %v", c.meter, c.amount, err)
		}
	}
	memory := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{}))
	if _, err := memory.RecordUsage(ctx, "exports", 1); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("memory store: %v", err)
	}
	if f.count("usage") != 0 || len(queuedFiles(t, dir)) != 0 {
		t.Fatal("something was sent or queued")
	}
	os.MkdirAll(dir, 0o700)
	for i := 0; i < UsageQueueLimit; i++ {
		id := fmt.Sprintf("event-%04d", i)
		os.WriteFile(filepath.Join(dir, id+".json"), []byte(`{"id":"`+id+`","meter":"exports","amount":1,"at":"2026-11-22T07:00:00.000Z"}`), 0o600)
	}
	if _, err := client.RecordUsage(ctx, "exports", 1); !errors.Is(err, ErrQueueFull) || len(queuedFiles(t, dir)) != UsageQueueLimit {
		t.Fatalf("full queue: %v", err)
	}
}

func TestUsageSendsOldestFirstInBatchesOf100(t *testing.T) {
	f := newFakeService(t)
	client, dir := usageClient(t, f, t.TempDir())
	os.MkdirAll(dir, 0o700)
	base := time.Now().Add(-time.Hour)
	for i := 0; i < 150; i++ {
		id := fmt.Sprintf("e%03d", 149-i)
		at := base.Add(-time.Duration(i/2) * time.Second).UTC().Format(timestampLayout)
		os.WriteFile(filepath.Join(dir, id+".json"), []byte(`{"id":"`+id+`","meter":"exports","amount":1,"at":"`+at+`"}`), 0o600)
	}
	report := record(t, client, "exports", 1)
	if len(f.usageSent) != 2 || len(f.usageSent[0]) != 100 || len(f.usageSent[1]) != 51 {
		t.Fatalf("batches %d", len(f.usageSent))
	}
	all := append(append([]UsageEvent{}, f.usageSent[0]...), f.usageSent[1]...)
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.At > b.At || (a.At == b.At && a.ID > b.ID) {
			t.Fatalf("out of order at %d: %+v then %+v", i, a, b)
		}
	}
	if all[0].ID != "e000" || report.Meters[0].Used != 151 || len(queuedFiles(t, dir)) != 0 {
		t.Fatalf("first %+v, used %d", all[0], report.Meters[0].Used)
	}
}

func TestNotLicensedEventsStayAndOtherResultsAreFinal(t *testing.T) {
	f := newFakeService(t)
	client, dir := usageClient(t, f, t.TempDir())
	f.set(func(f *fakeService) {
		f.status = "EXPIRED"
		f.usageResult = func(UsageEvent) string { return "NOT_LICENSED" }
	})
	report := record(t, client, "exports", 4)
	if *report.Licensed || report.Reason != Expired || report.Events[0].Result != "NOT_LICENSED" || report.Meters[0].Pending != 4 || len(queuedFiles(t, dir)) != 1 {
		t.Fatalf("not licensed: %+v", report)
	}
	results := []string{"ACCEPTED", "LIMIT_REACHED", "UNKNOWN_METER", "TOO_OLD", "EVENT_LIMIT", "ID_REUSED"}
	f.set(func(f *fakeService) {
		f.behave()
		f.usageResult = func(UsageEvent) string { r := results[0]; results = results[1:]; return r }
	})
	// The kept NOT_LICENSED event and five new ones, each answered with the next final result.
	for i := 0; i < 5; i++ {
		record(t, client, "exports", 1)
	}
	if files := queuedFiles(t, dir); len(files) != 0 {
		t.Fatalf("left %v", files)
	}
}

func TestNothingIsSentBeforeRetryAfter(t *testing.T) {
	f := newFakeService(t)
	clock := &testClock{}
	client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), FileStore(t.TempDir()), clock))
	f.set(func(f *fakeService) { f.httpStatus, f.retryAfter = 429, "30" })
	if report := record(t, client, "exports", 1); report.NoAnswer.Status != 429 {
		t.Fatalf("%+v", report.NoAnswer)
	}
	f.set(func(f *fakeService) { f.httpStatus = 0 })
	clock.move(20 * time.Second)
	if report := record(t, client, "exports", 1); report.NoAnswer == nil || report.NoAnswer.Status != 429 || f.count("usage") != 1 {
		t.Fatalf("sent before Retry-After: %+v", report.NoAnswer)
	}
	clock.move(31 * time.Second)
	if report, _ := client.Usage(ctx); report.NoAnswer != nil || report.Meters[0].Used != 2 {
		t.Fatalf("after Retry-After: %+v", report)
	}
}

func TestOtherLicencesEventsArePendingAndNeverSent(t *testing.T) {
	f := newFakeService(t)
	root := t.TempDir()
	other := filepath.Join(root, "usage", "trial-lid")
	os.MkdirAll(other, 0o700)
	for _, id := range []string{"t1", "t2"} {
		os.WriteFile(filepath.Join(other, id+".json"), []byte(`{"id":"`+id+`","meter":"exports","amount":1,"at":"2026-11-22T07:00:00.000Z"}`), 0o600)
	}
	client, _ := usageClient(t, f, root)
	report := record(t, client, "exports", 1)
	if report.Pending != 2 || len(f.usageSent[0]) != 1 || len(queuedFiles(t, other)) != 2 {
		t.Fatalf("pending %d, sent %+v", report.Pending, f.usageSent)
	}
}

func TestLicenceMetersReadTheMtrClaim(t *testing.T) {
	f := newFakeService(t)
	licence := testLicence(t, dayAgo(), `,"mtr":[{"k":"exports","p":"MONTH","l":1000,"o":0},{"k":"renders","p":"NONE","l":null,"o":null}]`)
	client := newTestClient(t, testConfig(t, f, licence, MemoryStore(), &testClock{}))
	meters := client.LicenceMeters()
	if len(meters) != 2 || meters[0].Key != "exports" || meters[0].Period != "MONTH" || *meters[0].Limit != 1000 || *meters[0].Overage != 0 ||
		meters[1].Key != "renders" || meters[1].Limit != nil || meters[1].Overage != nil {
		t.Fatalf("meters %+v", meters)
	}
	if plain, _ := usageClient(t, f, t.TempDir()); len(plain.LicenceMeters()) != 0 {
		t.Fatal("a licence without mtr has meters")
	}
}

func TestTheMtrClaimIsNoProductParameter(t *testing.T) {
	f := newFakeService(t)
	client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{}))
	metered := client.Verify(testLicence(t, dayAgo(), `,"mtr":[{"k":"exports","p":"MONTH","l":1000,"o":0}],"tier":"pro"`))
	if !metered.Valid || len(metered.Claims.Params) != 1 || metered.Claims.Params[0].Name != "tier" || len(metered.Claims.Mtr) != 1 {
		t.Fatalf("claims %+v", metered.Claims)
	}
	if data, _ := metered.Claims.MarshalJSON(); !strings.Contains(string(data), `"max":3600,"mtr":[{"k":"exports","p":"MONTH","l":1000,"o":0}],"tier":"pro"}`) {
		t.Fatalf("payload %s", data)
	}
	// A product's parameter that kept the name from before meters existed stays a parameter.
	kept := client.Verify(testLicence(t, dayAgo(), `,"mtr":"legacy"`))
	if value, ok := kept.Claims.Param("mtr"); !kept.Valid || !ok || value != "legacy" || kept.Claims.Mtr != nil {
		t.Fatalf("claims %+v", kept.Claims)
	}
}
