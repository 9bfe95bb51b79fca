package licensor

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Usage metering (DESIGN.md 19): events queued on disk before any send, counted by the service
// against the licence's signed meters, the balances trusted only from a verified SVCU1 receipt.

const (
	// MaxUsageAmount is the largest amount one event may carry.
	MaxUsageAmount = 1_000_000_000
	// UsageQueueLimit is how many queued events of one licence make RecordUsage fail CodeQueueFull.
	UsageQueueLimit = 1000
	// usageBatch is the most events one usage request carries.
	usageBatch = 100
	// UsageQueued is an event's result while it waits on disk (no answer yet).
	UsageQueued = "QUEUED"
	// usageNotLicensed is the one result that is not final: the event stays queued.
	usageNotLicensed = "NOT_LICENSED"
	// defaultRetryAfter holds back sends after a 429 that names no wait.
	defaultRetryAfter = 60 * time.Second
)

var (
	meterKey   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)
	eventID    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	eventAt    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$`)
	decimal    = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
	asciiField = regexp.MustCompile(`^[\x20-\x7e]*$`)
)

// LicenceMeter is one of the licence's signed meters (the mtr claim): a nil Limit is unlimited, a
// nil Overage no ceiling. Period is NONE, DAY, MONTH or YEAR.
type LicenceMeter struct {
	Key     string
	Period  string
	Limit   *int64
	Overage *int64
}

// UsageEvent is an event as queued on disk and sent: exactly {id, meter, amount, at}.
type UsageEvent struct {
	ID     string `json:"id"`
	Meter  string `json:"meter"`
	Amount int64  `json:"amount"`
	// At is when it happened by the service's clock as this machine knows it (ISO 8601 UTC, ms).
	At string `json:"at"`
}

// UsageEventResult is a queued event and what became of it: ACCEPTED, LIMIT_REACHED,
// UNKNOWN_METER, TOO_OLD, EVENT_LIMIT, ID_REUSED (final), NOT_LICENSED (kept, sent again) or
// UsageQueued (no answer yet).
type UsageEventResult struct {
	ID     string
	Meter  string
	Amount int64
	Result string
}

// UsageBalance is a meter's balance as the last verified usage receipt signed it, and the amount
// queued for it here.
type UsageBalance struct {
	Key  string
	Used int64
	// Limit is nil for unlimited, Overage nil for no ceiling, Remaining nil without a ceiling.
	Limit, Overage, Remaining *int64
	// ResetsAt is when the period's count starts again; "" for a NONE period.
	ResetsAt string
	// Pending is the amount queued on this machine for this meter and not counted yet.
	Pending int64
}

// UsageReport is what RecordUsage and Usage answer.
type UsageReport struct {
	// Licensed on this machine by the signed fields of this client's last verified usage answer;
	// nil before one.
	Licensed *bool
	// Reason says why not licensed, as for a check; "" when licensed or without an answer.
	Reason Reason
	// Events are this licence's queued events this call dealt with, oldest first.
	Events []UsageEventResult
	// Meters are the last verified balances of every meter of the licence; nil before any.
	Meters []UsageBalance
	// Fresh is true for this call's answer, false for an earlier one of this client, nil for none.
	Fresh *bool
	// Pending counts the events queued here for other licences, never sent for this one.
	Pending int
	// NoAnswer says why this call got no verified answer.
	NoAnswer *NoAnswer
	// StoreError is set when a counted event's file could not be removed (it is sent again and
	// answered as a duplicate).
	StoreError error
}

// verifiedUsage is the signed part of a usage answer whose receipt verified.
type verifiedUsage struct {
	lid, status, boundAt string
	events               []UsageEventResult // ID and Result only
	meters               []UsageBalance
}

// usageDirectoryStore is a store with a folder per licence for usage events (FileStore).
type usageDirectoryStore interface {
	usageDirectory(lid string) (string, error)
}

// usageDirectory is `<root>/usage/<lid>`.
func (s *fileStore) usageDirectory(lid string) (string, error) {
	if err := checkPathPart(lid); err != nil {
		return "", err
	}
	return filepath.Join(s.root, "usage", lid), nil
}

// UpdatesUntil is the end of the update window (DESIGN.md 20), offline from the newest verified
// term: its upd, else its grace end (a trial's end), else nil (every release); nil too when the
// licence does not verify. It means nothing for a product whose parameter is named upd.
func (c *Client) UpdatesUntil() *time.Time {
	v := c.verify(c.Licence(), c.clock())
	if !v.Signed {
		return nil
	}
	end := v.Claims.Upd
	if end == nil {
		end = v.Claims.GraceEndsAt()
	}
	if end == nil {
		return nil
	}
	at := time.Unix(*end, 0).UTC()
	return &at
}

// LicenceMeters are the licence in use's signed meters (mtr), in signed order; none when it does
// not verify, has none or holds an mtr not of that form.
func (c *Client) LicenceMeters() []LicenceMeter {
	v := c.verify(c.Licence(), c.clock())
	if !v.Signed {
		return nil
	}
	meters := []LicenceMeter{}
	count := func(o *jsonObject, name string) (*int64, bool) {
		member, _ := o.get(name)
		if member == nil {
			return nil, true
		}
		n, ok := member.(jsonNumber)
		i, integer := n.integer()
		return &i, ok && integer && i >= 0
	}
	for _, item := range v.Claims.Mtr {
		o := item.(*jsonObject) // isMeterClaim: every item is an object
		if len(o.members) != 4 {
			return nil
		}
		key, keyOK := fieldOf[string](o, "k")
		period, _ := fieldOf[string](o, "p")
		limit, limitOK := count(o, "l")
		overage, overageOK := count(o, "o")
		_, hasL := o.get("l")
		_, hasO := o.get("o")
		if !keyOK || !hasL || !hasO || !limitOK || !overageOK || (period != "NONE" && period != "DAY" && period != "MONTH" && period != "YEAR") {
			return nil
		}
		meters = append(meters, LicenceMeter{Key: key, Period: period, Limit: limit, Overage: overage})
	}
	return meters
}

// RecordUsage counts amount (1 to 10^9) of meter for this licence: the event is written to this
// machine's queue (`<stateDir>/usage/<lid>/`) before anything is sent, then the queue is sent
// oldest first, and an event leaves it only when a verified receipt gives it a final result, so a
// crash or an unreachable service loses nothing and a resend counts nothing twice. Errors, all
// adding nothing: CodeInvalidOptions (a meter that is not a key, an amount out of range, a
// memory-only store), CodeNotCheckable (OFFLINE), CodeBadLicence (the licence in use does not
// verify), CodeQueueFull (1,000 queued events). The service's failures are NoAnswer, never errors.
func (c *Client) RecordUsage(ctx context.Context, meter string, amount int64) (*UsageReport, error) {
	if !meterKey.MatchString(meter) {
		return nil, newError(CodeInvalidOptions, "meter must be a meter key: a letter, then up to 63 letters, digits, \"_\", \".\" or \"-\"")
	}
	if amount < 1 || amount > MaxUsageAmount {
		return nil, newError(CodeInvalidOptions, "amount must be an integer from 1 to %d", MaxUsageAmount)
	}
	claims, dir, err := c.usageQueue()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, newError(CodeInvalidOptions, "usage events are queued on disk before they are sent: RecordUsage needs FileStore, not MemoryStore")
	}
	record, _ := c.load(claims)
	at := time.UnixMilli(serviceNowMs(record.OffsetMs, c.clock(), maxOffset)).UTC().Format(timestampLayout)
	if err := addUsageEvent(dir, meter, amount, at); err != nil {
		return nil, err
	}
	return c.sendUsage(ctx, claims, dir), nil
}

// Usage sends this licence's queued events (or none, to read the balances) and reports as
// RecordUsage does. Errors: CodeNotCheckable, CodeBadLicence.
func (c *Client) Usage(ctx context.Context) (*UsageReport, error) {
	claims, dir, err := c.usageQueue()
	if err != nil {
		return nil, err
	}
	return c.sendUsage(ctx, claims, dir), nil
}

// usageQueue is the signed licence in use and its queue folder ("" with a store without one).
func (c *Client) usageQueue() (*Claims, string, error) {
	v := c.verify(c.Licence(), c.clock())
	if !v.Signed {
		return nil, "", newError(CodeBadLicence, "the licence in use does not verify: %s", v.Message)
	}
	if v.Claims.Typ == "OFFLINE" {
		return nil, "", newError(CodeNotCheckable, "an OFFLINE licence has no meters and no check path")
	}
	store, ok := c.store.(usageDirectoryStore)
	if !ok {
		return v.Claims, "", nil
	}
	dir, err := store.usageDirectory(v.Claims.Lid)
	if err != nil {
		return nil, "", newError(CodeInvalidOptions, "%v", err)
	}
	return v.Claims, dir, nil
}

// sendUsage sends the queue in batches until it is empty, an answer is missing or an event is
// NOT_LICENSED, and reports.
func (c *Client) sendUsage(ctx context.Context, claims *Claims, dir string) *UsageReport {
	queued := []UsageEvent{}
	if dir != "" {
		queued = usageEvents(dir)
	}
	results := map[string]string{}
	report := &UsageReport{}
	fresh := false
	c.mu.Lock()
	retryAt := c.usageRetryAt
	c.mu.Unlock()
	if c.clock().Before(retryAt) {
		report.NoAnswer = &NoAnswer{Code: CodeHTTPStatus, Status: 429, Message: "the service asked to wait before sending usage again"}
	} else {
		for offset := 0; offset == 0 || offset < len(queued); offset += usageBatch {
			end := offset + usageBatch
			if end > len(queued) {
				end = len(queued)
			}
			answer, err := c.postUsage(ctx, claims, queued[offset:end])
			if err != nil {
				var e *Error
				errors.As(err, &e)
				report.NoAnswer = &NoAnswer{Code: e.Code, Status: e.Status, Message: e.Message}
				if e.Status == 429 {
					wait := defaultRetryAfter
					if e.RetryAfterSeconds > 0 {
						wait = time.Duration(e.RetryAfterSeconds) * time.Second
					}
					c.mu.Lock()
					c.usageRetryAt = c.clock().Add(wait)
					c.mu.Unlock()
				}
				break
			}
			fresh = true
			c.mu.Lock()
			c.lastUsage = answer
			c.mu.Unlock()
			notLicensed := false
			for _, event := range answer.events {
				results[event.ID] = event.Result
				if event.Result == usageNotLicensed {
					notLicensed = true
				} else if err := os.Remove(filepath.Join(dir, event.ID+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
					report.StoreError = err
				}
			}
			if notLicensed {
				break
			}
		}
	}
	report.Events = make([]UsageEventResult, 0, len(queued))
	waiting := map[string]int64{}
	for _, event := range queued {
		result, answered := results[event.ID]
		if !answered {
			result = UsageQueued
		}
		if result == UsageQueued || result == usageNotLicensed {
			waiting[event.Meter] += event.Amount
		}
		report.Events = append(report.Events, UsageEventResult{ID: event.ID, Meter: event.Meter, Amount: event.Amount, Result: result})
	}
	c.mu.Lock()
	kept := c.lastUsage
	c.mu.Unlock()
	if kept != nil && kept.lid == claims.Lid {
		licensed := ReceiptFields{Status: kept.status, BoundAt: kept.boundAt}.Grants(SVCR1)
		report.Licensed, report.Fresh = &licensed, &fresh
		if !licensed {
			report.Reason = signedReason(kept.status)
		}
		report.Meters = make([]UsageBalance, 0, len(kept.meters))
		for _, meter := range kept.meters {
			meter.Pending = waiting[meter.Key]
			report.Meters = append(report.Meters, meter)
		}
	}
	if dir != "" {
		report.Pending = pendingElsewhere(filepath.Dir(dir), claims.Lid)
	}
	return report
}

// postUsage sends one batch with a fresh nonce and answers its signed part once the SVCU1 receipt
// verifies: rebuilt from the licence's lid, the nonce sent, this machine's fpDigest and the ids
// sent in order, so an answer to another licence, request, machine or batch cannot verify.
func (c *Client) postUsage(ctx context.Context, claims *Claims, events []UsageEvent) (*verifiedUsage, error) {
	nonce := newNonce()
	body, err := c.post(ctx, "usage", request{License: c.Licence(), Fingerprint: c.Fingerprint(), Nonce: nonce, Events: &events})
	if err != nil {
		return nil, err
	}
	optional := func(name string) (string, bool) {
		value, present := body.get(name)
		if !present {
			return "", true
		}
		s, ok := value.(string)
		return s, ok
	}
	status, statusOK := optional("status")
	boundAt, boundOK := optional("boundAt")
	checked, checkedOK := fieldOf[string](body, "checkedAt")
	receipt, receiptOK := fieldOf[string](body, "receipt")
	answer := &verifiedUsage{lid: claims.Lid, status: status, boundAt: boundAt}
	listed := answer.readLists(body)
	if !statusOK || !boundOK || !checkedOK || !receiptOK || !listed {
		return nil, newError(CodeBadResponse, "the usage answer lacks the receipt fields")
	}
	bad := newError(CodeBadReceipt, "the usage receipt does not verify for this licence, nonce, machine and events")
	if len(answer.events) != len(events) {
		return nil, bad
	}
	for i, event := range answer.events {
		if event.ID != events[i].ID {
			return nil, bad
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, checked); err != nil {
		return nil, bad
	}
	message, ok := answer.message(nonce, checked, FpDigest(c.Fingerprint()))
	signature, decoded := decodeB64U(receipt)
	if !ok || !decoded || !c.keys.verifiedBy(message, signature) {
		return nil, bad
	}
	return answer, nil
}

// readLists reads the answer's events ({id, result}) and meters (the signed fields, integers as
// canonical decimal literals); false when either is not of that form.
func (a *verifiedUsage) readLists(body *jsonObject) bool {
	events, eventsOK := fieldOf[[]any](body, "events")
	meters, metersOK := fieldOf[[]any](body, "meters")
	if !eventsOK || !metersOK {
		return false
	}
	for _, item := range events {
		o, _ := item.(*jsonObject)
		id, idOK := fieldOf[string](o, "id")
		result, resultOK := fieldOf[string](o, "result")
		if !idOK || !resultOK {
			return false
		}
		a.events = append(a.events, UsageEventResult{ID: id, Result: result})
	}
	count := func(o *jsonObject, name string, nullable bool) (*int64, bool) {
		value, _ := o.get(name)
		if value == nil {
			return nil, nullable
		}
		n, ok := value.(jsonNumber)
		i, integer := n.integer()
		// Signed as its digits: only a canonical literal is rebuilt exactly.
		return &i, ok && integer && decimal.MatchString(string(n))
	}
	for _, item := range meters {
		o, _ := item.(*jsonObject)
		if o == nil {
			return false
		}
		key, keyOK := fieldOf[string](o, "key")
		used, usedOK := count(o, "used", false)
		limit, limitOK := count(o, "limit", true)
		overage, overageOK := count(o, "overage", true)
		remaining, remainingOK := count(o, "remaining", true)
		resetsAt, resetsOK := fieldOf[string](o, "resetsAt")
		if value, present := o.get("resetsAt"); present && value == nil {
			resetsOK = true
		}
		if !keyOK || !usedOK || !limitOK || !overageOK || !remainingOK || !resetsOK {
			return false
		}
		a.meters = append(a.meters, UsageBalance{Key: key, Used: *used, Limit: limit, Overage: overage, Remaining: remaining, ResetsAt: resetsAt})
	}
	return true
}

// message is the UTF-8 of SVCU1 (DESIGN.md 19): `SVCU1␟lid␟status␟nonce␟checkedAt␟boundAt␟
// fpDigest␟E␟(id␟result)…␟M␟(key␟used␟limit␟overage␟remaining␟resetsAt)…`, null as empty; false
// when a field is not printable ASCII.
func (a *verifiedUsage) message(nonce, checkedAt, fpDigest string) ([]byte, bool) {
	fields := []string{"SVCU1", a.lid, a.status, nonce, checkedAt, a.boundAt, fpDigest, strconv.Itoa(len(a.events))}
	for _, event := range a.events {
		fields = append(fields, event.ID, event.Result)
	}
	fields = append(fields, strconv.Itoa(len(a.meters)))
	digits := func(n *int64) string {
		if n == nil {
			return ""
		}
		return strconv.FormatInt(*n, 10)
	}
	for _, m := range a.meters {
		used := m.Used
		fields = append(fields, m.Key, digits(&used), digits(m.Limit), digits(m.Overage), digits(m.Remaining), m.ResetsAt)
	}
	for _, field := range fields {
		if !asciiField.MatchString(field) {
			return nil, false
		}
	}
	return []byte(strings.Join(fields, receiptSeparator)), true
}

