// Command driver is the Go SDK's test driver (DESIGN.md 16): one JSON request a line on stdin,
// one JSON answer a line on stdout, in order; logs go to stderr. It is a test program, never part
// of the library (internal/ cannot be imported from outside the module).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"licensor.dev/licensor"
)

// request is any request line; each op reads its own fields (docs/protocol.md, section 10).
type request struct {
	Op          string   `json:"op"`
	BaseURL     string   `json:"baseUrl"`
	Slug        string   `json:"slug"`
	ProductKey  *string  `json:"productKey"`
	CheckID     string   `json:"checkId"`
	CheckToken  string   `json:"checkToken"`
	PublicKeys  []string `json:"publicKeys"`
	Licence     *string  `json:"licence"`
	StateDir    string   `json:"stateDir"`
	TimeoutMs   *int64   `json:"timeoutMs"`
	OffsetMs    *int64   `json:"offsetMs"`
	Fingerprint string   `json:"fingerprint"`
	Response    *string  `json:"response"`
	Until       *string  `json:"until"`
	Email       *string  `json:"email"`
	// Meter and Amount are recordUsage's, handed to the SDK as given (amount 1 when absent).
	Meter  *string      `json:"meter"`
	Amount *json.Number `json:"amount"`
	// CurrentVersion, Platform, Arch and Channel are checkForUpdate's; Filename and To download's.
	CurrentVersion *string `json:"currentVersion"`
	Platform       *string `json:"platform"`
	Arch           *string `json:"arch"`
	Channel        *string `json:"channel"`
	Filename       *string `json:"filename"`
	To             *string `json:"to"`
}

type failure struct {
	Code    licensor.ErrorCode `json:"code"`
	Message string             `json:"message"`
	Status  int                `json:"status,omitempty"`
	// Reason is the service's reason beside HTTP_STATUS, when its answer had one.
	Reason  string   `json:"reason,omitempty"`
	Matched []string `json:"matched,omitempty"`
	// RetryAfterSeconds is a 429's Retry-After.
	RetryAfterSeconds int `json:"retryAfterSeconds,omitempty"`
}

type answer struct {
	OK     bool     `json:"ok"`
	Result any      `json:"result,omitempty"`
	Error  *failure `json:"error,omitempty"`
}

// driver holds the configuration and the overrides that hold for every later op.
type driver struct {
	config      *licensor.Config
	client      *licensor.Client
	configErr   error
	offsetMs    int64
	fingerprint string
	// update is what the last checkForUpdate returned, for download; none after one that failed
	// or a new configure.
	update *licensor.Update
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("go driver: ")
	d := &driver{}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 16<<20)
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) == "" {
			continue
		}
		if err := out.Encode(d.handle(in.Bytes())); err != nil {
			log.Fatalf("cannot write an answer: %v", err)
		}
	}
	if err := in.Err(); err != nil {
		log.Fatalf("cannot read a request: %v", err)
	}
}

func invalid(message string) answer {
	return answer{Error: &failure{Code: licensor.CodeInvalidOptions, Message: message}}
}

func fail(err error) answer {
	var e *licensor.Error
	if errors.As(err, &e) {
		return answer{Error: &failure{Code: e.Code, Message: e.Message, Status: e.Status, Reason: e.Reason, Matched: e.Matched, RetryAfterSeconds: e.RetryAfterSeconds}}
	}
	return invalid(err.Error())
}

func ok(result any) answer { return answer{OK: true, Result: result} }

func (d *driver) now() time.Time {
	return time.Now().Add(time.Duration(d.offsetMs) * time.Millisecond)
}

