package licensor

import (
	"strconv"
	"testing"
	"time"
)

func TestUpdatesUntilIsTheSignedUpdAndUpdIsNoParameter(t *testing.T) {
	f := newFakeService(t)
	upd := time.Now().Add(730 * 24 * time.Hour).Unix()
	licence := testLicence(t, dayAgo(), `,"upd":`+strconv.FormatInt(upd, 10)+`,"seats":5`)
	client := newTestClient(t, testConfig(t, f, licence, MemoryStore(), &testClock{}))
	if until := client.UpdatesUntil(); until == nil || until.Unix() != upd {
		t.Fatalf("updates until %v, want %d", until, upd)
	}
	claims := client.verify(licence, client.clock()).Claims
	if len(claims.Params) != 1 || claims.Params[0].Name != "seats" {
		t.Fatalf("params %+v ", claims.Params)
	}
}

func TestUpdatesUntilIsTheGraceEndWithoutUpdAndAProductsUpdStaysAParameter(t *testing.T) {
	f := newFakeService(t)
	licence := testLicence(t, dayAgo(), `,"upd":"nightly"`)
	client := newTestClient(t, testConfig(t, f, licence, MemoryStore(), &testClock{}))
	claims := client.verify(licence, client.clock()).Claims
	if len(claims.Params) != 1 || claims.Params[0].Name != "upd" || claims.Params[0].Value != "nightly" || claims.Upd != nil {
		t.Fatalf("params %+v", claims.Params)
	}
	if until := client.UpdatesUntil(); until == nil || until.Unix() != *claims.Exp+14*86_400 {
		t.Fatalf("updates until %v, want the grace end", until)
	}
}

func TestTheVectorsSignATermWithAnUpdateWindowReadAsUpd(t *testing.T) {
	windowed := 0
	for _, vector := range vectors(t).Algorithms {
		upd, ok := vector.Claims["upd"].(float64)
		if !ok {
			continue
		}
		windowed++
		keys := mustKeys(t, vector.PublicKeyPem)
		first := VerifyLicence(vector.Licence, keys, VerifyOptions{Now: time.Unix(1763884800, 0), Fingerprint: "x"})
		result := VerifyLicence(vector.Licence, keys, inTerm(first.Claims))
		if !result.Valid || result.Claims.Upd == nil || *result.Claims.Upd != int64(upd) {
			t.Fatalf("%s: valid %v, upd %v, want %d", vector.Algorithm, result.Valid, result.Claims.Upd, int64(upd))
		}
		for _, param := range result.Claims.Params {
			if param.Name == "upd" {
				t.Fatalf("%s: upd read as a parameter", vector.Algorithm)
			}
		}
	}
	if windowed == 0 {
		t.Fatal("no vector licence is signed with upd: every SDK must verify one byte for byte")
	}
}
