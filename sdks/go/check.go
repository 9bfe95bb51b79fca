package licensor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// CheckState is a Check's verdict.
type CheckState string

const (
	// Valid: the licence verifies offline and the latest verified answer says licensed on this
	// machine: this call's, or one younger than the licence's max (checkMaxSeconds).
	Valid CheckState = "VALID"
	// Stale: the latest verified answer said licensed but is older than max (or its age cannot be
	// trusted because the clock went back), or there is no verified answer at all.
	Stale CheckState = "STALE"
	// Invalid: the licence is refused offline, or the latest verified answer said not licensed
	// here. A negative answer stands, whatever its age, until a later verified answer says otherwise.
	Invalid CheckState = "INVALID"
)

// Answer is a check answer whose receipt verified against this licence, nonce and machine.
type Answer struct {
	StoredAnswer
	// Grants: licensed on this machine by the signed fields (status ACTIVE or GRACE, boundAt set).
	Grants bool
	// Fresh is true for this call's answer, false for a stored one.
	Fresh bool
}

// NoAnswer says why a call's answer counted for nothing.
type NoAnswer struct {
	// Code is CodeTimeout, CodeNetwork, CodeHTTPStatus, CodeBadResponse or CodeBadReceipt.
	Code ErrorCode
	// Status is the HTTP status for CodeHTTPStatus, else 0.
	Status  int
	Message string
}

// CheckResult is what Check found.
type CheckResult struct {
	State CheckState
	// Reasons say why Invalid; empty otherwise.
	Reasons []Reason
	// Licence is the offline verification of the licence at this moment.
	Licence *LicenceVerification
	// Answer is the verified answer the state rests on: this call's, else the stored one, else nil.
	Answer *Answer
	// NoAnswer says why this call got no verified answer; nil when it got one or sent nothing.
	NoAnswer *NoAnswer
	// Age is the time since the answer's signed checkedAt, in the service's time (meaningful only
	// with an Answer).
	Age time.Duration
	// ClockRollback: the clock is more than a minute before the last verified checkedAt (with
	// the remembered offset), so a stored answer's age cannot be trusted.
	ClockRollback bool
	// Renewed: this call's answer says a newer term exists (an unsigned hint): call Fetch.
	Renewed bool
	// ServerReason is the service's unsigned reason, for display only.
	ServerReason string
	// StoreError is set when the verified answer could not be stored (the result still holds).
	StoreError error
	// LeaseEndsAt is the signed end of this machine's lease (floating licences), zero otherwise:
	// the answer counts as licensed only until then, judged with the remembered clock offset
	// clamped to ±60 s, whatever the licence's max says.
	LeaseEndsAt time.Time
	// AirGapped: Valid rests on an air-gapped activation of this machine (DESIGN.md 14), not on a
	// check answer.
	AirGapped bool
	// Trial is a trial licence's end as the service's clock judges it; nil for any other licence.
	Trial *TrialStatus
}

// TrialStatus is a trial licence's end (DESIGN.md 18).
type TrialStatus struct {
	// EndsAt is the signed exp.
	EndsAt time.Time
	// SecondsLeft counts from the later of the service's time and the newest verified checkedAt
	// to EndsAt; 0 once ended.
	SecondsLeft int64
	// Converted: the last answer said the trial was converted to a paid licence (unsigned): ask
	// the vendor for it.
	Converted bool
}

// Fresh reports whether the state rests on this call's answer.
func (r *CheckResult) Fresh() bool { return r.Answer != nil && r.Answer.Fresh }

// Check asks the service about the licence with a fresh nonce and judges its answer by the
// signed fields only. What the service does never makes it fail: a timeout, any non-200, an
// unparseable body or a receipt that does not verify is no answer, and the state rests on the
// stored answer. A licence refused offline, or older than a term already seen, is never sent.
func (c *Client) Check(ctx context.Context) *CheckResult {
	result, _ := c.ask(ctx, "check", "", nil) // with no vet, ask has no error to give
	return result
}

// Borrow asks the service to extend this machine's lease of a floating licence until the given
// time (at most the licence's brw ahead), for a laptop going offline (DESIGN.md 13). The machine
// must hold a live lease: Check first. It answers like Check, the lease then ending at until; a
// refusal (403 when borrowing is off or every borrowable seat is borrowed, 400 beyond brw) is no
// answer with its HTTP status. A zero until, or a licence that verifies and is not a floating
// one (v 5), is CodeInvalidOptions, nothing sent.
func (c *Client) Borrow(ctx context.Context, until time.Time) (*CheckResult, error) {
	if until.IsZero() {
		return nil, newError(CodeInvalidOptions, "until must be a time")
	}
	return c.ask(ctx, "borrow", until.UTC().Format(timestampLayout), func(v *LicenceVerification) error {
		if v.Signed && v.Claims.V != 5 {
			return newError(CodeInvalidOptions, "borrowing needs a floating licence (v 5)")
		}
		return nil
	})
}

