package licensor

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

func expectState(t *testing.T, r *CheckResult, state CheckState, reasons ...Reason) {
	t.Helper()
	if r.State != state || strings.Join(reasonStrings(r.Reasons), ",") != strings.Join(reasonStrings(reasons), ",") {
		noAnswer := ""
		if r.NoAnswer != nil {
			noAnswer = string(r.NoAnswer.Code) + " " + r.NoAnswer.Message
		}
		t.Fatalf("got %s %v (no answer: %s), want %s %v", r.State, r.Reasons, noAnswer, state, reasons)
	}
}

func readStateFile(t *testing.T, root string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, testSlug, testProduct, testLidValue+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(data, &state); err != nil {
		t.Fatal(err)
	}
	return state
}

func TestGenuineAnswerIsValidAndKeptInTheSharedFileFormat(t *testing.T) {
	f := newFakeService(t)
	root := t.TempDir()
	clock := &testClock{}
	iat := dayAgo()
	client := newTestClient(t, testConfig(t, f, testLicence(t, iat, ""), FileStore(root), clock))

	result := client.Check(ctx)
	expectState(t, result, Valid)
	if !result.Fresh() || result.ClockRollback || result.NoAnswer != nil || result.Age != 0 {
		t.Fatalf("fresh %v rollback %v no answer %v age %v", result.Fresh(), result.ClockRollback, result.NoAnswer, result.Age)
	}
	if f.lastAuth != "Bearer "+testToken || f.lastBody["fingerprint"] != client.Fingerprint() || len(f.lastBody["nonce"]) != 32 || f.lastBody["license"] != client.Licence() {
		t.Fatalf("request %v with %q", f.lastBody, f.lastAuth)
	}

	state := readStateFile(t, root)
	answer, _ := state["answer"].(map[string]any)
	if state["format"] != 1.0 || state["lid"] != testLidValue || state["newestIat"] != float64(iat) || state["offsetMs"] == nil || answer == nil {
		t.Fatalf("state file %v", state)
	}
	want := map[string]any{"tag": "SVCR1", "lid": testLidValue, "status": "ACTIVE", "nonce": f.lastBody["nonce"], "boundAt": testBoundAt, "fpDigest": FpDigest(client.Fingerprint()), "leaseEndsAt": "", "renewed": false}
	for name, value := range want {
		if answer[name] != value {
			t.Errorf("answer.%s = %v, want %v", name, answer[name], value)
		}
	}
	for _, path := range []string{filepath.Join(root, testSlug, testProduct), filepath.Join(root, testSlug, testProduct, testLidValue+".json")} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); (info.IsDir() && mode != 0o700) || (!info.IsDir() && mode != 0o600) {
			t.Errorf("%s has mode %o", path, mode)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(root, testSlug, testProduct)); len(entries) != 1 {
		t.Errorf("the product directory holds %d entries, want the state file only", len(entries))
	}

	// Another client on this machine (a restart), with the service down, rests on the kept answer.
	f.server.Close()
	again := newTestClient(t, testConfig(t, f, testLicence(t, iat, ""), FileStore(root), clock)).Check(ctx)
	expectState(t, again, Valid)
	if again.Fresh() || again.NoAnswer == nil || again.NoAnswer.Code != CodeNetwork {
		t.Fatalf("fresh %v, no answer %+v", again.Fresh(), again.NoAnswer)
	}
}

