// Package licensor is the Go client SDK for Licensor: offline verification of licence strings,
// machine fingerprints, and the online licence check with signed receipts.
//
// Nothing in the package touches the network on import or inside [VerifyLicence]; only
// [Client.Check], [Client.Fetch] and [Client.Release] do. It uses the standard library only.
//
// Verify a licence offline:
//
//	keys, err := licensor.ParsePublicKeys(currentPEM, previousPEM)
//	if err != nil { ... } // errors.Is(err, licensor.ErrInvalidKey)
//	v := licensor.VerifyLicence(licenceString, keys, licensor.VerifyOptions{ProductKey: "acme-cad"})
//	if !v.Valid { log.Printf("refused: %v", v.Reasons) }
//
// Check it online (DESIGN.md 2 and 6): see [Client].
package licensor