// timestampLayout is the service's: ISO 8601 UTC with milliseconds.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// ask is Check and Borrow: the same request (borrow adds until) and the same judgement. vet, when
// given, sees the licence verified offline before anything else and may refuse it (Borrow's
// floating test), so that the licence is verified once.
func (c *Client) ask(ctx context.Context, endpoint, until string, vet func(*LicenceVerification) error) (*CheckResult, error) {
	now := c.clock()
	licence := c.Licence()
	if licence == "" {
		return nil, newError(CodeInvalidOptions, "this client holds no licence")
	}
	v := c.verify(licence, now)
	if vet != nil {
		if err := vet(v); err != nil {
			return nil, err
		}
	}
	var record Record
	var stored *Answer
	if v.Signed {
		record, stored = c.load(v.Claims)
	}
	// A trial ends by the service's time, never by a clock set back (DESIGN.md 18).
	if v.Signed && v.Claims.Trial() {
		v = c.verify(licence, time.UnixMilli(trialNowMs(record.OffsetMs, stored, now)))
	}
	result := &CheckResult{Licence: v, Reasons: []Reason{}}
	defer func() { result.Trial = trialStatus(v, result.Answer, now, record.OffsetMs) }()
	// Measured against the answer known before this call: a fresh answer proves itself by its nonce.
	result.ClockRollback = stored != nil && serviceNowMs(record.OffsetMs, now, maxOffset) < checkedAtMs(stored)-rollbackTolerance.Milliseconds()
	olderTerm := v.Signed && v.Claims.Iat < c.newestSeen(record)

	if !v.Valid || olderTerm {
		result.judge(stored, record.OffsetMs, now, 0)
		result.State = Invalid
		result.Reasons = append([]Reason{}, v.Reasons...)
		if olderTerm {
			result.Reasons = append(result.Reasons, OlderTerm)
		}
		return result, nil
	}

	maxAge := int64(0)
	if v.Claims.Max != nil {
		maxAge = *v.Claims.Max
	}
	nonce := newNonce()
	body, err := c.post(ctx, endpoint, request{License: licence, Fingerprint: c.Fingerprint(), Nonce: nonce, MachineLabel: c.config.MachineLabel, Until: until})
	var fresh *Answer
	if err == nil {
		fresh, err = c.verifyAnswer(body, v.Claims, nonce)
	}
	if err != nil {
		var e *Error
		errors.As(err, &e)
		result.NoAnswer = &NoAnswer{Code: e.Code, Status: e.Status, Message: e.Message}
		result.judge(stored, record.OffsetMs, now, maxAge)
		c.orAirGapped(result, v.Claims, now)
		return result, nil
	}
	// A later verified answer that says not licensed ends an air-gapped activation here (DESIGN.md 14).
	if !fresh.Grants {
		c.endAirGapped(v.Claims)
	}

	offset := c.keep(result, v, fresh, body, now)
	record.OffsetMs = &offset
	return result, nil
}

// keep stores a fresh verified answer (Check, Borrow and StartTrial) and judges it; it answers
// the clock offset the answer showed.
func (c *Client) keep(result *CheckResult, v *LicenceVerification, fresh *Answer, body *jsonObject, now time.Time) int64 {
	maxAge := int64(0)
	if v.Claims.Max != nil {
		maxAge = *v.Claims.Max
	}
	offset := checkedAtMs(fresh) - now.UnixMilli()
	c.rememberTerm(v.Claims.Iat)
	result.StoreError = c.store.Update(c.stateKey(v.Claims), func(r *Record) {
		r.NewestIat = maxPointer(r.NewestIat, v.Claims.Iat)
		r.OffsetMs = &offset
		stored := fresh.StoredAnswer
		r.Answer = &stored
	})
	result.ServerReason, _ = fieldOf[string](body, "reason")
	result.judge(fresh, &offset, now, maxAge)
	return offset
}

// trialNowMs is the time a trial is judged at: the later of the service's time and the newest
// verified checkedAt (Unix milliseconds).
func trialNowMs(offsetMs *int64, answer *Answer, now time.Time) int64 {
	t := serviceNowMs(offsetMs, now, maxOffset)
	if answer != nil && checkedAtMs(answer) > t {
		t = checkedAtMs(answer)
	}
	return t
}