func TestVerdictComesFromSignedFieldsOnly(t *testing.T) {
	cases := []struct {
		name   string
		status string
		bound  bool
		valid  any
		state  CheckState
		reason Reason
	}{
		{"active with valid flipped to false", "ACTIVE", true, false, Valid, ""},
		{"grace", "GRACE", true, true, Valid, ""},
		{"revoked with valid flipped to true", "REVOKED", true, true, Invalid, Revoked},
		{"no seat on this machine", "ACTIVE", false, true, Invalid, NoSeat},
		{"unknown licence", "", false, false, Invalid, UnknownLicence},
		{"expired", "EXPIRED", true, false, Invalid, Expired},
		{"pending", "PENDING", true, false, Invalid, NotYetValid},
		{"another status", "SUSPENDED", true, false, Invalid, NotLicensed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeService(t)
			f.set(func(f *fakeService) { f.status, f.bound, f.valid = c.status, c.bound, c.valid })
			root := t.TempDir()
			config := testConfig(t, f, testLicence(t, dayAgo(), ""), FileStore(root), &testClock{})
			result := newTestClient(t, config).Check(ctx)
			if c.reason == "" {
				expectState(t, result, c.state)
			} else {
				expectState(t, result, c.state, c.reason)
			}
			// A negative verdict stands while the service is unreachable, whatever its age.
			f.server.Close()
			later := &testClock{}
			later.move(48 * time.Hour)
			config.Clock = later.now
			kept := newTestClient(t, config).Check(ctx)
			if c.state == Invalid {
				expectState(t, kept, Invalid, c.reason)
			} else {
				expectState(t, kept, Stale)
			}
		})
	}
}

func TestNoAnswerIsNeverAVerdict(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(f *fakeService)
		code   ErrorCode
		status int
	}{
		{"server error", func(f *fakeService) { f.httpStatus = 500 }, CodeHTTPStatus, 500},
		{"forged refusal", func(f *fakeService) { f.httpStatus = 403 }, CodeHTTPStatus, 403},
		{"receipt from another key", func(f *fakeService) { f.forge = true }, CodeBadReceipt, 0},
		{"revoked but forged", func(f *fakeService) { f.forge, f.status = true, "REVOKED" }, CodeBadReceipt, 0},
		{"not JSON", func(f *fakeService) { f.body = "<html>" }, CodeBadResponse, 0},
		{"duplicate keys", func(f *fakeService) { f.body = `{"status":"ACTIVE","status":"REVOKED"}` }, CodeBadResponse, 0},
		{"no receipt", func(f *fakeService) { f.body = `{"status":"ACTIVE","checkedAt":"2026-11-22T07:00:00.000Z"}` }, CodeBadResponse, 0},
		{"too slow", func(f *fakeService) { f.delay = 600 * time.Millisecond }, CodeTimeout, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeService(t)
			config := testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{})
			config.Timeout = 300 * time.Millisecond
			client := newTestClient(t, config)
			f.set(c.break_)
			none := client.Check(ctx)
			expectState(t, none, Stale)
			if none.NoAnswer == nil || none.NoAnswer.Code != c.code || none.NoAnswer.Status != c.status || none.Answer != nil {
				t.Fatalf("no answer %+v, want %s %d", none.NoAnswer, c.code, c.status)
			}

			f.set((*fakeService).behave)
			expectState(t, client.Check(ctx), Valid)
			f.set(c.break_)
			kept := client.Check(ctx)
			expectState(t, kept, Valid)
			if kept.Fresh() || kept.NoAnswer == nil || kept.NoAnswer.Code != c.code {
				t.Fatalf("fresh %v, no answer %+v", kept.Fresh(), kept.NoAnswer)
			}
		})
	}
}

func TestKeptAnswerTurnsStaleAfterMax(t *testing.T) {
	f := newFakeService(t)
	clock := &testClock{}
	client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), clock))
	expectState(t, client.Check(ctx), Valid)
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	clock.move(3599 * time.Second)
	expectState(t, client.Check(ctx), Valid)
	clock.move(3601 * time.Second)
	result := client.Check(ctx)
	expectState(t, result, Stale)
	if result.Age < 3600*time.Second || result.ClockRollback {
		t.Fatalf("age %v rollback %v", result.Age, result.ClockRollback)
	}
}

func TestLicenceWithoutMaxIsValidOnlyWithAFreshAnswer(t *testing.T) {
	f := newFakeService(t)
	key, _ := ed25519Signer(t)
	licence := signPayload(key, `{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","typ":"ONLINE","iat":1763884800,"grace":0,"mm":1}`)
	clock := &testClock{}
	client := newTestClient(t, testConfig(t, f, licence, MemoryStore(), clock))
	expectState(t, client.Check(ctx), Valid)
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	clock.move(time.Second)
	expectState(t, client.Check(ctx), Stale)
}

