package licensor

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// decodeB64U decodes canonical unpadded base64url (DESIGN.md 2): text that does not re-encode
// to itself (padding, stray characters, the + / alphabet, non-zero trailing bits) is refused,
// and so is the empty string.
func decodeB64U(text string) ([]byte, bool) {
	if text == "" {
		return nil, false
	}
	data, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || base64.RawURLEncoding.EncodeToString(data) != text {
		return nil, false
	}
	return data, true
}

func encodeB64U(data []byte) string { return base64.RawURLEncoding.EncodeToString(data) }

// sha256Hex is the first n lowercase hex characters of SHA-256 over text's UTF-8 bytes.
func sha256Hex(text string, n int) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])[:n]
}