func trialStatus(v *LicenceVerification, answer *Answer, now time.Time, offsetMs *int64) *TrialStatus {
	if !v.Signed || !v.Claims.Trial() {
		return nil
	}
	end := *v.Claims.Exp * 1000
	left := (end - trialNowMs(offsetMs, answer, now)) / 1000
	if left < 0 {
		left = 0
	}
	return &TrialStatus{EndsAt: time.Unix(*v.Claims.Exp, 0).UTC(), SecondsLeft: left, Converted: answer != nil && answer.Converted}
}

// judge sets the state from the latest verified answer (the licence already verified offline).
func (r *CheckResult) judge(answer *Answer, offsetMs *int64, now time.Time, maxAge int64) {
	r.Answer = answer
	if answer == nil {
		r.State = Stale
		return
	}
	r.Age = time.Duration(serviceNowMs(offsetMs, now, maxOffset)-checkedAtMs(answer)) * time.Millisecond
	r.Renewed = answer.Fresh && answer.Renewed
	leased := answer.Tag == SVCR2
	if leased && answer.LeaseEndsAt != "" {
		r.LeaseEndsAt = answer.leaseEnd()
	}
	switch {
	case !answer.Grants:
		r.State = Invalid
		r.Reasons = []Reason{signedReason(answer.Status)}
	case leased && serviceNowMs(offsetMs, now, leaseOffset) >= r.LeaseEndsAt.UnixMilli():
		r.State = Stale // the lease has lapsed: only a new answer brings one
	case answer.Fresh:
		r.State = Valid
	case r.ClockRollback || (!leased && r.Age > time.Duration(maxAge)*time.Second):
		r.State = Stale
	default:
		r.State = Valid
	}
}

func signedReason(status string) Reason {
	switch status {
	case "":
		return UnknownLicence
	case "REVOKED":
		return Revoked
	case "PENDING":
		return NotYetValid
	case "EXPIRED":
		return Expired
	case "ACTIVE", "GRACE":
		return NoSeat
	}
	return NotLicensed
}

// serviceNowMs is the service's time now (Unix milliseconds), as this machine's clock and the
// remembered offset (believed up to limit either way) tell it. Milliseconds throughout, as the
// signed times and the TypeScript SDK.
func serviceNowMs(offsetMs *int64, now time.Time, limit time.Duration) int64 {
	offset := int64(0)
	if offsetMs != nil {
		offset = *offsetMs
		if limit := limit.Milliseconds(); offset > limit {
			offset = limit
		} else if offset < -limit {
			offset = -limit
		}
	}
	return now.UnixMilli() + offset
}

// leaseEnd is an answer's signed leaseEndsAt; verified answers have a readable one when any.
func (a *Answer) leaseEnd() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, a.LeaseEndsAt)
	return t
}

// checkedAtMs is an answer's signed checkedAt; verified answers always have a readable one.
func checkedAtMs(a *Answer) int64 {
	t, _ := time.Parse(time.RFC3339Nano, a.CheckedAt)
	return t.UnixMilli()
}

func maxPointer(stored *int64, value int64) *int64 {
	if stored != nil && *stored > value {
		return stored
	}
	return &value
}

func (c *Client) rememberTerm(iat int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if iat > c.newestIat {
		c.newestIat = iat
	}
}

// load reads the licence's record and its stored answer, when that still verifies for this
// licence and machine; a record that cannot be read is empty.
func (c *Client) load(claims *Claims) (Record, *Answer) {
	record, err := c.store.Load(c.stateKey(claims))
	if err != nil {
		return Record{}, nil
	}
	a := record.Answer
	if a == nil || a.Tag != ReceiptTagOf(claims) || a.Lid != claims.Lid || a.FpDigest != FpDigest(c.Fingerprint()) {
		return record, nil
	}
	return record, c.verified(*a, false)
}