func TestClockRollbackAndSkew(t *testing.T) {
	t.Run("a clock wound back before the last answer makes it stale", func(t *testing.T) {
		f := newFakeService(t)
		clock := &testClock{}
		client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), clock))
		expectState(t, client.Check(ctx), Valid)
		f.set(func(f *fakeService) { f.httpStatus = 503 })
		clock.move(-30 * time.Second) // latency, not a rollback
		if r := client.Check(ctx); r.ClockRollback || r.State != Valid {
			t.Fatalf("30 s back: %s rollback %v", r.State, r.ClockRollback)
		}
		clock.move(-2 * time.Minute)
		r := client.Check(ctx)
		expectState(t, r, Stale)
		if !r.ClockRollback {
			t.Fatal("no rollback reported")
		}
		// A fresh answer proves itself by its nonce, even with the rollback reported.
		f.set(func(f *fakeService) { f.httpStatus = 0 })
		r = client.Check(ctx)
		expectState(t, r, Valid)
		if !r.ClockRollback || !r.Fresh() {
			t.Fatalf("rollback %v fresh %v", r.ClockRollback, r.Fresh())
		}
	})
	t.Run("a clock hours off the service's is not a rollback", func(t *testing.T) {
		for _, offset := range []time.Duration{3 * time.Hour, -3 * time.Hour} {
			f := newFakeService(t)
			f.set(func(f *fakeService) { f.offset = offset })
			root := t.TempDir()
			config := testConfig(t, f, testLicence(t, dayAgo(), ""), FileStore(root), &testClock{})
			expectState(t, newTestClient(t, config).Check(ctx), Valid)
			f.set(func(f *fakeService) { f.httpStatus = 503 })
			r := newTestClient(t, config).Check(ctx) // the offset is remembered on disk
			expectState(t, r, Valid)
			if r.ClockRollback || r.Age < 0 || r.Age > 5*time.Second {
				t.Fatalf("offset %v: rollback %v age %v", offset, r.ClockRollback, r.Age)
			}
		}
	})
}

func TestEditedStateCountsAsNoAnswer(t *testing.T) {
	f := newFakeService(t)
	root := t.TempDir()
	iat := dayAgo()
	config := testConfig(t, f, testLicence(t, iat, ""), FileStore(root), &testClock{})
	f.set(func(f *fakeService) { f.status = "REVOKED" })
	expectState(t, newTestClient(t, config).Check(ctx), Invalid, Revoked)
	file := filepath.Join(root, testSlug, testProduct, testLidValue+".json")
	data, _ := os.ReadFile(file)
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), `"REVOKED"`, `"ACTIVE"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	expectState(t, newTestClient(t, config).Check(ctx), Stale)

	// Another machine's answer (another fingerprint) is worth nothing here either.
	f.set(func(f *fakeService) { f.httpStatus, f.status = 0, "ACTIVE" })
	expectState(t, newTestClient(t, config).Check(ctx), Valid)
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	other := config
	other.Fingerprint = vectors(t).Fingerprints[3].Fingerprint
	expectState(t, newTestClient(t, other).Check(ctx), Stale)
}

func TestOlderTermIsRefusedAndNeverSent(t *testing.T) {
	f := newFakeService(t)
	root := t.TempDir()
	newer := dayAgo()
	expectState(t, newTestClient(t, testConfig(t, f, testLicence(t, newer, ""), FileStore(root), &testClock{})).Check(ctx), Valid)
	sent := f.count("check")
	old := newTestClient(t, testConfig(t, f, testLicence(t, newer-86400, ""), FileStore(root), &testClock{}))
	r := old.Check(ctx)
	expectState(t, r, Invalid, OlderTerm)
	if f.count("check") != sent || r.NoAnswer != nil {
		t.Fatal("an older term was sent")
	}
	// Clearing the cache and releasing never forget the newest term.
	if err := old.ClearCache(); err != nil {
		t.Fatal(err)
	}
	if state := readStateFile(t, root); state["answer"] != nil || state["newestIat"] != float64(newer) || state["offsetMs"] == nil {
		t.Fatalf("after ClearCache: %v", state)
	}
	expectState(t, old.Check(ctx), Invalid, OlderTerm)
}

func TestOfflineRefusalsAreNeverSent(t *testing.T) {
	key, _ := ed25519Signer(t)
	expired := signPayload(key, `{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","typ":"ONLINE","iat":1600000000,"exp":1700000000,"grace":1,"mm":1,"max":60}`)
	cases := []struct {
		name    string
		licence string
		product string
		reasons []Reason
	}{
		{"expired", expired, testProduct, []Reason{Expired}},
		{"another product", "", "acme-cam", []Reason{WrongProduct}},
		{"another machine", "", testProduct, []Reason{FingerprintMismatch}},
		{"not a licence", "abc.def", testProduct, []Reason{Malformed}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeService(t)
			licence := c.licence
			if licence == "" {
				licence = testLicence(t, dayAgo(), "")
				if c.reasons[0] == FingerprintMismatch {
					licence = testLicence(t, dayAgo(), `,"fp":"`+vectors(t).Fingerprints[3].Fingerprint+`"`)
				}
			}
			config := testConfig(t, f, licence, MemoryStore(), &testClock{})
			config.ProductKey = c.product
			r := newTestClient(t, config).Check(ctx)
			expectState(t, r, Invalid, c.reasons...)
			if f.count("check") != 0 {
				t.Fatal("a licence refused offline was sent")
			}
		})
	}
}