// addUsageEvent writes a new event as `<dir>/<id>.json` (temporary name, fsync, rename), or fails
// CodeQueueFull with UsageQueueLimit events there.
func addUsageEvent(dir, meter string, amount int64, at string) error {
	if len(usageFiles(dir)) >= UsageQueueLimit {
		return newError(CodeQueueFull, "%d usage events are waiting to be sent for this licence", UsageQueueLimit)
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		panic("licensor: no randomness for an event id: " + err.Error())
	}
	event := UsageEvent{ID: encodeB64U(id), Meter: meter, Amount: amount, At: at}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, _ := json.Marshal(event) // plain fields: cannot fail
	return writeAtomically(dir, filepath.Join(dir, event.ID+".json"), append(data, '\n'))
}

// usageFiles are the event files of a folder; one that does not exist holds none.
func usageFiles(dir string) []string {
	entries, _ := os.ReadDir(dir)
	names := []string{}
	for _, entry := range entries {
		name := entry.Name()
		if strings.HasSuffix(name, ".json") && eventID.MatchString(strings.TrimSuffix(name, ".json")) {
			names = append(names, name)
		}
	}
	return names
}

// usageEvents are a folder's readable events, oldest first (by at, then id); a file that does not
// read as one, named by its own id, is never sent.
func usageEvents(dir string) []UsageEvent {
	events := []UsageEvent{}
	times := map[string]int64{}
	for _, name := range usageFiles(dir) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		value, err := parseJSON(data)
		o, _ := value.(*jsonObject)
		id, _ := fieldOf[string](o, "id")
		meter, _ := fieldOf[string](o, "meter")
		amountText, _ := fieldOf[jsonNumber](o, "amount")
		at, _ := fieldOf[string](o, "at")
		amount, integer := amountText.integer()
		when, timeErr := time.Parse(time.RFC3339Nano, at)
		if err != nil || id+".json" != name || !meterKey.MatchString(meter) || !integer || amount < 1 || amount > MaxUsageAmount || !eventAt.MatchString(at) || timeErr != nil {
			continue
		}
		times[id] = when.UnixMilli()
		events = append(events, UsageEvent{ID: id, Meter: meter, Amount: amount, At: at})
	}
	sort.Slice(events, func(i, j int) bool {
		a, b := events[i], events[j]
		if times[a.ID] != times[b.ID] {
			return times[a.ID] < times[b.ID]
		}
		return a.ID < b.ID
	})
	return events
}

// pendingElsewhere counts the events waiting in the other licences' folders of `<stateDir>/usage/`.
func pendingElsewhere(root, lid string) int {
	entries, _ := os.ReadDir(root)
	count := 0
	for _, entry := range entries {
		if entry.IsDir() && entry.Name() != lid {
			count += len(usageEvents(filepath.Join(root, entry.Name())))
		}
	}
	return count
}