// verifyAnswer rebuilds the receipt from the answer's status, checkedAt and boundAt and from
// what the client knows itself (the licence's lid, the nonce it sent, this machine's fpDigest),
// so a receipt for another licence, nonce or machine cannot verify. The unsigned valid and
// reason are not read.
func (c *Client) verifyAnswer(body *jsonObject, claims *Claims, nonce string) (*Answer, error) {
	optional := func(name string) (string, bool) {
		value, present := body.get(name)
		if !present {
			return "", true
		}
		s, ok := value.(string)
		return s, ok
	}
	tag := ReceiptTagOf(claims)
	status, statusOK := optional("status")
	boundAt, boundOK := optional("boundAt")
	leaseEndsAt, leaseOK := optional("leaseEndsAt")
	if tag == SVCR1 {
		leaseEndsAt, leaseOK = "", true // not signed: never read
	}
	checked, checkedOK := fieldOf[string](body, "checkedAt")
	receipt, receiptOK := fieldOf[string](body, "receipt")
	if !statusOK || !boundOK || !leaseOK || !checkedOK || !receiptOK {
		return nil, newError(CodeBadResponse, "the answer lacks the receipt fields")
	}
	renewed, _ := fieldOf[bool](body, "renewed")
	converted, _ := fieldOf[bool](body, "converted")
	answer := StoredAnswer{Tag: tag, Receipt: receipt, Renewed: renewed, Converted: converted, ReceiptFields: ReceiptFields{
		Lid: claims.Lid, Status: status, Nonce: nonce, CheckedAt: checked, BoundAt: boundAt,
		FpDigest: FpDigest(c.Fingerprint()), LeaseEndsAt: leaseEndsAt,
	}}
	verified := c.verified(answer, true)
	if verified == nil {
		return nil, newError(CodeBadReceipt, "the receipt does not verify for this licence, nonce and machine")
	}
	return verified, nil
}

// verified is the answer when its receipt verifies under its tag and its times are readable.
func (c *Client) verified(a StoredAnswer, fresh bool) *Answer {
	if _, err := time.Parse(time.RFC3339Nano, a.CheckedAt); err != nil {
		return nil
	}
	if _, err := time.Parse(time.RFC3339Nano, a.LeaseEndsAt); a.LeaseEndsAt != "" && err != nil {
		return nil
	}
	if !VerifyReceipt(a.Tag, a.ReceiptFields, a.Receipt, c.keys) {
		return nil
	}
	return &Answer{StoredAnswer: a, Grants: a.Grants(a.Tag), Fresh: fresh}
}

// request is the body of check, fetch and release.
type request struct {
	License      string `json:"license"`
	Fingerprint  string `json:"fingerprint"`
	Nonce        string `json:"nonce,omitempty"`
	MachineLabel string `json:"machineLabel,omitempty"`
	Until        string `json:"until,omitempty"`
	// Events is a usage request's batch; nil for the other calls.
	Events *[]UsageEvent `json:"events,omitempty"`
}

// post sends JSON and returns the 200 answer's object; everything else is an *Error.
func (c *Client) post(ctx context.Context, endpoint string, body request) (*jsonObject, error) {
	object, _, err := c.send(ctx, endpoint, body)
	return object, err
}

// send sends JSON and returns the 200 answer's object (and a trial's 201) with its status;
// everything else is an *Error.
func (c *Client) send(ctx context.Context, endpoint string, body any) (*jsonObject, int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	data, _ := json.Marshal(body) // plain strings and integers: cannot fail
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+endpoint, bytes.NewReader(data))
	if err != nil {
		return nil, 0, newError(CodeNetwork, "the request cannot be made: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.config.CheckToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	response, err := c.httpClient.Do(req)
	if err != nil {
		return nil, 0, transportError(ctx, err, "the service cannot be reached", c.timeout)
	}
	defer response.Body.Close()
	success := response.StatusCode == http.StatusOK || (endpoint == "trial" && response.StatusCode == http.StatusCreated)
	text, err := io.ReadAll(io.LimitReader(response.Body, maxAnswerBytes+1))
	if !success {
		if endpoint == "trial" {
			return nil, 0, trialRefusal(response, text)
		}
		return nil, 0, statusError(response, text)
	}
	if err != nil {
		return nil, 0, transportError(ctx, err, "the answer was cut off", c.timeout)
	}
	if len(text) > maxAnswerBytes {
		return nil, 0, newError(CodeBadResponse, "the answer is too large")
	}
	value, err := parseJSON(text)
	if err != nil {
		return nil, 0, newError(CodeBadResponse, "the answer is not strict JSON")
	}
	object, ok := value.(*jsonObject)
	if !ok {
		return nil, 0, newError(CodeBadResponse, "the answer is not a JSON object")
	}
	return object, response.StatusCode, nil
}

// retryAfterSeconds is a 429's Retry-After (a trial limit, a usage rate) in whole seconds, else 0:
// an absent or other header says nothing.
func retryAfterSeconds(response *http.Response) int {
	seconds, err := strconv.ParseUint(strings.TrimSpace(response.Header.Get("Retry-After")), 10, 30)
	if err != nil || response.StatusCode != http.StatusTooManyRequests {
		return 0
	}
	return int(seconds)
}

func transportError(ctx context.Context, err error, what string, timeout time.Duration) error {
	var netErr net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return newError(CodeTimeout, "no answer within %v", timeout)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return newError(CodeNetwork, "%s: %v", what, err)
}

func pathEscape(segment string) string { return url.PathEscape(segment) }
