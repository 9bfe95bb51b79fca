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
