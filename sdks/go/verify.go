package licensor

import (
	"strings"
	"time"
)

// Reason says why a licence is refused, offline or by the latest verified answer.
type Reason string

// Offline refusals (VerifyLicence), then those that only a check gives.
const (
	// Malformed: not exactly the wire form (strict base64url, strict JSON object, claim types).
	Malformed Reason = "MALFORMED"
	// BadSignature: no given key signed it.
	BadSignature Reason = "BAD_SIGNATURE"
	// WrongProduct: signed, but for another product (prd) or organisation (org) than expected.
	WrongProduct Reason = "WRONG_PRODUCT"
	// NotYetValid: before nbf (or a signed PENDING status).
	NotYetValid Reason = "NOT_YET_VALID"
	// Expired: at or after exp + grace days (or a signed EXPIRED status).
	Expired Reason = "EXPIRED"
	// FingerprintMismatch: fp is signed in and this machine matches none of its fingerprints by fpn.
	FingerprintMismatch Reason = "FINGERPRINT_MISMATCH"
	// OlderTerm: a term older (iat) than one this machine has already seen for the same lid.
	OlderTerm Reason = "OLDER_TERM"
	// Revoked: the signed status is REVOKED.
	Revoked Reason = "REVOKED"
	// UnknownLicence: the service does not know the licence (empty signed status).
	UnknownLicence Reason = "UNKNOWN_LICENCE"
	// NoSeat: ACTIVE or GRACE, but this machine holds no seat (another machine holds them).
	NoSeat Reason = "NO_SEAT"
	// NotLicensed: any other signed status.
	NotLicensed Reason = "NOT_LICENSED"
)

// CalendarStatus is a term's status by its claims alone (DESIGN.md 3); revocation is known only online.
type CalendarStatus string

// The calendar statuses.
const (
	StatusPending CalendarStatus = "PENDING"
	StatusActive  CalendarStatus = "ACTIVE"
	StatusGrace   CalendarStatus = "GRACE"
	StatusExpired CalendarStatus = "EXPIRED"
)

const daySeconds = 86400

// GraceEndsAt is exp + grace × 86,400 s exactly (Unix seconds), or nil for a perpetual licence.
func (c *Claims) GraceEndsAt() *int64 {
	if c.Exp == nil {
		return nil
	}
	end := *c.Exp + c.Grace*daySeconds
	return &end
}

// Status is the term's calendar status at now (Unix seconds).
func (c *Claims) Status(now int64) CalendarStatus {
	switch {
	case c.Nbf != nil && now < *c.Nbf:
		return StatusPending
	case c.Exp == nil || now < *c.Exp:
		return StatusActive
	case now < *c.GraceEndsAt():
		return StatusGrace
	}
	return StatusExpired
}

// VerifyOptions tune VerifyLicence; the zero value judges now, on this machine, unpinned.
type VerifyOptions struct {
	// Now is the time to judge the calendar at (zero: the current time).
	Now time.Time
	// Fingerprint is this machine's fingerprint; when empty it is collected (with StableID), and
	// only when the licence signs one in.
	Fingerprint string
	StableID    string
	// ProductKey and Organisation pin the licence to this application: a licence signed for
	// another product (prd) or organisation slug (org) is WrongProduct, so a key shared by two
	// products never lets one's licence run the other.
	ProductKey   string
	Organisation string
}

// LicenceVerification is the offline verdict on a licence string.
type LicenceVerification struct {
	// Signed is true when one of the keys signed a well-formed payload: only then are Claims set
	// and trustworthy. An unsigned verification has the one reason Malformed or BadSignature.
	Signed bool
	// Valid is true exactly when Reasons is empty.
	Valid   bool
	Reasons []Reason
	// Message says why the string is not signed ("" when it is).
	Message string
	Claims  *Claims
	// Status is the calendar status at the time judged.
	Status CalendarStatus
	// FingerprintMatch is nil when no fingerprint is signed in, else whether this machine matches one.
	FingerprintMatch *bool
}