func TestFetch(t *testing.T) {
	iat := dayAgo()
	renewedTerm := func(t *testing.T) string { return testLicence(t, iat+3600, `,"tier":"gold"`) }
	key, _ := ed25519Signer(t)
	cases := []struct {
		name    string
		fetched func(t *testing.T) string
		status  int
		code    ErrorCode
	}{
		{"the renewed term", renewedTerm, 0, ""},
		{"an older term", func(t *testing.T) string { return testLicence(t, iat-3600, "") }, 0, CodeOlderTerm},
		{"another licence", func(t *testing.T) string {
			return signPayload(key, `{"v":3,"lid":"l-2","prd":"acme-cad","org":"acme","typ":"ONLINE","iat":1763884800,"grace":0,"mm":1}`)
		}, 0, CodeLidMismatch},
		{"another product's licence", func(t *testing.T) string {
			return signPayload(key, `{"v":3,"lid":"l-1","prd":"acme-cam","org":"acme","typ":"ONLINE","iat":1963884800,"grace":0,"mm":1}`)
		}, 0, CodeBadLicence},
		{"a forged string", func(t *testing.T) string { return strings.Replace(renewedTerm(t), ".", ".A", 1) }, 0, CodeBadLicence},
		{"fetch disabled", renewedTerm, 404, CodeHTTPStatus},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeService(t)
			f.set(func(f *fakeService) { f.renewed = true })
			root := t.TempDir()
			client := newTestClient(t, testConfig(t, f, testLicence(t, iat, ""), FileStore(root), &testClock{}))
			r := client.Check(ctx)
			expectState(t, r, Valid)
			if !r.Renewed || f.count("fetch") != 0 {
				t.Fatalf("renewed %v, fetched %d times by Check", r.Renewed, f.count("fetch"))
			}
			next := c.fetched(t)
			f.set(func(f *fakeService) { f.fetched, f.httpStatus = next, c.status })
			got, err := client.Fetch(ctx)
			if c.code != "" {
				var e *Error
				if !errors.As(err, &e) || e.Code != c.code || (c.status != 0 && e.Status != c.status) || client.Licence() == next {
					t.Fatalf("want %s, got %v", c.code, err)
				}
				return
			}
			if err != nil || got != next || client.Licence() != next {
				t.Fatalf("fetch: %v", err)
			}
			if state := readStateFile(t, root); state["newestIat"] != float64(iat+3600) {
				t.Fatalf("newestIat %v", state["newestIat"])
			}
			f.set(func(f *fakeService) { f.renewed = false })
			if r := client.Check(ctx); r.State != Valid || r.Renewed || lidOf(f.lastBody["license"]) != testLidValue || f.lastBody["license"] != next {
				t.Fatalf("the next check did not use the new term: %s", r.State)
			}
		})
	}
}

