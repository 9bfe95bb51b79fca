package licensor

import (
	"errors"
	"fmt"
)

// ErrorCode is a constant an application can switch on; the same codes as the TypeScript SDK.
type ErrorCode string

// The error codes. Check never returns them for what the service does: a service's answer is
// data in the CheckResult.
const (
	// CodeInvalidKey: a public key could not be read, or none was given.
	CodeInvalidKey ErrorCode = "INVALID_KEY"
	// CodeInvalidOptions: a Config field is missing or malformed.
	CodeInvalidOptions ErrorCode = "INVALID_OPTIONS"
	// CodeNotCheckable: the licence is OFFLINE, so it has no check path.
	CodeNotCheckable ErrorCode = "NOT_CHECKABLE"
	// CodeTimeout: the service did not answer in time.
	CodeTimeout ErrorCode = "TIMEOUT"
	// CodeNetwork: the service could not be reached.
	CodeNetwork ErrorCode = "NETWORK"
	// CodeHTTPStatus: the service answered with something other than 200 (Error.Status says which).
	CodeHTTPStatus ErrorCode = "HTTP_STATUS"
	// CodeBadResponse: a 200 whose body is not the documented JSON.
	CodeBadResponse ErrorCode = "BAD_RESPONSE"
	// CodeBadReceipt: a check answer whose receipt does not verify for this licence, nonce and machine.
	CodeBadReceipt ErrorCode = "BAD_RECEIPT"
	// CodeBadLicence: a licence (fetched, or the one in use) does not verify with the product's keys.
	CodeBadLicence ErrorCode = "BAD_LICENCE"
	// CodeLidMismatch: a fetched licence verifies but is another licence than the one presented.
	CodeLidMismatch ErrorCode = "LID_MISMATCH"
	// CodeOlderTerm: a fetched term is older (iat) than one this machine has already seen.
	CodeOlderTerm ErrorCode = "OLDER_TERM"
	// CodeBadActivation: an air-gapped activation response is not for this installation, machine,
	// pending request or product, or there is no activation to deactivate (DESIGN.md 14).
	CodeBadActivation ErrorCode = "BAD_ACTIVATION"
	// CodeTrialsOff: StartTrial was refused: the product offers no trials now (DESIGN.md 18).
	CodeTrialsOff ErrorCode = "TRIALS_OFF"
	// CodeTrialUsed: StartTrial was refused: a machine like this one already had a trial
	// (Error.Matched names the equal fingerprint components).
	CodeTrialUsed ErrorCode = "TRIAL_USED"
	// CodeQueueFull: RecordUsage found 1,000 events of this licence still waiting to be sent.
	CodeQueueFull ErrorCode = "QUEUE_FULL"
	// CodeBadManifest: an update's manifest is not signed by the product's keys, or is not this
	// product's release above the current version (DESIGN.md 20).
	CodeBadManifest ErrorCode = "BAD_MANIFEST"
	// CodeDigestMismatch: a downloaded file's size or SHA-256 is not the manifest's; it was deleted.
	CodeDigestMismatch ErrorCode = "DIGEST_MISMATCH"
)

// Sentinel errors, one per code, for errors.Is. Every error the package returns is an *Error
// that unwraps to the sentinel of its code.
var (
	ErrInvalidKey     = errors.New("licensor: invalid key")
	ErrInvalidOptions = errors.New("licensor: invalid options")
	ErrNotCheckable   = errors.New("licensor: licence not checkable")
	ErrTimeout        = errors.New("licensor: timeout")
	ErrNetwork        = errors.New("licensor: network")
	ErrHTTPStatus     = errors.New("licensor: http status")
	ErrBadResponse    = errors.New("licensor: bad response")
	ErrBadReceipt     = errors.New("licensor: bad receipt")
	ErrBadLicence     = errors.New("licensor: bad licence")
	ErrLidMismatch    = errors.New("licensor: lid mismatch")
	ErrOlderTerm      = errors.New("licensor: older term")
	ErrBadActivation  = errors.New("licensor: bad activation")
	ErrTrialsOff      = errors.New("licensor: trials off")
	ErrTrialUsed      = errors.New("licensor: trial used")
	ErrQueueFull      = errors.New("licensor: usage queue full")
	ErrBadManifest    = errors.New("licensor: bad manifest")
	ErrDigestMismatch = errors.New("licensor: digest mismatch")
)

var sentinels = map[ErrorCode]error{
	CodeInvalidKey:     ErrInvalidKey,
	CodeInvalidOptions: ErrInvalidOptions,
	CodeNotCheckable:   ErrNotCheckable,
	CodeTimeout:        ErrTimeout,
	CodeNetwork:        ErrNetwork,
	CodeHTTPStatus:     ErrHTTPStatus,
	CodeBadResponse:    ErrBadResponse,
	CodeBadReceipt:     ErrBadReceipt,
	CodeBadLicence:     ErrBadLicence,
	CodeLidMismatch:    ErrLidMismatch,
	CodeOlderTerm:      ErrOlderTerm,
	CodeBadActivation:  ErrBadActivation,
	CodeTrialsOff:      ErrTrialsOff,
	CodeTrialUsed:      ErrTrialUsed,
	CodeQueueFull:      ErrQueueFull,
	CodeBadManifest:    ErrBadManifest,
	CodeDigestMismatch: ErrDigestMismatch,
}

// Error is the SDK's one error type: a code, a message, and the HTTP status for CodeHTTPStatus.
// Use errors.As to read Status, errors.Is with the Err* sentinels to test the code.
type Error struct {
	Code    ErrorCode
	Message string
	// Status is the HTTP status for CodeHTTPStatus, else 0.
	Status int
	// Reason is the service's reason for a refusal (CodeHTTPStatus), when it named one: REVOKED,
	// NO_SEAT, UPDATES_EXPIRED, ...
	Reason string
	// Matched names the equal fingerprint components for CodeTrialUsed (machine, host, mac, cpu,
	// disk order), else nil.
	Matched []string
	// RetryAfterSeconds is an HTTP 429's Retry-After (a trial limit, a usage rate), else 0 (the
	// service always names at least 1).
	RetryAfterSeconds int
}

func (e *Error) Error() string { return fmt.Sprintf("licensor: %s: %s", e.Code, e.Message) }

// Unwrap returns the sentinel of the error's code.
func (e *Error) Unwrap() error { return sentinels[e.Code] }

func newError(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