func (d *driver) handle(line []byte) answer {
	var r request
	if err := json.Unmarshal(line, &r); err != nil || !strings.HasPrefix(strings.TrimSpace(string(line)), "{") {
		return invalid("a request is one JSON object a line, with fields of the right types")
	}
	ctx := context.Background()
	switch r.Op {
	case "configure":
		return d.configure(r)
	case "setClock":
		if r.OffsetMs == nil {
			return invalid("offsetMs must be an integer")
		}
		d.offsetMs = *r.OffsetMs
		return ok(map[string]any{})
	case "setFingerprint":
		if r.Fingerprint == "" {
			return invalid("fingerprint must be a non-empty string")
		}
		d.fingerprint = r.Fingerprint
		if d.config != nil {
			d.rebuild()
		}
		return ok(map[string]any{})
	case "fingerprint":
		return ok(map[string]any{"fingerprint": licensor.CollectFingerprint("").Fingerprint})
	case "verify":
		return d.verify(r)
	case "startTrial":
		return d.startTrial(ctx, r)
	}
	if d.client == nil && needsClient[r.Op] {
		if d.configErr != nil {
			return fail(d.configErr)
		}
		if d.config != nil {
			return invalid("no licence is held: configure one or start a trial")
		}
		return invalid("configure first")
	}
	switch r.Op {
	case "check":
		return ok(checkResult(d.client.Check(ctx)))
	case "borrow":
		return d.borrow(ctx, r)
	case "release":
		result, err := d.client.Release(ctx)
		var e *licensor.Error
		if err != nil && (errors.As(err, &e) || !result.Released) {
			return fail(err)
		}
		if err != nil {
			log.Printf("released, but the stored answer could not be forgotten: %v", err)
		}
		body := map[string]any{"released": result.Released}
		if !result.Released {
			body["reason"] = result.Reason
		}
		return ok(body)
	case "fetch":
		licence, err := d.client.Fetch(ctx)
		if err != nil {
			return fail(err)
		}
		return ok(map[string]any{"licence": licence})
	case "clearCache":
		if err := d.client.ClearCache(); err != nil {
			return fail(err)
		}
		return ok(map[string]any{})
	case "activationRequest":
		request, err := d.client.CreateAirGapRequest()
		if err != nil {
			return fail(err)
		}
		return ok(map[string]any{"request": request.Request, "groups": request.Groups})
	case "activateAirGap":
		if r.Response == nil || *r.Response == "" {
			return invalid("response must be a non-empty string")
		}
		activation, err := d.client.ActivateAirGapped(*r.Response)
		if err != nil {
			return fail(err)
		}
		return ok(map[string]any{"until": activation.Until.Format("2006-01-02T15:04:05.000Z")})
	case "recordUsage":
		if r.Meter == nil {
			return invalid("meter must be a string")
		}
		amount := int64(1)
		if r.Amount != nil {
			var err error
			if amount, err = r.Amount.Int64(); err != nil {
				return invalid("amount must be an integer")
			}
		}
		report, err := d.client.RecordUsage(ctx, *r.Meter, amount)
		if err != nil {
			return fail(err)
		}
		return ok(usageResult(report))
	case "usage":
		report, err := d.client.Usage(ctx)
		if err != nil {
			return fail(err)
		}
		return ok(usageResult(report))
	case "checkForUpdate":
		return d.checkForUpdate(ctx, r)
	case "download":
		return d.download(ctx, r)
	case "feedUrls":
		urls, err := d.client.FeedURLs(ctx)
		if err != nil {
			return fail(err)
		}
		return ok(urls)
	case "deactivateAirGap":
		deactivation, err := d.client.DeactivateAirGapped()
		if err != nil {
			return fail(err)
		}
		return ok(map[string]any{"code": deactivation.Code})
	}
	return invalid(fmt.Sprintf("unknown op %q", r.Op))
}

// needsClient: the ops that answer "configure first" before a configure.
var needsClient = map[string]bool{
	"check": true, "borrow": true, "release": true, "fetch": true, "clearCache": true,
	"activationRequest": true, "activateAirGap": true, "deactivateAirGap": true, "recordUsage": true, "usage": true,
	"checkForUpdate": true, "download": true, "feedUrls": true,
}

