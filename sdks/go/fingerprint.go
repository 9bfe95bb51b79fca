package licensor

import (
	"regexp"
	"strings"
)

// FingerprintComponents are the five components of a fingerprint, in the order the body lists them.
var FingerprintComponents = [5]string{"machine", "host", "mac", "cpu", "disk"}

// MissingComponent stands for a component that could not be read.
const MissingComponent = "-"

// FingerprintParts are a fingerprint's hashed components (16 lowercase hex characters, or "-"),
// in the order of FingerprintComponents.
type FingerprintParts [5]string

// RawComponents are the raw values a fingerprint is made from, in the order of
// FingerprintComponents; "" means the component could not be read.
type RawComponents [5]string

const (
	fingerprintPrefix = "SVC1"
	// The longest well-formed fingerprint is 161 characters; refuse big inputs before hashing them.
	maxFingerprintLength = 256
)

var (
	partPattern     = regexp.MustCompile(`^(?:[0-9a-f]{16}|-)$`)
	checksumPattern = regexp.MustCompile(`^[0-9a-f]{8}$`)
)

// HashComponent is the first 16 lowercase hex characters of SHA-256 over a raw value's UTF-8 bytes.
func HashComponent(raw string) string { return sha256Hex(raw, 16) }

// BuildFingerprint hashes raw components into `SVC1.<body>.<checksum>` (DESIGN.md 2); an empty
// value counts as unreadable.
func BuildFingerprint(raw RawComponents) string {
	var parts FingerprintParts
	for i, value := range raw {
		parts[i] = MissingComponent
		if value != "" {
			parts[i] = HashComponent(value)
		}
	}
	return parts.String()
}

// String assembles the fingerprint from hashed parts.
func (p FingerprintParts) String() string {
	fields := make([]string, len(p))
	for i, name := range FingerprintComponents {
		fields[i] = name + "=" + p[i]
	}
	body := encodeB64U([]byte(strings.Join(fields, ";")))
	return fingerprintPrefix + "." + body + "." + sha256Hex(fingerprintPrefix+"."+body, 8)
}

// FingerprintError says why a string is not a fingerprint; Problem is one of PREFIX, STRUCTURE,
// ENCODING, COMPONENTS, COMPONENT_VALUE or CHECKSUM.
type FingerprintError struct {
	Problem string
	Message string
}

func (e *FingerprintError) Error() string { return "licensor: " + e.Message }

// ParseFingerprint decodes and checks a fingerprint; any deviation from the exact form is a
// *FingerprintError.
func ParseFingerprint(text string) (FingerprintParts, error) {
	var parts FingerprintParts
	fail := func(problem, message string) (FingerprintParts, error) {
		return parts, &FingerprintError{Problem: problem, Message: message}
	}
	if !strings.HasPrefix(text, fingerprintPrefix+".") {
		return fail("PREFIX", `fingerprint must start with "SVC1."`)
	}
	if len(text) > maxFingerprintLength {
		return fail("STRUCTURE", "fingerprint is too long")
	}
	pieces := strings.Split(text, ".")
	if len(pieces) != 3 {
		return fail("STRUCTURE", "fingerprint must have three dot-separated parts: SVC1.<body>.<checksum>")
	}
	body, checksum := pieces[1], pieces[2]
	decoded, ok := decodeB64U(body)
	if !ok {
		return fail("ENCODING", "fingerprint body is not canonical unpadded base64url")
	}
	if !checksumPattern.MatchString(checksum) {
		return fail("STRUCTURE", "fingerprint checksum must be 8 lowercase hex characters")
	}
	fields := strings.Split(string(decoded), ";")
	if len(fields) != len(FingerprintComponents) {
		return fail("COMPONENTS", "fingerprint body must list exactly machine, host, mac, cpu, disk")
	}
	for i, name := range FingerprintComponents {
		if !strings.HasPrefix(fields[i], name+"=") {
			return fail("COMPONENTS", "fingerprint body must list exactly machine, host, mac, cpu, disk, in that order")
		}
		value := fields[i][len(name)+1:]
		if !partPattern.MatchString(value) {
			return fail("COMPONENT_VALUE", `fingerprint component "`+name+`" must be 16 lowercase hex characters or "-"`)
		}
		parts[i] = value
	}
	if sha256Hex(fingerprintPrefix+"."+body, 8) != checksum {
		return fail("CHECKSUM", "fingerprint checksum does not match its body")
	}
	return parts, nil
}

// MatchScore is the number of components present in both and equal.
func MatchScore(a, b FingerprintParts) int {
	score := 0
	for i := range a {
		if a[i] != MissingComponent && a[i] == b[i] {
			score++
		}
	}
	return score
}

// FingerprintsMatch reports the same machine: at least need (1 to 5) components present in both and equal.
func FingerprintsMatch(a, b FingerprintParts, need int) bool {
	return need >= 1 && need <= len(a) && MatchScore(a, b) >= need
}

// FpDigest is the first 32 lowercase hex characters of SHA-256 over the fingerprint as sent.
func FpDigest(fingerprint string) string { return sha256Hex(fingerprint, 32) }

// FingerprintReport is this machine's fingerprint as CollectFingerprint found it.
type FingerprintReport struct {
	// Fingerprint is `SVC1.<body>.<checksum>`: what the check API receives.
	Fingerprint string
	// Parts are the hashed components. Raw values are never kept.
	Parts FingerprintParts
	// Readable says which components could be read, in the order of FingerprintComponents.
	Readable [5]bool
	// StableID is true when the machine component is the stableID argument.
	StableID bool
}

// CollectFingerprint reads this machine's five components (machine id, host name, primary MAC,
// CPU model, system disk id), hashes them here and returns the fingerprint; raw values never
// leave this function. A non-empty stableID replaces the machine id: for containers and cloned
// VMs, whose machine id is shared or missing, pass an id the installation keeps for itself.
// The raw sources per operating system are those of the TypeScript SDK (packages/sdk README).
func CollectFingerprint(stableID string) FingerprintReport {
	raw := readRawComponents()
	if stableID != "" {
		raw[0] = stableID
	}
	report := FingerprintReport{Fingerprint: BuildFingerprint(raw), StableID: stableID != ""}
	report.Parts, _ = ParseFingerprint(report.Fingerprint)
	for i, part := range report.Parts {
		report.Readable[i] = part != MissingComponent
	}
	return report
}