// defaultFingerprintNeed is the service's default fingerprintNeed, for a licence that signs fp without fpn.
const defaultFingerprintNeed = 3

// VerifyLicence verifies a licence string offline with the product's key history: form,
// signature, calendar (nbf, exp plus exact grace), pinning and machine. It never touches the network.
func VerifyLicence(licence string, keys PublicKeys, options VerifyOptions) *LicenceVerification {
	claims, reason, message := readLicence(licence, keys)
	if claims == nil {
		return &LicenceVerification{Reasons: []Reason{reason}, Message: message}
	}
	now := options.Now
	if now.IsZero() {
		now = time.Now()
	}
	v := &LicenceVerification{Signed: true, Claims: claims, Status: claims.Status(floorSeconds(now)), Reasons: []Reason{}}
	if (options.ProductKey != "" && claims.Prd != options.ProductKey) || (options.Organisation != "" && claims.Org != options.Organisation) {
		v.Reasons = append(v.Reasons, WrongProduct)
	}
	switch v.Status {
	case StatusPending:
		v.Reasons = append(v.Reasons, NotYetValid)
	case StatusExpired:
		v.Reasons = append(v.Reasons, Expired)
	}
	if len(claims.Fp) > 0 {
		fingerprint := options.Fingerprint
		if fingerprint == "" {
			fingerprint = CollectFingerprint(options.StableID).Fingerprint
		}
		match := matchesAny(claims, fingerprint)
		v.FingerprintMatch = &match
		if !match {
			v.Reasons = append(v.Reasons, FingerprintMismatch)
		}
	}
	v.Valid = len(v.Reasons) == 0
	return v
}

func floorSeconds(t time.Time) int64 {
	ms := t.UnixMilli()
	if ms < 0 && ms%1000 != 0 {
		return ms/1000 - 1
	}
	return ms / 1000
}

func matchesAny(claims *Claims, fingerprint string) bool {
	mine, err := ParseFingerprint(fingerprint)
	if err != nil {
		return false
	}
	need := defaultFingerprintNeed
	if claims.Fpn != nil {
		need = int(*claims.Fpn)
	}
	for _, signed := range claims.Fp {
		// A signed-in fingerprint the service should never have accepted matches nothing.
		if parts, err := ParseFingerprint(signed); err == nil && FingerprintsMatch(parts, mine, need) {
			return true
		}
	}
	return false
}

// readLicence parses `B64U(payload).B64U(signature)` strictly and checks the signature over the
// payload's base64url text; on failure the claims are nil with the reason and a message.
func readLicence(licence string, keys PublicKeys) (*Claims, Reason, string) {
	payloadPart, signaturePart, found := strings.Cut(licence, ".")
	if !found || strings.Contains(signaturePart, ".") {
		return nil, Malformed, `licence must have exactly two parts separated by "."`
	}
	signature, ok := decodeB64U(signaturePart)
	if !ok {
		return nil, Malformed, "licence signature is not canonical unpadded base64url"
	}
	payload, ok := decodeB64U(payloadPart)
	if !ok {
		return nil, Malformed, "licence payload is not canonical unpadded base64url"
	}
	value, err := parseJSON(payload)
	if err != nil {
		return nil, Malformed, "licence payload is not strict UTF-8 JSON"
	}
	object, ok := value.(*jsonObject)
	if !ok {
		return nil, Malformed, "licence payload is not a JSON object"
	}
	if !allIntegers(object) {
		return nil, Malformed, "licence payload holds a number that is not an integer"
	}
	claims, problem := parseClaims(object)
	if claims == nil {
		return nil, Malformed, "licence " + problem
	}
	if !keys.verifiedBy([]byte(payloadPart), signature) {
		return nil, BadSignature, "licence signature does not verify"
	}
	return claims, "", ""
}
