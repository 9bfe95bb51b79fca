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
}

const (
	receiptTag       = "SVCR1"
	receiptSeparator = "\x1f"
)

// receiptMessage is the UTF-8 of `SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest`; false when
// a field holds the separator (two field sets would then sign alike).
func receiptMessage(f ReceiptFields) ([]byte, bool) {
	fields := []string{receiptTag, f.Lid, f.Status, f.Nonce, f.CheckedAt, f.BoundAt, f.FpDigest}
	for _, field := range fields[1:] {
		if strings.Contains(field, receiptSeparator) {
			return nil, false
		}
	}
	return []byte(strings.Join(fields, receiptSeparator)), true
}

// VerifyReceipt reports whether one of the keys signed exactly these fields; false for anything
// malformed.
func VerifyReceipt(fields ReceiptFields, receipt string, keys PublicKeys) bool {
	message, ok := receiptMessage(fields)
	if !ok {
		return false
	}
	signature, ok := decodeB64U(receipt)
	return ok && keys.verifiedBy(message, signature)
}

// Grants is the verdict from signed fields alone (DESIGN.md 2; valid and reason are unsigned):
// licensed on this machine exactly when the status is ACTIVE or GRACE and a seat is bound.
func (f ReceiptFields) Grants() bool {
	return (f.Status == "ACTIVE" || f.Status == "GRACE") && f.BoundAt != ""
}