func TestRelease(t *testing.T) {
	cases := []struct {
		name     string
		released map[string]any
		status   int
		want     ReleaseResult
		code     ErrorCode
	}{
		{"released", map[string]any{"released": true, "releasedAt": "2026-11-22T07:00:00.000Z"}, 0, ReleaseResult{Released: true, ReleasedAt: "2026-11-22T07:00:00.000Z"}, ""},
		{"no seat", map[string]any{"released": false, "reason": "NO_SEAT"}, 0, ReleaseResult{Reason: "NO_SEAT"}, ""},
		{"at issue", map[string]any{"released": false, "reason": "AT_ISSUE"}, 0, ReleaseResult{Reason: "AT_ISSUE"}, ""},
		{"limit reached", nil, 403, ReleaseResult{}, CodeHTTPStatus},
		{"an answer to another request", map[string]any{"released": true, "nonce": "replayed-nonce-0123456789"}, 0, ReleaseResult{}, CodeBadResponse},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeService(t)
			root := t.TempDir()
			client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), FileStore(root), &testClock{}))
			expectState(t, client.Check(ctx), Valid)
			f.set(func(f *fakeService) { f.released, f.httpStatus = c.released, c.status })
			got, err := client.Release(ctx)
			if c.code != "" {
				if !errors.Is(err, sentinels[c.code]) {
					t.Fatalf("want %s, got %v", c.code, err)
				}
				return
			}
			if err != nil || got != c.want || len(f.lastBody["nonce"]) != 32 {
				t.Fatalf("got %+v, %v", got, err)
			}
			state := readStateFile(t, root)
			if (state["answer"] == nil) != got.Released || state["newestIat"] == nil || state["offsetMs"] == nil {
				t.Fatalf("state after release: %v", state)
			}
		})
	}
}

func TestNewClientRefusesBadConfigurations(t *testing.T) {
	f := newFakeService(t)
	key, _ := ed25519Signer(t)
	offline := signPayload(key, `{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","typ":"OFFLINE","iat":1763884800,"grace":0,"mm":1}`)
	cases := []struct {
		name   string
		change func(c *Config)
		want   error
	}{
		{"no base URL", func(c *Config) { c.BaseURL = "" }, ErrInvalidOptions},
		{"no licence", func(c *Config) { c.Licence = "" }, ErrInvalidOptions},
		{"a token for another check id", func(c *Config) { c.CheckToken = "svcc_other_secret" }, ErrInvalidOptions},
		{"a machine label too long", func(c *Config) { c.MachineLabel = strings.Repeat("x", 65) }, ErrInvalidOptions},
		{"no key", func(c *Config) { c.PublicKeys = nil }, ErrInvalidKey},
		{"an unreadable key", func(c *Config) { c.PublicKeys = []string{"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"} }, ErrInvalidKey},
		{"an OFFLINE licence", func(c *Config) { c.Licence = offline }, ErrNotCheckable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			config := testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{})
			c.change(&config)
			if _, err := NewClient(config); !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
		})
	}
}

func TestMachineLabelIsSent(t *testing.T) {
	f := newFakeService(t)
	config := testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{})
	config.MachineLabel = "Anna's laptop"
	expectState(t, newTestClient(t, config).Check(ctx), Valid)
	if f.lastBody["machineLabel"] != "Anna's laptop" {
		t.Fatalf("body %v", f.lastBody)
	}
}

func TestUnreachableServiceIsNetwork(t *testing.T) {
	f := newFakeService(t)
	f.server.Close()
	r := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{})).Check(ctx)
	expectState(t, r, Stale)
	if r.NoAnswer == nil || r.NoAnswer.Code != CodeNetwork {
		t.Fatalf("no answer %+v", r.NoAnswer)
	}
	_ = http.StatusOK
}
