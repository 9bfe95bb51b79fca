package licensor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const basePayload = `{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","typ":"ONLINE","iat":1763884800,"exp":1795420800,"grace":14,"mm":1,"chk":3600,"max":86400`

func TestStrictPayloadJSON(t *testing.T) {
	key, publicPem := ed25519Signer(t)
	keys := mustKeys(t, publicPem)
	now := VerifyOptions{Now: time.Unix(1763884800, 0), Fingerprint: "x"}
	cases := []struct {
		name    string
		payload string
		want    Reason // "" for valid
	}{
		{"well formed", basePayload + `}`, ""},
		{"whitespace around members", " {\n" + basePayload[1:] + " }\n", ""},
		{"parameters of every type", basePayload + `,"edition":"pro","seats":25,"beta":false,"modules":["2d"],"x":null}`, ""},
		{"escaped characters", basePayload + `,"note":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`, ""},
		{"duplicate claim", basePayload + `,"iat":1763884801}`, Malformed},
		{"duplicate parameter", basePayload + `,"a":1,"a":2}`, Malformed},
		{"duplicate key in a nested object", basePayload + `,"o":{"k":1,"k":1}}`, Malformed},
		{"trailing data", basePayload + `}{}`, Malformed},
		{"trailing comma", basePayload + `,}`, Malformed},
		{"fractional integer claim", strings.Replace(basePayload, `"grace":14`, `"grace":14.0`, 1) + `}`, Malformed},
		{"exponent integer claim", strings.Replace(basePayload, `"mm":1`, `"mm":1e0`, 1) + `}`, Malformed},
		{"fractional parameter", basePayload + `,"ratio":0.5}`, Malformed},
		{"integer beyond the safe range", strings.Replace(basePayload, `"iat":1763884800`, `"iat":9007199254740992`, 1) + `}`, Malformed},
		{"leading zero", strings.Replace(basePayload, `"mm":1`, `"mm":01`, 1) + `}`, Malformed},
		{"lone surrogate", basePayload + `,"note":"\ud800"}`, Malformed},
		{"invalid UTF-8", basePayload + ",\"note\":\"\xff\"}", Malformed},
		{"control character in a string", basePayload + ",\"note\":\"a\nb\"}", Malformed},
		{"single quotes", basePayload + `,'a':1}`, Malformed},
		{"string v", strings.Replace(basePayload, `"v":3`, `"v":"3"`, 1) + `}`, Malformed},
		{"v 4 with one fingerprint", strings.Replace(basePayload, `"v":3`, `"v":4`, 1) + `}`, Malformed},
		{"fpn out of range", basePayload + `,"fp":"SVC1.x.y","fpn":6}`, Malformed},
		{"unknown typ", strings.Replace(basePayload, `"ONLINE"`, `"ONLINEX"`, 1) + `}`, Malformed},
		{"empty lid", strings.Replace(basePayload, `"l-1"`, `""`, 1) + `}`, Malformed},
		{"nesting too deep", basePayload + `,"deep":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, Malformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			result := VerifyLicence(signPayload(key, c.payload), keys, now)
			if c.want == "" {
				if !result.Valid {
					t.Fatalf("want valid, got %v (%s)", result.Reasons, result.Message)
				}
				return
			}
			if result.Signed || result.Reasons[0] != c.want {
				t.Fatalf("want %s, got signed=%v %v", c.want, result.Signed, result.Reasons)
			}
		})
	}
}

func TestParamsKeepTheirTypesAndOrder(t *testing.T) {
	key, publicPem := ed25519Signer(t)
	result := VerifyLicence(signPayload(key, basePayload+`,"edition":"pro","seats":25,"beta":false,"modules":["2d","3d"]}`), mustKeys(t, publicPem), VerifyOptions{Now: time.Unix(1763884800, 0)})
	want := []Param{{"edition", "pro"}, {"seats", int64(25)}, {"beta", false}, {"modules", []string{"2d", "3d"}}}
	if len(result.Claims.Params) != len(want) {
		t.Fatalf("params %v", result.Claims.Params)
	}
	for i, p := range result.Claims.Params {
		if p.Name != want[i].Name || !equalValue(p.Value, want[i].Value) {
			t.Errorf("param %d: %#v, want %#v", i, p, want[i])
		}
	}
	if seats, ok := result.Claims.Param("seats"); !ok || seats != int64(25) {
		t.Errorf("Param(seats) = %v, %v", seats, ok)
	}
}

func equalValue(a, b any) bool {
	as, aList := a.([]string)
	bs, bList := b.([]string)
	if aList || bList {
		return aList && bList && strings.Join(as, "\x00") == strings.Join(bs, "\x00")
	}
	return a == b
}

func TestStrictBase64url(t *testing.T) {
	cases := map[string]bool{
		"YWJj": true, "YWI": true, "YQ": true,
		"": false, "YQ==": false, "YWI=": false, "Y": false, "YR": false, // trailing bits set
		"a+b/": false, "YW\nJj": false, "YW Jj": false, "YWJj\n": false,
	}
	for text, ok := range cases {
		if _, got := decodeB64U(text); got != ok {
			t.Errorf("decodeB64U(%q) ok = %v, want %v", text, got, ok)
		}
	}
}

func TestVerifyCalendarPinningAndMachine(t *testing.T) {
	key, publicPem := ed25519Signer(t)
	keys := mustKeys(t, publicPem)
	fps := vectors(t).Fingerprints
	mine, other := fps[0].Fingerprint, fps[3].Fingerprint
	licence := signPayload(key, basePayload+`,"fp":"`+mine+`"}`)
	at := func(seconds int64, fingerprint string) VerifyOptions {
		return VerifyOptions{Now: time.Unix(seconds, 0), Fingerprint: fingerprint}
	}
	cases := []struct {
		name    string
		options VerifyOptions
		status  CalendarStatus
		reasons []Reason
	}{
		{"active", at(1763884800, mine), StatusActive, nil},
		{"grace until exactly exp + grace days", at(1795420800+14*86400-1, mine), StatusGrace, nil},
		{"expired at the grace end", at(1795420800+14*86400, mine), StatusExpired, []Reason{Expired}},
		{"another machine", at(1763884800, other), StatusActive, []Reason{FingerprintMismatch}},
		{"another product", VerifyOptions{Now: time.Unix(1763884800, 0), Fingerprint: mine, ProductKey: "acme-cam"}, StatusActive, []Reason{WrongProduct}},
		{"another organisation, expired, another machine", VerifyOptions{Now: time.Unix(1900000000, 0), Fingerprint: other, Organisation: "other"}, StatusExpired, []Reason{WrongProduct, Expired, FingerprintMismatch}},
		{"pinned to its own product and organisation", VerifyOptions{Now: time.Unix(1763884800, 0), Fingerprint: mine, ProductKey: "acme-cad", Organisation: "acme"}, StatusActive, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			result := VerifyLicence(licence, keys, c.options)
			if result.Status != c.status || strings.Join(reasonStrings(result.Reasons), ",") != strings.Join(reasonStrings(c.reasons), ",") || result.Valid != (len(c.reasons) == 0) {
				t.Fatalf("got %s %v valid=%v, want %s %v", result.Status, result.Reasons, result.Valid, c.status, c.reasons)
			}
		})
	}
	pending := signPayload(key, strings.Replace(basePayload, `"iat":1763884800`, `"iat":1763884800,"nbf":1764547200`, 1)+`}`)
	if result := VerifyLicence(pending, keys, at(1764547199, mine)); result.Status != StatusPending || result.Reasons[0] != NotYetValid {
		t.Fatalf("before nbf: %s %v", result.Status, result.Reasons)
	}
}

func reasonStrings(reasons []Reason) []string {
	out := []string{}
	for _, r := range reasons {
		out = append(out, string(r))
	}
	return out
}

func TestParsePublicKeys(t *testing.T) {
	v := vectors(t)
	if _, err := ParsePublicKeys(); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("no key: %v", err)
	}
	if _, err := ParsePublicKeys("not a key"); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("garbage: %v", err)
	}
	_, err := ParsePublicKeys(v.Algorithms[0].PublicKeyPem, v.Algorithms[0].PrivateKeyPem)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidKey || !strings.Contains(e.Message, "public key 2") {
		t.Errorf("a private key: %v", err)
	}
	for _, vector := range v.Algorithms {
		if _, err := ParsePublicKeys(vector.PublicKeyPem); err != nil {
			t.Errorf("%s: %v", vector.Algorithm, err)
		}
	}
}

func TestReadLicenceFileRemovesWhatAnEditorAdds(t *testing.T) {
	licence := vectors(t).Algorithms[0].Licence
	file := filepath.Join(t.TempDir(), "licence.lic")
	if err := os.WriteFile(file, []byte("\uFEFF \r\n"+licence+"\r\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	read, err := ReadLicenceFile(file)
	if err != nil || read != licence {
		t.Fatalf("ReadLicenceFile = %q, %v", read, err)
	}
	if _, err := ReadLicenceFile(filepath.Join(t.TempDir(), "missing.lic")); err == nil {
		t.Fatal("a missing file must be an error")
	}
	keys := mustKeys(t, vectors(t).Algorithms[0].PublicKeyPem)
	if v := VerifyLicence(licence+"\n", keys, VerifyOptions{Fingerprint: "x"}); len(v.Reasons) != 1 || v.Reasons[0] != Malformed {
		t.Fatalf("a trailing newline must stay Malformed: %v", v.Reasons)
	}
}
