package licensor

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// trialService answers the trial endpoint (and the trial's checks) as DESIGN.md 18 says: the
// trial licence plus a check of that term with the request's fingerprint and nonce.
type trialService struct {
	t      *testing.T
	server *httptest.Server

	mu        sync.Mutex
	licence   string
	created   bool
	status    string        // the signed status
	offset    time.Duration // the service's clock minus the real one
	converted bool
	nonce     string // sign this nonce instead of the request's
	refuse    int    // answer this status with body instead
	body      string
	header    http.Header
	requests  map[string]int
	lastBody  map[string]string
}

const day = 24 * time.Hour

func newTrialService(t *testing.T) *trialService {
	s := &trialService{t: t, status: "ACTIVE", created: true, requests: map[string]int{}}
	s.licence = trialLicence(t, `,"fp":"`+vectors(t).Fingerprints[0].Fingerprint+`","fpn":3`, `,"trl":true`)
	s.server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.server.Close)
	return s
}

// trialLicence is a 14-day trial issued now: grace 0, one machine, `trl` after `max`.
func trialLicence(t *testing.T, fp, trl string) string {
	key, _ := ed25519Signer(t)
	iat := time.Now().Unix()
	return signPayload(key, `{"v":3,"lid":"`+testLidValue+`","prd":"`+testProduct+`","org":"`+testSlug+`","typ":"ONLINE","iat":`+
		strconv.FormatInt(iat, 10)+`,"exp":`+strconv.FormatInt(iat+14*86400, 10)+`,"grace":0`+fp+`,"mm":1,"chk":600,"max":3600`+trl+`}`)
}

func (s *trialService) set(change func(s *trialService)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(s)
}

func (s *trialService) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	endpoint := strings.TrimPrefix(r.URL.Path, "/o/"+testSlug+"/api/public/license/"+testCheckID+"/")
	s.requests[endpoint]++
	s.lastBody = map[string]string{}
	_ = json.NewDecoder(r.Body).Decode(&s.lastBody)
	if s.refuse != 0 {
		for name, values := range s.header {
			w.Header()[name] = values
		}
		w.WriteHeader(s.refuse)
		w.Write([]byte(s.body))
		return
	}
	key, _ := ed25519Signer(s.t)
	checkedAt := time.Now().Add(s.offset).UTC().Format(timestampLayout)
	nonce := s.nonce
	if nonce == "" {
		nonce = s.lastBody["nonce"]
	}
	fields := ReceiptFields{Lid: testLidValue, Status: s.status, Nonce: nonce, CheckedAt: checkedAt, BoundAt: testBoundAt, FpDigest: FpDigest(s.lastBody["fingerprint"])}
	message, _ := receiptMessage(SVCR1, fields)
	answer := map[string]any{
		"valid": s.status == "ACTIVE", "lid": testLidValue, "status": s.status, "nonce": nonce, "checkedAt": checkedAt,
		"serverTime": checkedAt, "boundAt": testBoundAt, "receipt": encodeB64U(ed25519.Sign(key, message)),
	}
	if s.converted {
		answer["converted"] = true
	}
	if endpoint == "trial" {
		answer["license"] = s.licence
		if s.created {
			w.WriteHeader(http.StatusCreated)
		}
	}
	json.NewEncoder(w).Encode(answer)
}

func trialConfig(t *testing.T, s *trialService, clock *testClock) Config {
	config := testConfig(t, &fakeService{server: s.server}, "", FileStore(t.TempDir()), clock)
	return config
}

func trialError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *licensor.Error, got %v", err)
	}
	return e
}