func (d *driver) configure(r request) answer {
	for name, value := range map[string]string{"baseUrl": r.BaseURL, "slug": r.Slug, "checkId": r.CheckID, "checkToken": r.CheckToken, "stateDir": r.StateDir} {
		if value == "" {
			return invalid(name + " must be a non-empty string")
		}
	}
	// Without a licence, until one is held, only startTrial and the overrides work (DESIGN.md 18).
	if r.Licence != nil && *r.Licence == "" {
		return invalid("licence must be a non-empty string")
	}
	if r.ProductKey != nil && *r.ProductKey == "" {
		return invalid("productKey must be a non-empty string")
	}
	if len(r.PublicKeys) == 0 {
		return invalid("publicKeys must be a non-empty list of PEM strings")
	}
	if r.TimeoutMs != nil && *r.TimeoutMs < 1 {
		return invalid("timeoutMs must be a positive integer")
	}
	config := licensor.Config{
		BaseURL: r.BaseURL, Slug: r.Slug, CheckID: r.CheckID, CheckToken: r.CheckToken, PublicKeys: r.PublicKeys,
		Store: licensor.FileStore(r.StateDir), Clock: d.now,
	}
	if r.Licence != nil {
		config.Licence = *r.Licence
	}
	if r.ProductKey != nil {
		config.ProductKey = *r.ProductKey
	}
	if r.TimeoutMs != nil {
		config.Timeout = time.Duration(*r.TimeoutMs) * time.Millisecond
	}
	d.config = &config
	d.client, d.update = nil, nil
	d.rebuild()
	if d.configErr != nil {
		return fail(d.configErr)
	}
	return ok(map[string]any{})
}

// rebuild makes a client from the configuration, the fingerprint override and the licence in
// use (a fetched term stays in use).
func (d *driver) rebuild() {
	config := *d.config
	config.Fingerprint = d.fingerprint
	if d.client != nil {
		config.Licence = d.client.Licence()
	}
	if config.Licence == "" {
		d.client, d.configErr = nil, nil
		return
	}
	d.client, d.configErr = licensor.NewClient(config)
}

// startTrial starts a trial with the configuration (its licence left out); the driver then holds
// the trial licence.
func (d *driver) startTrial(ctx context.Context, r request) answer {
	if d.config == nil {
		return invalid("configure first")
	}
	email := ""
	if r.Email != nil {
		if *r.Email == "" {
			return invalid("email must be a non-empty string")
		}
		email = *r.Email
	}
	config := *d.config
	config.Fingerprint = d.fingerprint
	start, err := licensor.StartTrial(ctx, config, email)
	if err != nil {
		return fail(err)
	}
	d.config.Licence = start.Licence
	d.client, d.configErr = start.Client, nil
	return ok(map[string]any{
		"licence": start.Licence, "lid": start.Result.Licence.Claims.Lid, "created": start.Created,
		"endsAt": start.EndsAt.Format("2006-01-02T15:04:05.000Z"), "state": start.Result.State, "reasons": start.Result.Reasons,
	})
}

func (d *driver) verify(r request) answer {
	if d.config == nil {
		return invalid("configure first")
	}
	keys, err := licensor.ParsePublicKeys(d.config.PublicKeys...)
	if err != nil {
		return fail(err)
	}
	licence := d.config.Licence
	if d.client != nil {
		licence = d.client.Licence()
	}
	if r.Licence != nil {
		licence = *r.Licence
	} else if licence == "" {
		return invalid("no licence is held: configure one or start a trial")
	}
	v := licensor.VerifyLicence(licence, keys, licensor.VerifyOptions{
		Now: d.now(), Fingerprint: d.fingerprint, ProductKey: d.config.ProductKey, Organisation: d.config.Slug,
	})
	return ok(map[string]any{"valid": v.Valid, "reasons": v.Reasons, "claims": v.Claims})
}

// borrow answers a check result, as the other SDKs' borrow does.
func (d *driver) borrow(ctx context.Context, r request) answer {
	if r.Until == nil {
		return invalid("until must be an ISO 8601 time with its offset")
	}
	until, err := time.Parse(time.RFC3339Nano, *r.Until)
	if err != nil {
		return invalid("until must be an ISO 8601 time with its offset")
	}
	result, err := d.client.Borrow(ctx, until)
	if err != nil {
		return fail(err)
	}
	return ok(checkResult(result))
}

