package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// answerOf runs one request line through the driver and returns its answer as JSON text.
func answerOf(t *testing.T, d *driver, line string) map[string]any {
	t.Helper()
	data, err := json.Marshal(d.handle([]byte(line)))
	if err != nil {
		t.Fatal(err)
	}
	var answer map[string]any
	if err := json.Unmarshal(data, &answer); err != nil {
		t.Fatal(err)
	}
	return answer
}

func errorCode(answer map[string]any) string {
	e, _ := answer["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func TestDriverRefusesWhatItDoesNotKnow(t *testing.T) {
	cases := map[string]string{
		`not json`:                         "INVALID_OPTIONS",
		`{"op":"dance"}`:                   "INVALID_OPTIONS",
		`["op","check"]`:                   "INVALID_OPTIONS",
		`{"op":"setClock"}`:                "INVALID_OPTIONS",
		`{"op":"setClock","offsetMs":1.5}`: "INVALID_OPTIONS",
		`{"op":"setFingerprint"}`:          "INVALID_OPTIONS",
		`{"op":"configure","slug":"a"}`:    "INVALID_OPTIONS",
		`{"op":"check"}`:                   "INVALID_OPTIONS",
		`{"op":"verify"}`:                  "INVALID_OPTIONS",
		`{"op":"activationRequest"}`:       "INVALID_OPTIONS",
		`{"op":"borrow","until":"2026"}`:   "INVALID_OPTIONS",
	}
	for line, code := range cases {
		answer := answerOf(t, &driver{}, line)
		if answer["ok"] != false || errorCode(answer) != code {
			t.Errorf("%s: %v", line, answer)
		}
	}
	if e := answerOf(t, &driver{}, `{"op":"deactivateAirGap"}`)["error"].(map[string]any); e["message"] != "configure first" {
		t.Errorf("air gap: %v", e)
	}
}

func TestDriverVerifiesAndConfigures(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "packages", "protocol", "test-vectors", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Algorithms []struct {
			PublicKeyPem string `json:"publicKeyPem"`
			Licence      string `json:"licence"`
		} `json:"algorithms"`
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	perpetual := vectors.Algorithms[3] // RSA 4096, HYBRID online, perpetual, no fp
	configure, _ := json.Marshal(map[string]any{
		"op": "configure", "baseUrl": "http://127.0.0.1:1", "slug": "acme", "productKey": "acme-cad", "checkId": "chk0123456789ab",
		"checkToken": "svcc_chk0123456789ab_x", "publicKeys": []string{perpetual.PublicKeyPem}, "licence": perpetual.Licence,
		"stateDir": t.TempDir(), "timeoutMs": 500,
	})
	d := &driver{}
	if answer := answerOf(t, d, string(configure)); answer["ok"] != true {
		t.Fatalf("configure: %v", answer)
	}
	verified := answerOf(t, d, `{"op":"verify"}`)["result"].(map[string]any)
	if verified["valid"] != true || verified["claims"].(map[string]any)["tier"] != "gold" {
		t.Fatalf("verify: %v", verified)
	}
	other, _ := json.Marshal(map[string]any{"op": "verify", "licence": vectors.Algorithms[0].Licence})
	if result := answerOf(t, d, string(other))["result"].(map[string]any); result["valid"] != false || result["claims"] != nil || result["reasons"].([]any)[0] != "BAD_SIGNATURE" {
		t.Fatalf("another key's licence: %v", result)
	}
	// Nothing listens on port 1: no answer, never a verdict.
	check := answerOf(t, d, `{"op":"check"}`)["result"].(map[string]any)
	if check["state"] != "STALE" || check["fresh"] != nil || check["ageSeconds"] != nil || check["noAnswer"].(map[string]any)["code"] != "NETWORK" || check["airGapped"] != false {
		t.Fatalf("check: %v", check)
	}
	if answer := answerOf(t, d, `{"op":"fetch"}`); errorCode(answer) != "NETWORK" {
		t.Fatalf("fetch: %v", answer)
	}
	fingerprint := answerOf(t, d, `{"op":"fingerprint"}`)["result"].(map[string]any)["fingerprint"].(string)
	if !strings.HasPrefix(fingerprint, "SVC1.") {
		t.Fatalf("fingerprint %q", fingerprint)
	}
}
