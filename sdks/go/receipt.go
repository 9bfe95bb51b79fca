package licensor

import "strings"

// ReceiptFields are the signed fields of a check answer, as the exact strings of the response
// ("" for a field the answer omits).
type ReceiptFields struct {
	Lid       string
	Status    string
	Nonce     string
	CheckedAt string
	BoundAt   string
	FpDigest  string
	// LeaseEndsAt is signed by SVCR2 receipts only (floating licences, DESIGN.md 13).
	LeaseEndsAt string
}

// ReceiptTag names the receipt format: SVCR1 for terms of v 3 and 4, SVCR2 (which signs
// leaseEndsAt too) for floating terms, v 5.
type ReceiptTag string

// The receipt tags.
const (
	SVCR1 ReceiptTag = "SVCR1"
	SVCR2 ReceiptTag = "SVCR2"
)

// ReceiptTagOf is the tag a check answer about this term is signed under: the presented term's v
// alone decides, never the answer.
func ReceiptTagOf(claims *Claims) ReceiptTag {
	if claims.V == 5 {
		return SVCR2
	}
	return SVCR1
}

const receiptSeparator = "\x1f"

// receiptMessage is the UTF-8 of `SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest`, or for
// SVCR2 the same with `␟leaseEndsAt`; false when a field holds the separator (two field sets
// would then sign alike), for an unknown tag, and for a lease end under SVCR1 (it cannot vouch
// for one).
func receiptMessage(tag ReceiptTag, f ReceiptFields) ([]byte, bool) {
	fields := []string{string(tag), f.Lid, f.Status, f.Nonce, f.CheckedAt, f.BoundAt, f.FpDigest}
	switch {
	case tag == SVCR2:
		fields = append(fields, f.LeaseEndsAt)
	case tag != SVCR1 || f.LeaseEndsAt != "":
		return nil, false
	}
	for _, field := range fields[1:] {
		if strings.Contains(field, receiptSeparator) {
			return nil, false
		}
	}
	return []byte(strings.Join(fields, receiptSeparator)), true
}

// VerifyReceipt reports whether one of the keys signed exactly these fields under this tag; false
// for anything malformed.
func VerifyReceipt(tag ReceiptTag, fields ReceiptFields, receipt string, keys PublicKeys) bool {
	message, ok := receiptMessage(tag, fields)
	if !ok {
		return false
	}
	signature, ok := decodeB64U(receipt)
	return ok && keys.verifiedBy(message, signature)
}

// Grants is the verdict from signed fields alone (DESIGN.md 2; valid and reason are unsigned):
// licensed on this machine exactly when the status is ACTIVE or GRACE and a seat is bound; under
// SVCR2 a lease end must be signed too (and the lease counts only until then).
func (f ReceiptFields) Grants(tag ReceiptTag) bool {
	return (f.Status == "ACTIVE" || f.Status == "GRACE") && f.BoundAt != "" && (tag == SVCR1 || f.LeaseEndsAt != "")
}