// checkForUpdate answers {update, blocked} and holds the update for download. The fields are
// handed to the SDK as given, so that it refuses what the feed would.
func (d *driver) checkForUpdate(ctx context.Context, r request) answer {
	d.update = nil
	query := licensor.UpdateQuery{}
	for target, value := range map[*string]*string{&query.CurrentVersion: r.CurrentVersion, &query.Platform: r.Platform, &query.Arch: r.Arch, &query.Channel: r.Channel} {
		if value != nil && *value == "" {
			return invalid("currentVersion, platform, arch and channel must be non-empty strings")
		}
		if value != nil {
			*target = *value
		}
	}
	found, err := d.client.CheckForUpdate(ctx, query)
	if err != nil {
		return fail(err)
	}
	d.update = found.Update
	return ok(map[string]any{"update": found.Update, "blocked": found.Blocked})
}

// download fetches a file of the held update into the folder to.
func (d *driver) download(ctx context.Context, r request) answer {
	if d.update == nil {
		return answer{Error: &failure{Code: "NO_UPDATE", Message: "no update is held: checkForUpdate found none"}}
	}
	if r.Filename == nil || r.To == nil {
		return invalid("filename and to must be strings")
	}
	file, err := d.client.Download(ctx, d.update, *r.Filename, *r.To)
	if err != nil {
		return fail(err)
	}
	return ok(file)
}

func checkResult(r *licensor.CheckResult) map[string]any {
	result := map[string]any{
		"state": r.State, "reasons": r.Reasons, "fresh": nil, "clockRollback": r.ClockRollback,
		"ageSeconds": nil, "noAnswer": nil, "renewed": r.Renewed, "airGapped": r.AirGapped, "leaseEndsAt": nil,
		"trial": nil,
	}
	if t := r.Trial; t != nil {
		result["trial"] = map[string]any{"endsAt": t.EndsAt.Format("2006-01-02T15:04:05.000Z"), "secondsLeft": t.SecondsLeft, "converted": t.Converted}
	}
	if r.Answer != nil {
		result["fresh"] = r.Answer.Fresh
		result["ageSeconds"] = float64(r.Age.Milliseconds()) / 1000
		if r.Answer.LeaseEndsAt != "" {
			result["leaseEndsAt"] = r.Answer.LeaseEndsAt
		}
	}
	result["noAnswer"] = noAnswerOf(r.NoAnswer)
	return result
}

// noAnswerOf is the driver's {code, status?}, or nil.
func noAnswerOf(n *licensor.NoAnswer) any {
	if n == nil {
		return nil
	}
	noAnswer := map[string]any{"code": n.Code}
	if n.Status != 0 {
		noAnswer["status"] = n.Status
	}
	return noAnswer
}

// usageResult is DESIGN.md 19's {licensed, reason, events, meters, fresh, pending, noAnswer}.
func usageResult(r *licensor.UsageReport) map[string]any {
	events := []map[string]any{}
	for _, e := range r.Events {
		events = append(events, map[string]any{"id": e.ID, "meter": e.Meter, "amount": e.Amount, "result": e.Result})
	}
	result := map[string]any{
		"licensed": r.Licensed, "reason": nil, "events": events, "meters": nil, "fresh": r.Fresh,
		"pending": r.Pending, "noAnswer": noAnswerOf(r.NoAnswer),
	}
	if r.Reason != "" {
		result["reason"] = r.Reason
	}
	if r.Meters != nil {
		meters := []map[string]any{}
		for _, m := range r.Meters {
			var resetsAt any
			if m.ResetsAt != "" {
				resetsAt = m.ResetsAt
			}
			meters = append(meters, map[string]any{"key": m.Key, "used": m.Used, "limit": m.Limit, "overage": m.Overage,
				"remaining": m.Remaining, "resetsAt": resetsAt, "pending": m.Pending})
		}
		result["meters"] = meters
	}
	return result
}