func TestStartTrialSendsThisMachineAndHoldsTheTrial(t *testing.T) {
	s := newTrialService(t)
	config := trialConfig(t, s, &testClock{})
	start, err := StartTrial(context.Background(), config, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	body := s.lastBody
	if body["fingerprint"] != config.Fingerprint || body["email"] != "ada@example.com" || len(body["devicePublicKey"]) != 43 || len(body["nonce"]) < 16 || len(body) != 4 {
		t.Fatalf("sent %v", body)
	}
	if !start.Created || start.Licence != s.licence || start.Client.Licence() != s.licence || start.Result.State != Valid {
		t.Fatalf("got %+v, result %+v", start, start.Result)
	}
	// trl is the trial's claim, not a parameter, and it is kept in the claims' JSON.
	claims := start.Result.Licence.Claims
	if _, isParam := claims.Param("trl"); isParam || !claims.Trl {
		t.Fatalf("trl read as %+v", claims)
	}
	if data, _ := json.Marshal(claims); !strings.Contains(string(data), `"max":3600,"trl":true}`) {
		t.Fatalf("claims JSON %s", data)
	}
	trial := start.Result.Trial
	if trial == nil || trial.Converted || trial.SecondsLeft < 14*86400-5 || !trial.EndsAt.Equal(start.EndsAt) {
		t.Fatalf("trial %+v", trial)
	}
	// Again: the same device key, no email, and this machine's own trial (200).
	dpk := body["devicePublicKey"]
	s.set(func(s *trialService) { s.created = false })
	again, err := StartTrial(context.Background(), config, "")
	if err != nil || again.Created || s.lastBody["devicePublicKey"] != dpk || s.lastBody["email"] != "" {
		t.Fatalf("again: %+v %v %v", again, err, s.lastBody)
	}
	// The trial client checks like any other and carries the trial block.
	if result := again.Client.Check(context.Background()); result.State != Valid || result.Trial == nil {
		t.Fatalf("check %+v", result)
	}
}

func TestStartTrialRefusals(t *testing.T) {
	s := newTrialService(t)
	config := trialConfig(t, s, &testClock{})
	cases := []struct {
		status int
		body   string
		header http.Header
		want   Error
	}{
		{403, `{"error":"no trials","reason":"TRIALS_OFF"}`, nil, Error{Code: CodeTrialsOff}},
		{403, `{"error":"used","reason":"TRIAL_USED","matched":["machine","disk"]}`, nil, Error{Code: CodeTrialUsed, Matched: []string{"machine", "disk"}}},
		{429, `{"error":"limit","reason":"TRIAL_LIMIT"}`, http.Header{"Retry-After": {"3600"}}, Error{Code: CodeHTTPStatus, Status: 429, RetryAfterSeconds: 3600, Reason: "TRIAL_LIMIT"}},
		{403, `{"error":"product inactive"}`, nil, Error{Code: CodeHTTPStatus, Status: 403}},
	}
	for _, c := range cases {
		s.set(func(s *trialService) { s.refuse, s.body, s.header = c.status, c.body, c.header })
		_, err := StartTrial(context.Background(), config, "")
		e := trialError(t, err)
		if e.Code != c.want.Code || e.Status != c.want.Status || e.RetryAfterSeconds != c.want.RetryAfterSeconds || strings.Join(e.Matched, ",") != strings.Join(c.want.Matched, ",") {
			t.Errorf("%d %s: got %+v", c.status, c.body, e)
		}
	}
}

func TestStartTrialRefusesWhatIsNotThisMachinesTrial(t *testing.T) {
	s := newTrialService(t)
	config := trialConfig(t, s, &testClock{})
	mine := `,"fp":"` + vectors(t).Fingerprints[0].Fingerprint + `","fpn":3`
	other := `,"fp":"` + vectors(t).Fingerprints[1].Fingerprint + `","fpn":5`
	for name, licence := range map[string]string{
		"no trl":          trialLicence(t, mine, ""),
		"trl not true":    trialLicence(t, mine, `,"trl":"true"`),
		"another machine": trialLicence(t, other, `,"trl":true`),
		"forged":          s.licence[:len(s.licence)-4] + "AAAA",
	} {
		s.set(func(s *trialService) { s.licence = licence })
		if _, err := StartTrial(context.Background(), config, ""); trialError(t, err).Code != CodeBadLicence {
			t.Errorf("%s: %v", name, err)
		}
	}
	s.set(func(s *trialService) {
		s.licence = trialLicence(t, mine, `,"trl":true`)
		s.nonce = strings.Repeat("x", 32)
	})
	if _, err := StartTrial(context.Background(), config, ""); trialError(t, err).Code != CodeBadReceipt {
		t.Errorf("forged receipt: %v", err)
	}
	for name, change := range map[string]func(*Config){
		"memory store":   func(c *Config) { c.Store = MemoryStore() },
		"no product key": func(c *Config) { c.ProductKey = "" },
	} {
		broken := config
		change(&broken)
		if _, err := StartTrial(context.Background(), broken, ""); trialError(t, err).Code != CodeInvalidOptions {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestATrialEndsByTheServiceTimeAndAClockSetBackNeverRevivesIt(t *testing.T) {
	s := newTrialService(t)
	clock := &testClock{}
	start, err := StartTrial(context.Background(), trialConfig(t, s, clock), "")
	if err != nil {
		t.Fatal(err)
	}
	// This machine's clock says the trial runs; the service signs that it ended a day ago.
	s.set(func(s *trialService) { s.status, s.offset, s.converted = "EXPIRED", 15*day, true })
	result := start.Client.Check(context.Background())
	if result.State != Invalid || result.Reasons[0] != Expired || result.ClockRollback || result.Trial.SecondsLeft != 0 || !result.Trial.Converted {
		t.Fatalf("after the end: %+v %+v", result, result.Trial)
	}
	clock.move(-day)
	result = start.Client.Check(context.Background())
	if result.State != Invalid || len(result.Reasons) != 1 || result.Reasons[0] != Expired || !result.ClockRollback || s.requests["check"] != 1 {
		t.Fatalf("clock set back: %+v, %d checks", result, s.requests["check"])
	}
}

func TestStartTrialJudgesAnEndedTrialExpired(t *testing.T) {
	s := newTrialService(t)
	s.set(func(s *trialService) { s.status, s.offset, s.created = "EXPIRED", 15*day, false })
	start, err := StartTrial(context.Background(), trialConfig(t, s, &testClock{}), "")
	if err != nil {
		t.Fatal(err)
	}
	if start.Result.State != Invalid || start.Result.Reasons[0] != Expired || start.Result.Trial.SecondsLeft != 0 {
		t.Fatalf("%+v", start.Result)
	}
}
