package licensor

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Air-gapped activation (DESIGN.md 14): the state of one installation of one product lives in
// `<root>/<slug>/<productKey>/` beside the licences' files (docs/protocol.md section 8):
//   - device.json {format: 1, seed, dpk, fingerprint}: the Ed25519 device key (its 32-byte seed,
//     B64U) and the fingerprint it was made on; another fingerprint makes a new key.
//   - air-gap.json {format: 1, pending, activations, deactivated}: the pending request text (one
//     at a time) or null; the accepted response text per lid; the aid and nonce of every
//     activation deactivated here, never accepted again.
// Both mode 0600, written like the licences' files, under the lock air-gap.lock.

// deactivatedKept is how many deactivated activations are remembered (the oldest are forgotten first).
const deactivatedKept = 1000

type deactivatedActivation struct {
	Aid   string `json:"aid"`
	Nonce string `json:"nonce"`
}

type airGapState struct {
	Format      int                     `json:"format"`
	Pending     *string                 `json:"pending"`
	Activations map[string]string       `json:"activations"`
	Deactivated []deactivatedActivation `json:"deactivated"`
}

type deviceFile struct {
	Format      int    `json:"format"`
	Seed        string `json:"seed"`
	Dpk         string `json:"dpk"`
	Fingerprint string `json:"fingerprint"`
}

type deviceKey struct {
	key ed25519.PrivateKey
	dpk string
}

// airGapFiles are the air-gap files of one product directory, for this machine's fingerprint.
type airGapFiles struct{ dir, fingerprint string }

// loadState reads each field alone; anything unreadable is empty (a damaged file costs the
// pending request, never a key).
func (f airGapFiles) loadState() airGapState {
	state := airGapState{Format: stateFormat, Activations: map[string]string{}, Deactivated: []deactivatedActivation{}}
	data, err := os.ReadFile(filepath.Join(f.dir, "air-gap.json"))
	value, jsonErr := parseJSON(data)
	object, ok := value.(*jsonObject)
	if format, _ := fieldOf[jsonNumber](object, "format"); err != nil || jsonErr != nil || !ok || format != "1" {
		return state
	}
	if pending, ok := fieldOf[string](object, "pending"); ok {
		state.Pending = &pending
	}
	if activations, ok := fieldOf[*jsonObject](object, "activations"); ok {
		for _, m := range activations.members {
			if text, ok := m.value.(string); ok {
				state.Activations[m.key] = text
			}
		}
	}
	deactivated, _ := fieldOf[[]any](object, "deactivated")
	for _, item := range deactivated {
		entry, _ := item.(*jsonObject)
		aid, aidOK := fieldOf[string](entry, "aid")
		nonce, nonceOK := fieldOf[string](entry, "nonce")
		if aidOK && nonceOK {
			state.Deactivated = append(state.Deactivated, deactivatedActivation{aid, nonce})
		}
	}
	return state
}

// device is the key made on this fingerprint, or nil.
func (f airGapFiles) device() *deviceKey {
	data, err := os.ReadFile(filepath.Join(f.dir, "device.json"))
	value, jsonErr := parseJSON(data)
	object, ok := value.(*jsonObject)
	format, _ := fieldOf[jsonNumber](object, "format")
	seedText, _ := fieldOf[string](object, "seed")
	fingerprint, _ := fieldOf[string](object, "fingerprint")
	seed, seedOK := decodeB64U(seedText)
	if err != nil || jsonErr != nil || !ok || format != "1" || !seedOK || len(seed) != ed25519.SeedSize || fingerprint != f.fingerprint {
		return nil
	}
	key := ed25519.NewKeyFromSeed(seed)
	return &deviceKey{key: key, dpk: encodeB64U(key.Public().(ed25519.PublicKey))}
}

