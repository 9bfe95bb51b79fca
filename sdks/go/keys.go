package licensor

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/pem"
	"strings"
)

// PublicKeys is a product's key history (GET /products/{id}/keys): a licence or receipt signed
// by any of them verifies, so an application shipped before a key rotation keeps working.
type PublicKeys []crypto.PublicKey

// ParsePublicKeys reads PEM public keys: SPKI ("PUBLIC KEY", as the service serves them), PKCS#1
// RSA ("RSA PUBLIC KEY") or an X.509 certificate (the product's certificate download). A key that
// cannot be read, a private key, or no key at all is an *Error with CodeInvalidKey.
func ParsePublicKeys(pems ...string) (PublicKeys, error) {
	if len(pems) == 0 {
		return nil, newError(CodeInvalidKey, "at least one public key is needed")
	}
	keys := make(PublicKeys, 0, len(pems))
	for i, text := range pems {
		key, problem := parsePublicKey(text)
		if problem != "" {
			return nil, newError(CodeInvalidKey, "public key %d cannot be read: %s", i+1, problem)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

func parsePublicKey(text string) (crypto.PublicKey, string) {
	block, _ := pem.Decode([]byte(strings.TrimSpace(text)))
	if block == nil {
		return nil, "not PEM"
	}
	switch block.Type {
	case "PUBLIC KEY":
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, err.Error()
		}
		return key, ""
	case "RSA PUBLIC KEY":
		key, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, err.Error()
		}
		return key, ""
	case "CERTIFICATE":
		certificate, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err.Error()
		}
		return certificate.PublicKey, ""
	}
	if strings.Contains(block.Type, "PRIVATE") {
		// Verifying needs only the public half; a private key has no place inside an application.
		return nil, "a private key, not a public key"
	}
	return nil, "unexpected PEM type " + block.Type
}

// verifySignature reports whether key signed data, for the six algorithms of DESIGN.md 2:
// Ed25519, RSA 2048/3072/4096 PKCS#1 v1.5 with SHA-256, ECDSA P-256 with SHA-256 and P-384 with
// SHA-384 (DER signatures). Any other key verifies nothing.
func verifySignature(key crypto.PublicKey, data, signature []byte) bool {
	switch k := key.(type) {
	case ed25519.PublicKey:
		return len(k) == ed25519.PublicKeySize && ed25519.Verify(k, data, signature)
	case *rsa.PublicKey:
		if bits := k.N.BitLen(); bits != 2048 && bits != 3072 && bits != 4096 {
			return false
		}
		digest := sha256.Sum256(data)
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], signature) == nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			digest := sha256.Sum256(data)
			return ecdsa.VerifyASN1(k, digest[:], signature)
		case elliptic.P384():
			digest := sha512.Sum384(data)
			return ecdsa.VerifyASN1(k, digest[:], signature)
		}
	}
	return false
}

// verifiedBy reports whether any of the keys signed data.
func (keys PublicKeys) verifiedBy(data, signature []byte) bool {
	for _, key := range keys {
		if verifySignature(key, data, signature) {
			return true
		}
	}
	return false
}
