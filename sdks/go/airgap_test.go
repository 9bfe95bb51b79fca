package licensor

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The shared vectors' airGap section (docs/protocol.md section 11).
type airGapVectors struct {
	DeviceKey struct{ Seed, Dpk string } `json:"deviceKey"`
	Request   struct {
		Fields airGapFields `json:"fields"`
		Text   string       `json:"text"`
		Groups string       `json:"groups"`
	} `json:"request"`
	Deactivation struct {
		Fields airGapFields `json:"fields"`
		Text   string       `json:"text"`
	} `json:"deactivation"`
	Responses []struct {
		Algorithm string       `json:"algorithm"`
		Fields    airGapFields `json:"fields"`
		Text      string       `json:"text"`
	} `json:"responses"`
	BadRequests      []badAirGapText `json:"badRequests"`
	BadDeactivations []badAirGapText `json:"badDeactivations"`
	BadResponses     []badAirGapText `json:"badResponses"`
}

type badAirGapText struct {
	Name     string `json:"name"`
	Text     string `json:"text"`
	Expected string `json:"expected"`
}

func airGapVectorsOf(t *testing.T) airGapVectors {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "packages", "protocol", "test-vectors", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		AirGap airGapVectors `json:"airGap"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	return file.AirGap
}

func vectorDeviceKey(t *testing.T, seed string) ed25519.PrivateKey {
	bytes, ok := decodeB64U(seed)
	if !ok || len(bytes) != ed25519.SeedSize {
		t.Fatalf("device seed %q", seed)
	}
	return ed25519.NewKeyFromSeed(bytes)
}

func TestVectorAirGapTextsAreWrittenAndReadAlike(t *testing.T) {
	v := airGapVectorsOf(t)
	device := vectorDeviceKey(t, v.DeviceKey.Seed)
	if dpk := encodeB64U(device.Public().(ed25519.PublicKey)); dpk != v.DeviceKey.Dpk {
		t.Fatalf("dpk %s, want %s", dpk, v.DeviceKey.Dpk)
	}
	for _, c := range []struct {
		format airGapFormat
		fields airGapFields
		text   string
	}{{requestFormat, v.Request.Fields, v.Request.Text}, {deactivationFormat, v.Deactivation.Fields, v.Deactivation.Text}} {
		if text := c.format.sign(&c.fields, device); text != c.text {
			t.Errorf("%s signed as %s, want %s", c.format.what, text, c.text)
		}
		parsed, problem := c.format.parse(c.text)
		if problem != "" || parsed.fields != c.fields || !parsed.verifiedBy(PublicKeys{device.Public()}) {
			t.Errorf("%s read as %+v (%s)", c.format.what, parsed, problem)
		}
	}
	if groups := groupsOfFive(v.Request.Text); groups != v.Request.Groups {
		t.Errorf("groups %s", groups)
	}
	if compactText(v.Request.Groups) != v.Request.Text || compactText(" \n"+v.Request.Groups+"\t") != v.Request.Text {
		t.Error("groups do not read back")
	}
	publicKeys := map[string]string{}
	for _, a := range vectors(t).Algorithms {
		publicKeys[a.Algorithm] = a.PublicKeyPem
	}
	for _, r := range v.Responses {
		parsed, problem := responseFormat.parse(r.Text)
		if problem != "" || parsed.fields != r.Fields || !parsed.verifiedBy(mustKeys(t, publicKeys[r.Algorithm])) {
			t.Errorf("%s response read as %+v (%s)", r.Algorithm, parsed, problem)
		}
		if parsed != nil && parsed.verifiedBy(PublicKeys{device.Public()}) {
			t.Errorf("%s response verifies with the device key", r.Algorithm)
		}
	}
}

func TestVectorBadAirGapTextsAreRefused(t *testing.T) {
	v := airGapVectorsOf(t)
	device := PublicKeys{vectorDeviceKey(t, v.DeviceKey.Seed).Public()}
	product := mustKeys(t, vectors(t).Algorithms[0].PublicKeyPem)
	for _, c := range []struct {
		format airGapFormat
		keys   PublicKeys
		bad    []badAirGapText
	}{{requestFormat, device, v.BadRequests}, {deactivationFormat, device, v.BadDeactivations}, {responseFormat, product, v.BadResponses}} {
		if len(c.bad) == 0 {
			t.Fatalf("no bad %s vectors", c.format.what)
		}
		for _, bad := range c.bad {
			got := "BAD_SIGNATURE"
			if parsed, problem := c.format.parse(bad.Text); problem != "" {
				got = "MALFORMED"
			} else if parsed.verifiedBy(c.keys) {
				got = "VALID"
			}
			if got != bad.Expected {
				t.Errorf("%s %q: %s, want %s", c.format.what, bad.Name, got, bad.Expected)
			}
		}
	}
}

// respond answers a request as the service does, signing with the Ed25519 vector key.
func respond(t *testing.T, request string, change func(f *airGapFields)) string {
	t.Helper()
	parsed, problem := requestFormat.parse(compactText(request))
	if problem != "" || !parsed.verifiedBy(PublicKeys{ed25519.PublicKey(mustDecode(t, parsed.fields.Dpk))}) {
		t.Fatalf("request %s (%s)", request, problem)
	}
	key, _ := ed25519Signer(t)
	now := time.Now().Unix()
	fields := parsed.fields
	fields.Aid, fields.Status, fields.Iat, fields.BoundAt, fields.Until = "7", "ACTIVE", now, now, now+3600
	if change != nil {
		change(&fields)
	}
	return responseFormat.sign(&fields, key)
}

func mustDecode(t *testing.T, text string) []byte {
	bytes, ok := decodeB64U(text)
	if !ok {
		t.Fatalf("not base64url: %s", text)
	}
	return bytes
}

func expectCode(t *testing.T, err error, code ErrorCode) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

func TestAirGappedActivationRoundTrip(t *testing.T) {
	f := newFakeService(t)
	f.set(func(f *fakeService) { f.httpStatus = 503 }) // the machine never reaches the service
	clock := &testClock{}
	root := t.TempDir()
	client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), FileStore(root), clock))

	_, err := client.DeactivateAirGapped()
	expectCode(t, err, CodeBadActivation)
	_, err = client.ActivateAirGapped(respond(t, mustRequest(t, client).Groups, nil))
	if err != nil {
		t.Fatalf("activation from groups: %v", err)
	}
	// A new request replaces the pending one; a response to the old one, another nonce, another
	// machine or another licence is refused.
	first := mustRequest(t, client)
	second := mustRequest(t, client)
	refused := map[string]string{
		"old request":     respond(t, first.Request, nil),
		"another machine": respond(t, second.Request, func(f *airGapFields) { f.Fp = vectors(t).Fingerprints[1].Fingerprint }),
		"another licence": respond(t, second.Request, func(f *airGapFields) { f.Lid = "l-2" }),
		"another device":  respond(t, second.Request, func(f *airGapFields) { f.Dpk = airGapVectorsOf(t).DeviceKey.Dpk }),
		"not signed":      second.Request,
	}
	for name, response := range refused {
		if _, err := client.ActivateAirGapped(response); err == nil {
			t.Fatalf("%s accepted", name)
		}
	}
	response := respond(t, second.Request, nil)
	activation, err := client.ActivateAirGapped(response)
	if left := time.Until(activation.Until); err != nil || activation.ActivationID != "7" || left < 59*time.Minute || left > time.Hour {
		t.Fatalf("activation %+v %v", activation, err)
	}
	if _, err := client.ActivateAirGapped(response); err == nil {
		t.Fatal("a response accepted twice: the pending request is consumed")
	}

	result := client.Check(ctx)
	if expectState(t, result, Valid); !result.AirGapped {
		t.Fatal("not air-gapped")
	}
	clock.move(-2 * time.Minute)
	if result := client.Check(ctx); result.State != Stale || !result.ClockRollback || result.AirGapped {
		t.Fatalf("rollback: %+v", result)
	}
	clock.move(2 * time.Hour)
	expectState(t, client.Check(ctx), Stale)
	clock.move(0)

	deactivation, err := client.DeactivateAirGapped()
	if err != nil {
		t.Fatal(err)
	}
	parsed, problem := deactivationFormat.parse(compactText(deactivation.Groups))
	if problem != "" || parsed.fields.Aid != "7" || parsed.fields.Lid != testLidValue || !parsed.verifiedBy(PublicKeys{ed25519.PublicKey(mustDecode(t, readDevice(t, root).Dpk))}) {
		t.Fatalf("deactivation %+v (%s)", parsed, problem)
	}
	expectState(t, client.Check(ctx), Stale)
	// A deactivated activation is never accepted again, even answering a new request.
	again := mustRequest(t, client)
	_, err = client.ActivateAirGapped(respond(t, again.Request, nil)) // aid 7 again
	expectCode(t, err, CodeBadActivation)
}

func TestAirGapEndsOnANegativeAnswerAndNeedsAFileStore(t *testing.T) {
	f := newFakeService(t)
	client := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), FileStore(t.TempDir()), &testClock{}))
	if _, err := client.ActivateAirGapped(respond(t, mustRequest(t, client).Request, nil)); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeService) { f.status = "REVOKED" })
	expectState(t, client.Check(ctx), Invalid, Revoked)
	f.set(func(f *fakeService) { f.httpStatus = 503 })
	if result := client.Check(ctx); result.State != Invalid || result.AirGapped {
		t.Fatalf("after a negative answer: %+v", result)
	}
	_, err := client.DeactivateAirGapped()
	expectCode(t, err, CodeBadActivation)

	memory := newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), MemoryStore(), &testClock{}))
	_, err = memory.CreateAirGapRequest()
	expectCode(t, err, CodeInvalidOptions)
}

func mustRequest(t *testing.T, client *Client) AirGapRequest {
	t.Helper()
	request, err := client.CreateAirGapRequest()
	if err != nil {
		t.Fatal(err)
	}
	return request
}

func readDevice(t *testing.T, root string) deviceFile {
	var device deviceFile
	data, err := os.ReadFile(filepath.Join(root, testSlug, testProduct, "device.json"))
	if err != nil || json.Unmarshal(data, &device) != nil {
		t.Fatalf("device.json: %v", err)
	}
	if info, _ := os.Stat(filepath.Join(root, testSlug, testProduct, "device.json")); info.Mode().Perm() != 0o600 && os.PathSeparator == '/' {
		t.Fatalf("device.json mode %v", info.Mode())
	}
	return device
}