// update changes the state under the lock and saves it when change succeeds; makeDevice gives
// the key made on this fingerprint, made now if needed.
func (f airGapFiles) update(change func(state *airGapState, makeDevice func() (*deviceKey, error)) error) error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	unlock, err := acquireLock(filepath.Join(f.dir, "air-gap.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	state := f.loadState()
	makeDevice := func() (*deviceKey, error) {
		if kept := f.device(); kept != nil {
			return kept, nil
		}
		seed := make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(seed); err != nil {
			return nil, err
		}
		key := ed25519.NewKeyFromSeed(seed)
		made := &deviceKey{key: key, dpk: encodeB64U(key.Public().(ed25519.PublicKey))}
		return made, writeJSONFile(f.dir, "device.json", deviceFile{stateFormat, encodeB64U(seed), made.dpk, f.fingerprint})
	}
	if err := change(&state, makeDevice); err != nil {
		return err
	}
	if n := len(state.Deactivated); n > deactivatedKept {
		state.Deactivated = state.Deactivated[n-deactivatedKept:]
	}
	return writeJSONFile(f.dir, "air-gap.json", state)
}

func writeJSONFile(dir, name string, value any) error {
	data, _ := json.MarshalIndent(value, "", "  ") // plain fields: cannot fail
	return writeAtomically(dir, filepath.Join(dir, name), append(data, '\n'))
}

// sameMachine: both are fingerprints with all five components equal.
func sameMachine(a, b string) bool {
	pa, errA := ParseFingerprint(a)
	pb, errB := ParseFingerprint(b)
	return errA == nil && errB == nil && pa == pb
}

// AirGapRequest is an activation request to carry to the vendor's portal or console.
type AirGapRequest struct {
	// Request is the text (SVCA1...), e.g. for a QR code.
	Request string
	// Groups is the text in groups of five characters, for reading out and typing.
	Groups string
}

// AirGapActivation is an accepted activation response.
type AirGapActivation struct {
	// Until is when the activation ends: Check is Valid on this machine until then.
	Until time.Time
	// ActivationID is the service's id of the activation.
	ActivationID string
}

// AirGapDeactivation is the code that frees the seat, to carry to the vendor's portal or console.
type AirGapDeactivation struct {
	Code   string
	Groups string
}

// productDirectoryStore is a store with a directory per product (FileStore): the device key needs one.
type productDirectoryStore interface {
	productDirectory(slug, productKey string) (string, error)
}

// airGap is the licence in use's claims and its product's air-gap files.
func (c *Client) airGap() (*Claims, airGapFiles, error) {
	v := c.verify(c.Licence(), c.clock())
	if !v.Signed {
		return nil, airGapFiles{}, newError(CodeBadLicence, "the licence in use does not verify: %s", v.Message)
	}
	files, err := c.airGapFiles(v.Claims)
	return v.Claims, files, err
}

func (c *Client) airGapFiles(claims *Claims) (airGapFiles, error) {
	store, ok := c.store.(productDirectoryStore)
	if !ok {
		return airGapFiles{}, newError(CodeInvalidOptions, "air-gapped activation keeps a device key on disk: it needs a FileStore")
	}
	dir, err := store.productDirectory(claims.Org, claims.Prd)
	if err != nil {
		return airGapFiles{}, newError(CodeInvalidOptions, "%v", err)
	}
	return airGapFiles{dir: dir, fingerprint: c.Fingerprint()}, nil
}

// CreateAirGapRequest starts an air-gapped activation on a machine that never reaches the
// service: a request signed by this installation's device key (made once per product and
// machine, kept with the licences' state), replacing any pending one. The vendor's portal or
// console answers it with a response for ActivateAirGapped. Needs a FileStore: with another
// store it is CodeInvalidOptions.
func (c *Client) CreateAirGapRequest() (AirGapRequest, error) {
	claims, files, err := c.airGap()
	if err != nil {
		return AirGapRequest{}, err
	}
	var request string
	err = files.update(func(state *airGapState, makeDevice func() (*deviceKey, error)) error {
		device, err := makeDevice()
		if err != nil {
			return err
		}
		fields := airGapFields{Lid: claims.Lid, Fp: files.fingerprint, Dpk: device.dpk, Nonce: newNonce(), Iat: floorSeconds(c.clock())}
		request = requestFormat.sign(&fields, device.key)
		state.Pending = &request
		return nil
	})
	if err != nil {
		return AirGapRequest{}, err
	}
	return AirGapRequest{Request: request, Groups: groupsOfFive(request)}, nil
}

// ActivateAirGapped accepts the response to the pending request (pasted or typed: whitespace is
// ignored). From then until Until, Check is Valid on this machine with no network (AirGapped).
// CodeBadActivation for a response that does not verify with the product's keys, or is not for
// this licence, installation, machine and pending request, or for an activation deactivated
// here; nothing changes then.
func (c *Client) ActivateAirGapped(response string) (AirGapActivation, error) {
	claims, files, err := c.airGap()
	if err != nil {
		return AirGapActivation{}, err
	}
	parsed, problem := responseFormat.parse(compactText(response))
	if problem != "" {
		return AirGapActivation{}, newError(CodeBadActivation, "not an activation response: %s", problem)
	}
	if !parsed.verifiedBy(c.keys) {
		return AirGapActivation{}, newError(CodeBadActivation, "the response does not verify with this product's keys")
	}
	fields := parsed.fields
	err = files.update(func(state *airGapState, _ func() (*deviceKey, error)) error {
		if state.Pending == nil {
			return newError(CodeBadActivation, "no activation request is pending on this installation")
		}
		pending, problem := requestFormat.parse(*state.Pending)
		device := files.device()
		switch {
		case problem != "" || fields.Lid != claims.Lid || pending.fields.Lid != claims.Lid:
			return newError(CodeBadActivation, "the response is for another licence")
		case fields.Dpk != pending.fields.Dpk || device == nil || device.dpk != fields.Dpk:
			return newError(CodeBadActivation, "the response is for another installation")
		case fields.Nonce != pending.fields.Nonce:
			return newError(CodeBadActivation, "the response answers another request")
		case fields.Fp != pending.fields.Fp || !sameMachine(fields.Fp, files.fingerprint):
			return newError(CodeBadActivation, "the response is for another machine")
		}
		for _, d := range state.Deactivated {
			if d.Aid == fields.Aid || d.Nonce == fields.Nonce {
				return newError(CodeBadActivation, "the response is for an activation deactivated here")
			}
		}
		state.Pending = nil
		state.Activations[claims.Lid] = parsed.text
		return nil
	})
	if err != nil {
		return AirGapActivation{}, err
	}
	return AirGapActivation{Until: time.Unix(fields.Until, 0).UTC(), ActivationID: fields.Aid}, nil
}

// DeactivateAirGapped ends this machine's air-gapped activation: it forgets it here first (it
// is never accepted again), then answers the code this installation's key signs, for the
// vendor's portal or console to free the seat. CodeBadActivation when there is none to end.
func (c *Client) DeactivateAirGapped() (AirGapDeactivation, error) {
	claims, files, err := c.airGap()
	if err != nil {
		return AirGapDeactivation{}, err
	}
	var code string
	err = files.update(func(state *airGapState, makeDevice func() (*deviceKey, error)) error {
		text, ok := state.Activations[claims.Lid]
		parsed, problem := responseFormat.parse(text)
		if !ok || problem != "" {
			return newError(CodeBadActivation, "this installation holds no air-gapped activation of this licence")
		}
		delete(state.Activations, claims.Lid)
		state.Deactivated = append(state.Deactivated, deactivatedActivation{parsed.fields.Aid, parsed.fields.Nonce})
		device, err := makeDevice()
		if err != nil {
			return err
		}
		fields := airGapFields{Lid: claims.Lid, Aid: parsed.fields.Aid, Iat: floorSeconds(c.clock())}
		code = deactivationFormat.sign(&fields, device.key)
		return nil
	})
	if err != nil {
		return AirGapDeactivation{}, err
	}
	return AirGapDeactivation{Code: code, Groups: groupsOfFive(code)}, nil
}

// orAirGapped: without a verified answer that says licensed, a kept activation of this machine
// makes the state Valid until its until, unless a verified answer signed after it said not
// licensed; a local clock more than a minute before its iat is a rollback (Stale).
func (c *Client) orAirGapped(result *CheckResult, claims *Claims, now time.Time) {
	files, err := c.airGapFiles(claims)
	if result.State == Valid || err != nil {
		return
	}
	text, ok := files.loadState().Activations[claims.Lid]
	parsed, problem := responseFormat.parse(text)
	if !ok || problem != "" || !parsed.verifiedBy(c.keys) {
		return
	}
	fields := parsed.fields
	device := files.device()
	if fields.Lid != claims.Lid || device == nil || device.dpk != fields.Dpk || !sameMachine(fields.Fp, files.fingerprint) {
		return
	}
	if a := result.Answer; a != nil && !a.Grants && checkedAtMs(a) >= fields.Iat*1000 {
		return
	}
	switch {
	case now.UnixMilli() < fields.Iat*1000-rollbackTolerance.Milliseconds():
		result.State, result.Reasons, result.ClockRollback = Stale, []Reason{}, true
	case now.UnixMilli() < fields.Until*1000:
		result.State, result.Reasons, result.AirGapped = Valid, []Reason{}, true
	}
}

// endAirGapped forgets the licence's activation here: a verified answer said not licensed.
func (c *Client) endAirGapped(claims *Claims) {
	files, err := c.airGapFiles(claims)
	if err != nil {
		return
	}
	if _, ok := files.loadState().Activations[claims.Lid]; !ok {
		return // nothing to end: no lock taken, nothing written
	}
	_ = files.update(func(state *airGapState, _ func() (*deviceKey, error)) error {
		delete(state.Activations, claims.Lid)
		return nil
	})
}
