package licensor

import (
	"crypto/ed25519"
	"regexp"
	"strconv"
	"strings"
)

// The three texts of air-gapped activation (DESIGN.md 14, docs/protocol.md section 11), each
// TAG.<B64U(payload JSON)>.<B64U(signature over the ASCII of "TAG.<B64U(payload JSON)>")>: the
// request (SVCA1) and the deactivation (SVCD1) signed by the installation's Ed25519 device key,
// the response (SVCX1) by the product key that signed the licence. Times are Unix seconds.

// airGapFields holds the fields of any of the three texts; each format uses some of them.
type airGapFields struct {
	Lid, Aid, Fp, Dpk, Nonce, Status string
	Iat, BoundAt, Until              int64
}

type airGapFormat struct {
	tag, what string
	fields    []string // in wire order
}

var (
	requestFormat      = airGapFormat{"SVCA1", "activation request", []string{"lid", "fp", "dpk", "nonce", "iat"}}
	responseFormat     = airGapFormat{"SVCX1", "activation response", []string{"lid", "aid", "fp", "dpk", "nonce", "status", "iat", "boundAt", "until"}}
	deactivationFormat = airGapFormat{"SVCD1", "deactivation code", []string{"lid", "aid", "iat"}}
)

// maxAirGapText is far above any well-formed text (a request is about 450 characters), so big
// inputs are refused unread.
const maxAirGapText = 4096

var (
	activationNonce = regexp.MustCompile(`^[A-Za-z0-9_-]{16,128}$`)
	activationID    = regexp.MustCompile(`^[0-9]{1,20}$`)
)

// slot is the named field: a *string or a *int64 (Unix seconds).
func (f *airGapFields) slot(name string) any {
	switch name {
	case "lid":
		return &f.Lid
	case "aid":
		return &f.Aid
	case "fp":
		return &f.Fp
	case "dpk":
		return &f.Dpk
	case "nonce":
		return &f.Nonce
	case "status":
		return &f.Status
	case "iat":
		return &f.Iat
	case "boundAt":
		return &f.BoundAt
	}
	return &f.Until
}

// stringRule says whether a string field keeps its rule, and the rule's words when not.
func stringRule(name, value string) (bool, string) {
	switch name {
	case "lid":
		return value != "" && len([]rune(value)) <= 128, "a licence id of 1 to 128 characters"
	case "aid":
		return activationID.MatchString(value), "an activation id of 1 to 20 digits"
	case "fp":
		_, err := ParseFingerprint(value)
		return err == nil, "a fingerprint"
	case "dpk":
		key, ok := decodeB64U(value)
		return ok && len(key) == ed25519.PublicKeySize, "base64url of 32 bytes"
	case "nonce":
		return activationNonce.MatchString(value), "16 to 128 characters of A-Z a-z 0-9 _ -"
	}
	return value == "ACTIVE" || value == "GRACE", "ACTIVE or GRACE"
}

// payload is the JSON JSON.stringify writes for these fields in wire order.
func (format airGapFormat) payload(f *airGapFields) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range format.fields {
		if i > 0 {
			b.WriteByte(',')
		}
		quoteJSON(&b, name)
		b.WriteByte(':')
		switch p := f.slot(name).(type) {
		case *string:
			quoteJSON(&b, *p)
		case *int64:
			b.WriteString(strconv.FormatInt(*p, 10))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// sign makes the text with an Ed25519 key (the device key).
func (format airGapFormat) sign(f *airGapFields, key ed25519.PrivateKey) string {
	signedPart := format.tag + "." + encodeB64U([]byte(format.payload(f)))
	return signedPart + "." + encodeB64U(ed25519.Sign(key, []byte(signedPart)))
}

// airGapText is a text that parsed: its fields, the signed part and the signature.
type airGapText struct {
	text       string
	signedPart string
	signature  []byte
	fields     airGapFields
}

// compactText removes every whitespace character: how a typed or grouped text is read back.
func compactText(text string) string { return strings.Join(strings.Fields(text), "") }

// groupsOfFive cuts the text into pieces of five characters joined by single spaces, for reading
// out and typing.
func groupsOfFive(text string) string {
	var groups []string
	for len(text) > 5 {
		groups = append(groups, text[:5])
		text = text[5:]
	}
	return strings.Join(append(groups, text), " ")
}

// parse reads a text strictly: exact tag, canonical base64url, strict JSON, an object with
// exactly the format's fields, each of its type and rule. The problem is "" when it parsed.
func (format airGapFormat) parse(text string) (*airGapText, string) {
	what := format.what
	if len(text) > maxAirGapText {
		return nil, what + " is too long"
	}
	pieces := strings.Split(text, ".")
	if pieces[0] != format.tag {
		return nil, what + ` must start with "` + format.tag + `."`
	}
	if len(pieces) != 3 {
		return nil, what + " must have three parts: " + format.tag + ".<payload>.<signature>"
	}
	payload, ok := decodeB64U(pieces[1])
	if !ok {
		return nil, what + " payload is not canonical base64url"
	}
	signature, ok := decodeB64U(pieces[2])
	if !ok {
		return nil, what + " signature is not canonical base64url"
	}
	value, err := parseJSON(payload)
	object, isObject := value.(*jsonObject)
	if err != nil || !isObject {
		return nil, what + " payload is not a strict JSON object"
	}
	if len(object.members) != len(format.fields) {
		return nil, what + " must have exactly the fields " + strings.Join(format.fields, ", ")
	}
	parsed := &airGapText{text: text, signedPart: format.tag + "." + pieces[1], signature: signature}
	for _, name := range format.fields {
		member, present := object.get(name)
		if !present {
			return nil, what + ` lacks the field "` + name + `"`
		}
		switch p := parsed.fields.slot(name).(type) {
		case *string:
			s, isString := member.(string)
			good, rule := stringRule(name, s)
			if !isString || !good {
				return nil, what + ` field "` + name + `" must be ` + rule
			}
			*p = s
		case *int64:
			n, isNumber := member.(jsonNumber)
			seconds, isInteger := n.integer()
			if !isNumber || !isInteger || seconds < 0 {
				return nil, what + ` field "` + name + `" must be Unix seconds`
			}
			*p = seconds
		}
	}
	return parsed, ""
}

// verifiedBy reports whether any of the keys signed the text.
func (t *airGapText) verifiedBy(keys PublicKeys) bool {
	return keys.verifiedBy([]byte(t.signedPart), t.signature)
}
