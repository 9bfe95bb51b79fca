package licensor

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// TrialStart is what StartTrial answers.
type TrialStart struct {
	// Client holds the trial licence, for Check and the rest.
	Client *Client
	// Created is true when this call started the trial, false when the service gave this machine
	// back its own.
	Created bool
	// Licence is the trial licence string: keep it like any licence.
	Licence string
	// EndsAt is the trial's end (its exp).
	EndsAt time.Time
	// Result is the start's answer judged as Check judges one.
	Result *CheckResult
}

// trialRequest is the body of a trial start.
type trialRequest struct {
	Fingerprint     string `json:"fingerprint"`
	Nonce           string `json:"nonce"`
	DevicePublicKey string `json:"devicePublicKey"`
	Email           string `json:"email,omitempty"`
	MachineLabel    string `json:"machineLabel,omitempty"`
}

// StartTrial starts a trial of the product on this machine (DESIGN.md 18), or gets this
// machine's own trial back (after a reinstall, or a retry): call it from the application's first
// run or a "Start trial" button, never from an installer. config is a Client's without Licence;
// ProductKey is required, and a FileStore (the installation's device key lives on disk). email
// is optional ("" for none) and needs the user's consent. Errors are *Error: CodeTrialsOff,
// CodeTrialUsed (with Matched), CodeHTTPStatus (a 429 with RetryAfterSeconds), CodeTimeout,
// CodeNetwork, CodeBadResponse; CodeBadLicence when the licence does not verify with the
// product's keys, is not a trial, is for another product or machine, or not the answer's lid;
// CodeBadReceipt, CodeOlderTerm; CodeInvalidOptions for the configuration.
func StartTrial(ctx context.Context, config Config, email string) (*TrialStart, error) {
	config.Licence = ""
	c, err := newClient(config, "ProductKey")
	if err != nil {
		return nil, err
	}
	store, ok := c.store.(productDirectoryStore)
	if !ok {
		return nil, newError(CodeInvalidOptions, "a trial counts installations by a device key kept on disk: it needs a FileStore")
	}
	dir, err := store.productDirectory(config.Slug, config.ProductKey)
	if err != nil {
		return nil, newError(CodeInvalidOptions, "%v", err)
	}
	var dpk string
	err = airGapFiles{dir: dir, fingerprint: c.Fingerprint()}.update(func(_ *airGapState, makeDevice func() (*deviceKey, error)) error {
		device, err := makeDevice()
		if err == nil {
			dpk = device.dpk
		}
		return err
	})
	if err != nil {
		return nil, newError(CodeInvalidOptions, "the device key cannot be kept: %v", err)
	}
	now := c.clock()
	nonce := newNonce()
	body, status, err := c.send(ctx, "trial", trialRequest{Fingerprint: c.Fingerprint(), Nonce: nonce, DevicePublicKey: dpk, Email: email, MachineLabel: config.MachineLabel})
	if err != nil {
		return nil, err
	}
	licence, ok := fieldOf[string](body, "license")
	if !ok {
		return nil, newError(CodeBadResponse, "the trial answer has no licence string")
	}
	v := c.verify(licence, now)
	if !v.Signed {
		return nil, newError(CodeBadLicence, "the trial licence does not verify: %s", v.Message)
	}
	lid, _ := fieldOf[string](body, "lid")
	switch {
	case !v.Claims.Trial():
		return nil, newError(CodeBadLicence, "the licence answered is not a trial")
	case contains(v.Reasons, WrongProduct):
		return nil, newError(CodeBadLicence, "the trial licence is for another product")
	case v.FingerprintMatch == nil || !*v.FingerprintMatch:
		return nil, newError(CodeBadLicence, "the trial licence is for another machine")
	case lid != v.Claims.Lid:
		return nil, newError(CodeBadLicence, "the answer is not the trial licence's")
	}
	record, _ := c.store.Load(c.stateKey(v.Claims))
	if v.Claims.Iat < c.newestSeen(record) {
		return nil, newError(CodeOlderTerm, "the trial term answered is older than one already seen")
	}
	fresh, err := c.verifyAnswer(body, v.Claims, nonce)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.licence = licence
	c.mu.Unlock()
	// Judged at the service's time, as Check judges a trial: an answered trial may have ended.
	judged := c.verify(licence, time.UnixMilli(checkedAtMs(fresh)))
	result := &CheckResult{Licence: judged, Reasons: []Reason{}}
	offset := c.keep(result, judged, fresh, body, now)
	if !judged.Valid {
		result.State = Invalid
		result.Reasons = append([]Reason{}, judged.Reasons...)
	}
	result.Trial = trialStatus(judged, fresh, now, &offset)
	return &TrialStart{Client: c, Created: status == http.StatusCreated, Licence: licence, EndsAt: time.Unix(*v.Claims.Exp, 0).UTC(), Result: result}, nil
}

// trialRefusal is a refused trial start: the reasons an application tells apart, else the
// status (a 429 with its Retry-After).
func trialRefusal(response *http.Response, text []byte) *Error {
	value, _ := parseJSON(text)
	body, _ := value.(*jsonObject)
	message, ok := fieldOf[string](body, "error")
	if !ok {
		message = "the service answered " + strconv.Itoa(response.StatusCode)
	}
	reason, _ := fieldOf[string](body, "reason")
	switch {
	case response.StatusCode == http.StatusForbidden && reason == string(CodeTrialUsed):
		items, _ := fieldOf[[]any](body, "matched")
		matched := []string{}
		for _, item := range items {
			if name, ok := item.(string); ok {
				matched = append(matched, name)
			}
		}
		return &Error{Code: CodeTrialUsed, Message: message, Matched: matched}
	case response.StatusCode == http.StatusForbidden && reason == string(CodeTrialsOff):
		return &Error{Code: CodeTrialsOff, Message: message}
	}
	return &Error{Code: CodeHTTPStatus, Message: message, Status: response.StatusCode, RetryAfterSeconds: retryAfterSeconds(response), Reason: reason}
}
