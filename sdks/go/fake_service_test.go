package licensor

import (
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeService answers check, fetch and release as the service does, signing receipts with the
// Ed25519 vector key; its fields say how it misbehaves.
type fakeService struct {
	key    ed25519.PrivateKey
	server *httptest.Server

	mu         sync.Mutex
	status     string // the signed status
	bound      bool
	valid      any // the unsigned valid field
	renewed    bool
	offset     time.Duration // the service's clock minus the real one
	httpStatus int           // answer this instead of 200
	body       string        // answer this body instead
	forge      bool          // sign receipts with another key
	stretch    time.Duration // move leaseEndsAt after signing
	delay      time.Duration
	fetched    string
	released   map[string]any
	requests   map[string]int
	lastBody   map[string]string
	lastAuth   string
	// Usage (DESIGN.md 19): the events of each usage request, what each counts as, the signed total.
	usageSent   [][]UsageEvent
	usageResult func(UsageEvent) string
	used        int64
	retryAfter  string // sent with a 429
}

const (
	testSlug     = "acme"
	testProduct  = "acme-cad"
	testCheckID  = "chk0123456789ab"
	testToken    = "svcc_" + testCheckID + "_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	testBoundAt  = "2026-01-05T09:30:12.345Z"
	testLidValue = "l-1"
)

func newFakeService(t *testing.T) *fakeService {
	key, _ := ed25519Signer(t)
	f := &fakeService{key: key, requests: map[string]int{}}
	f.behave()
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.server.Close)
	return f
}

// behave makes the fake answer as the genuine service does for a licensed machine.
func (f *fakeService) behave() {
	f.status, f.bound, f.valid, f.renewed, f.offset = "ACTIVE", true, true, false, 0
	f.httpStatus, f.body, f.forge, f.delay, f.stretch = 0, "", false, 0, 0
}

func (f *fakeService) set(change func(f *fakeService)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeService) count(endpoint string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[endpoint]
}

func (f *fakeService) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prefix := "/o/" + testSlug + "/api/public/license/" + testCheckID + "/"
	endpoint := strings.TrimPrefix(r.URL.Path, prefix)
	f.requests[endpoint]++
	f.lastAuth = r.Header.Get("Authorization")
	f.lastBody = map[string]string{}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &f.lastBody) // the usage events are read below; other fields are strings
	if endpoint == "usage" {
		var usage struct{ Events []UsageEvent }
		_ = json.Unmarshal(raw, &usage)
		f.usageSent = append(f.usageSent, usage.Events)
	}
	if delay := f.delay; delay > 0 {
		f.mu.Unlock()
		time.Sleep(delay)
		f.mu.Lock()
	}
	if f.httpStatus != 0 {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.WriteHeader(f.httpStatus)
		w.Write([]byte(`{"error":"refused"}`))
		return
	}
	if f.body != "" {
		w.Write([]byte(f.body))
		return
	}
	var answer map[string]any
	switch endpoint {
	case "check", "borrow":
		answer = f.checkAnswer()
	case "fetch":
		answer = map[string]any{"license": f.fetched}
	case "usage":
		answer = f.usageAnswer(f.usageSent[len(f.usageSent)-1])
	case "release":
		answer = map[string]any{"lid": testLidValue, "nonce": f.lastBody["nonce"]}
		for k, v := range f.released {
			answer[k] = v
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

func (f *fakeService) checkAnswer() map[string]any {
	now := time.Now().Add(f.offset)
	checkedAt := now.UTC().Format(timestampLayout)
	claims := claimsOf(f.lastBody["license"])
	fields := ReceiptFields{Lid: claims.Lid, Status: f.status, Nonce: f.lastBody["nonce"], CheckedAt: checkedAt, FpDigest: FpDigest(f.lastBody["fingerprint"])}
	if f.bound {
		fields.BoundAt = testBoundAt
	}
	tag := SVCR1
	if claims.V == 5 {
		tag = SVCR2
		if fields.BoundAt != "" && (f.status == "ACTIVE" || f.status == "GRACE") {
			fields.LeaseEndsAt = f.lastBody["until"]
			if fields.LeaseEndsAt == "" {
				fields.LeaseEndsAt = now.Add(time.Duration(claims.Lse) * time.Second).UTC().Format(timestampLayout)
			}
		}
	}
	message, _ := receiptMessage(tag, fields)
	key := f.key
	if f.forge {
		key = ed25519.NewKeyFromSeed(make([]byte, 32))
	}
	answer := map[string]any{
		"valid": f.valid, "lid": fields.Lid, "nonce": fields.Nonce, "checkedAt": checkedAt, "serverTime": checkedAt,
		"receipt": encodeB64U(ed25519.Sign(key, message)),
	}
	if fields.Status != "" {
		answer["status"] = fields.Status
	}
	if fields.BoundAt != "" {
		answer["boundAt"] = fields.BoundAt
	}
	if f.renewed {
		answer["renewed"] = true
	}
	if fields.LeaseEndsAt != "" {
		end, _ := time.Parse(time.RFC3339, fields.LeaseEndsAt)
		answer["leaseEndsAt"] = end.Add(f.stretch).UTC().Format(timestampLayout)
	}
	return answer
}

// usageAnswer counts the events (ACCEPTED unless usageResult says otherwise) against the meter
// "exports" (limit 1000) and signs the answer as DESIGN.md 19 says (SVCU1).
func (f *fakeService) usageAnswer(events []UsageEvent) map[string]any {
	checkedAt := time.Now().Add(f.offset).UTC().Format(timestampLayout)
	claims := claimsOf(f.lastBody["license"])
	signed := &verifiedUsage{lid: claims.Lid, status: f.status}
	if f.bound {
		signed.boundAt = testBoundAt
	}
	answered := []map[string]any{}
	for _, event := range events {
		result := "ACCEPTED"
		if f.usageResult != nil {
			result = f.usageResult(event)
		}
		if result == "ACCEPTED" {
			f.used += event.Amount
		}
		signed.events = append(signed.events, UsageEventResult{ID: event.ID, Result: result})
		answered = append(answered, map[string]any{"id": event.ID, "result": result, "duplicate": false})
	}
	limit, overage, remaining := int64(1000), int64(0), 1000-f.used
	signed.meters = []UsageBalance{{Key: "exports", Used: f.used, Limit: &limit, Overage: &overage, Remaining: &remaining, ResetsAt: "2026-12-01T00:00:00.000Z"}}
	message, _ := signed.message(f.lastBody["nonce"], checkedAt, FpDigest(f.lastBody["fingerprint"]))
	key := f.key
	if f.forge {
		key = ed25519.NewKeyFromSeed(make([]byte, 32))
	}
	answer := map[string]any{
		"valid": f.valid, "lid": claims.Lid, "nonce": f.lastBody["nonce"], "checkedAt": checkedAt, "serverTime": checkedAt,
		"events": answered, "receipt": encodeB64U(ed25519.Sign(key, message)),
		"meters": []map[string]any{{"key": "exports", "label": "Exports", "period": "MONTH", "used": f.used, "limit": limit, "overage": overage,
			"remaining": remaining, "periodStart": "2026-11-01T00:00:00.000Z", "resetsAt": "2026-12-01T00:00:00.000Z"}},
	}
	if signed.status != "" {
		answer["status"] = signed.status
	}
	if signed.boundAt != "" {
		answer["boundAt"] = signed.boundAt
	}
	return answer
}

type fakeClaims struct {
	Lid string
	V   int
	Lse int64
}

// claimsOf reads a licence's claims without its signature (the fake trusts what it is sent).
func claimsOf(licence string) fakeClaims {
	payload, _ := decodeB64U(strings.SplitN(licence, ".", 2)[0])
	var claims fakeClaims
	json.Unmarshal(payload, &claims)
	return claims
}

func lidOf(licence string) string { return claimsOf(licence).Lid }

// floatingLicence is a floating licence (v 5) with a 15-minute lease, borrowing up to a week,
// and an offline window (max) of one minute, which its leases outlast.
func floatingLicence(t *testing.T) string {
	key, _ := ed25519Signer(t)
	exp := time.Now().Add(365 * 24 * time.Hour).Unix()
	return signPayload(key, `{"v":5,"lid":"`+testLidValue+`","prd":"`+testProduct+`","org":"`+testSlug+`","typ":"ONLINE","iat":`+
		strconv.FormatInt(dayAgo(), 10)+`,"exp":`+strconv.FormatInt(exp, 10)+`,"grace":14,"mm":5,"chk":300,"max":60,"lse":900,"brw":604800}`)
}

// testLicence is an ONLINE licence issued a day ago, valid a year, max one hour offline.
func testLicence(t *testing.T, iat int64, extra string) string {
	key, _ := ed25519Signer(t)
	exp := time.Now().Add(365 * 24 * time.Hour).Unix()
	return signPayload(key, `{"v":3,"lid":"`+testLidValue+`","prd":"`+testProduct+`","org":"`+testSlug+`","typ":"ONLINE","iat":`+
		strconv.FormatInt(iat, 10)+`,"exp":`+strconv.FormatInt(exp, 10)+`,"grace":14,"mm":1,"chk":600,"max":3600`+extra+`}`)
}

func dayAgo() int64 { return time.Now().Add(-24 * time.Hour).Unix() }

// testClock is a client clock that a test can move.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *testClock) move(offset time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = offset
}

// testConfig is a client configuration against the fake with its own state directory.
func testConfig(t *testing.T, f *fakeService, licence string, store StateStore, clock *testClock) Config {
	_, publicPem := ed25519Signer(t)
	return Config{
		BaseURL: f.server.URL + "/", Slug: testSlug, CheckID: testCheckID, CheckToken: testToken,
		PublicKeys: []string{vectors(t).Algorithms[4].PublicKeyPem, publicPem}, Licence: licence,
		ProductKey: testProduct, Store: store, Clock: clock.now, Timeout: 2 * time.Second,
		Fingerprint: vectors(t).Fingerprints[0].Fingerprint,
	}
}

func newTestClient(t *testing.T, config Config) *Client {
	t.Helper()
	client, err := NewClient(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
