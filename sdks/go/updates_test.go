package licensor

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// releaseService answers feed-token, latest.json and the files as DESIGN.md 20 says, for one
// published release 2.0.0 with one file, its manifest signed by the Ed25519 vector key.
type releaseService struct {
	server *httptest.Server
	key    ed25519.PrivateKey

	mu       sync.Mutex
	gen      int    // the feed generation: a token of another is refused
	file     []byte // the bytes signed
	served   []byte // the bytes answered, when they differ
	forge    bool   // sign the manifest with another key
	listed   string // the filename the manifest signs, when not the update's
	redirect bool   // answer the file with a 303 to the store, as S3 does
	product  string // the product the manifest names
	refuse   string // answer feed-token 403 with this reason
	requests map[string]int
	queries  []string
}

func newReleaseService(t *testing.T) *releaseService {
	key, _ := ed25519Signer(t)
	s := &releaseService{key: key, gen: 1, file: []byte("the 2.0.0 installer"), product: testProduct, requests: map[string]int{}}
	s.server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.server.Close)
	return s
}

func (s *releaseService) set(change func(s *releaseService)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(s)
}

func (s *releaseService) token() string { return "SVCF1.gen" + strconv.Itoa(s.gen) + ".mac" }

func (s *releaseService) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	feeds := "/o/" + testSlug + "/api/public/feeds/"
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/o/"+testSlug+"/api/public/license/"+testCheckID+"/feed-token":
		s.requests["feed-token"]++
		if s.refuse != "" {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":"refused","reason":%q}`, s.refuse)
			return
		}
		base := s.server.URL + feeds + s.token() + "/"
		json.NewEncoder(w).Encode(map[string]any{"token": s.token(), "urls": map[string]string{
			"electron": base + "electron/", "tauri": base + "tauri/{{target}}/{{arch}}/{{current_version}}", "sparkle": base + "sparkle/appcast.xml", "json": base + "latest.json",
		}})
	case r.URL.Path == "/store/App.AppImage" && r.URL.RawQuery == "X-Amz-Signature=x":
		w.Write(s.file)
	case !strings.HasPrefix(r.URL.Path, feeds+s.token()+"/"):
		s.requests["refused"]++
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":"this feed URL is no longer valid"}`))
	case strings.HasSuffix(r.URL.Path, "/latest.json"):
		s.requests["latest.json"]++
		s.queries = append(s.queries, r.URL.RawQuery)
		json.NewEncoder(w).Encode(map[string]any{"update": s.update(), "blocked": map[string]any{"version": "3.0.0", "publishedAt": "2026-11-22T07:00:00.000Z", "reason": "UPDATES_EXPIRED"}})
	case strings.HasSuffix(r.URL.Path, "/files/2.0.0/App.AppImage"):
		s.requests["file"]++
		if s.redirect {
			http.Redirect(w, r, "/store/App.AppImage?X-Amz-Signature=x", http.StatusSeeOther)
		} else if s.served != nil {
			w.Write(s.served)
		} else {
			w.Write(s.file)
		}
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (s *releaseService) update() map[string]any {
	digest := sha256.Sum256(s.file)
	sha := hex.EncodeToString(digest[:])
	listed := "App.AppImage"
	if s.listed != "" {
		listed = s.listed
	}
	manifest := strings.Join([]string{"SVCM1", testSlug, s.product, "2.0.0", "stable", "1780000000", "1", listed, "linux", "x86_64", strconv.Itoa(len(s.file)), sha}, "\x1f")
	key := s.key
	if s.forge {
		key = ed25519.NewKeyFromSeed(make([]byte, 32))
	}
	signature := encodeB64U(ed25519.Sign(key, []byte(manifest)))
	der, _ := x509.MarshalPKIXPublicKey(s.key.Public())
	sum := sha256.Sum256(der)
	fingerprint := hex.EncodeToString(sum[:])
	return map[string]any{
		"version": "2.0.0", "channel": "stable", "publishedAt": "2026-05-28T20:26:40.000Z", "notes": "Faster", "manifest": manifest,
		"manifestSignatures":     []map[string]string{{"keyFingerprint": fingerprint, "signature": signature}},
		"manifestSignature":      signature,
		"manifestKeyFingerprint": fingerprint,
		"artifacts": []map[string]any{{"id": 7, "filename": "App.AppImage", "platform": "linux", "arch": "x86_64", "size": len(s.file),
			"sha256": sha, "sha512": "x", "contentType": "application/octet-stream", "url": s.server.URL + "/o/" + testSlug + "/api/public/feeds/" + s.token() + "/files/2.0.0/App.AppImage"}},
	}
}

func releaseClient(t *testing.T, s *releaseService, store StateStore) *Client {
	f := &fakeService{server: s.server}
	return newTestClient(t, testConfig(t, f, testLicence(t, dayAgo(), ""), store, &testClock{}))
}

var linuxUpdate = UpdateQuery{CurrentVersion: "1.9.0", Platform: "linux", Arch: "x86_64"}

func codeOf(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestAnUpdateIsFoundWithItsVerifiedManifestAndDownloadedWhenItsBytesAreSigned(t *testing.T) {
	s := newReleaseService(t)
	client := releaseClient(t, s, FileStore(t.TempDir()))
	found, err := client.CheckForUpdate(context.Background(), linuxUpdate)
	if err != nil {
		t.Fatal(err)
	}
	if found.Update == nil || found.Update.Version != "2.0.0" || len(found.Update.Artifacts) != 1 || found.Blocked == nil || found.Blocked.Reason != "UPDATES_EXPIRED" {
		t.Fatalf("found %+v", found)
	}
	if s.queries[0] != "platform=linux&arch=x86_64&version=1.9.0" {
		t.Fatalf("query %s", s.queries[0])
	}
	folder := filepath.Join(t.TempDir(), "downloads")
	file, err := client.Download(context.Background(), found.Update, "App.AppImage", folder)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(folder, "App.AppImage")
	data, _ := os.ReadFile(to)
	if entries, _ := os.ReadDir(folder); file.Path != to || len(entries) != 1 || file.Size != int64(len(s.file)) || file.Sha256 != found.Update.Artifacts[0].Sha256 || string(data) != string(s.file) {
		t.Fatalf("downloaded %+v: %q", file, data)
	}
	// The token is kept: the next look asks for none.
	if _, err := client.CheckForUpdate(context.Background(), linuxUpdate); err != nil || s.requests["feed-token"] != 1 {
		t.Fatalf("feed-token asked %d times: %v", s.requests["feed-token"], err)
	}
	// Nothing above the running version is no update.
	if found, err := client.CheckForUpdate(context.Background(), UpdateQuery{CurrentVersion: "2.0.0"}); codeOf(err) != CodeBadManifest || found != nil {
		t.Fatalf("an update not above the current version: %v", err)
	}
}

func TestADownloadFollowsTheStoresRedirect(t *testing.T) {
	s := newReleaseService(t)
	client := releaseClient(t, s, FileStore(t.TempDir()))
	found, err := client.CheckForUpdate(context.Background(), linuxUpdate)
	if err != nil {
		t.Fatal(err)
	}
	s.set(func(s *releaseService) { s.redirect = true })
	if file, err := client.Download(context.Background(), found.Update, "App.AppImage", t.TempDir()); err != nil || file.Size != int64(len(s.file)) {
		t.Fatalf("redirected: %+v %v", file, err)
	}
}

func TestAFileWhoseBytesAreNotSignedIsDeletedWithDigestMismatch(t *testing.T) {
	s := newReleaseService(t)
	client := releaseClient(t, s, FileStore(t.TempDir()))
	found, err := client.CheckForUpdate(context.Background(), linuxUpdate)
	if err != nil {
		t.Fatal(err)
	}
	for _, served := range []string{"the 2.0.0 installeR", "the 2.0.0 installer and more"} {
		s.set(func(s *releaseService) { s.served = []byte(served) })
		dir := t.TempDir()
		_, err = client.Download(context.Background(), found.Update, "App.AppImage", dir)
		if entries, _ := os.ReadDir(dir); codeOf(err) != CodeDigestMismatch || len(entries) != 0 {
			t.Fatalf("%q: %v, left %v", served, err, entries)
		}
	}
}

func TestAForgedOrForeignManifestIsBadManifest(t *testing.T) {
	for name, change := range map[string]func(s *releaseService){
		"forged":          func(s *releaseService) { s.forge = true },
		"another product": func(s *releaseService) { s.product = "other" },
		"another file":    func(s *releaseService) { s.listed = "App.deb" },
	} {
		s := newReleaseService(t)
		s.set(change)
		if found, err := releaseClient(t, s, FileStore(t.TempDir())).CheckForUpdate(context.Background(), linuxUpdate); codeOf(err) != CodeBadManifest || found != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestAKeptTokenRefusedIsForgottenAndAskedForAgainOnce(t *testing.T) {
	s := newReleaseService(t)
	client := releaseClient(t, s, FileStore(t.TempDir()))
	if _, err := client.CheckForUpdate(context.Background(), linuxUpdate); err != nil {
		t.Fatal(err)
	}
	s.set(func(s *releaseService) { s.gen = 2 }) // the download links were reset
	if found, err := client.CheckForUpdate(context.Background(), linuxUpdate); err != nil || found.Update == nil {
		t.Fatalf("after a reset: %v", err)
	}
	if s.requests["feed-token"] != 2 || s.requests["refused"] != 1 {
		t.Fatalf("requests %v", s.requests)
	}
	// Revoked: the kept token refused, a new one refused too, and asked for once.
	s.set(func(s *releaseService) { s.gen, s.refuse = 3, "REVOKED" })
	_, err := client.CheckForUpdate(context.Background(), linuxUpdate)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeHTTPStatus || e.Status != 403 || e.Reason != "REVOKED" || s.requests["feed-token"] != 3 {
		t.Fatalf("revoked: %v %v", err, s.requests)
	}
}

func TestAFilenameTheUpdateDoesNotListIsInvalidOptionsAndNothingIsFetched(t *testing.T) {
	s := newReleaseService(t)
	client := releaseClient(t, s, FileStore(t.TempDir()))
	found, err := client.CheckForUpdate(context.Background(), linuxUpdate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Download(context.Background(), found.Update, "../App.AppImage", t.TempDir()); codeOf(err) != CodeInvalidOptions || s.requests["file"] != 0 {
		t.Fatalf("unlisted: %v", err)
	}
	if _, err := client.CheckForUpdate(context.Background(), UpdateQuery{CurrentVersion: "v1.0.0"}); codeOf(err) != CodeInvalidOptions {
		t.Fatalf("not SemVer: %v", err)
	}
}

func TestFeedURLsAreAnsweredAndKeptBesideTheStateAndTheKeptOnesWhenNoAnswerComes(t *testing.T) {
	for name, store := range map[string]StateStore{"file": FileStore(t.TempDir()), "memory": MemoryStore()} {
		s := newReleaseService(t)
		client := releaseClient(t, s, store)
		urls, err := client.FeedURLs(context.Background())
		base := s.server.URL + "/o/" + testSlug + "/api/public/feeds/" + s.token() + "/"
		if err != nil || urls.JSON != base+"latest.json" || urls.Tauri != base+"tauri/{{target}}/{{arch}}/{{current_version}}" {
			t.Fatalf("%s: urls %+v: %v", name, urls, err)
		}
		if dir, ok := store.(*fileStore); ok {
			data, _ := os.ReadFile(filepath.Join(dir.root, testSlug, testProduct, testLidValue+".feed.json"))
			var kept map[string]any
			if json.Unmarshal(data, &kept) != nil || kept["format"] != 1.0 || kept["lid"] != testLidValue || kept["token"] != s.token() {
				t.Fatalf("kept %s", data)
			}
		}
		s.server.Close()
		if kept, err := client.FeedURLs(context.Background()); err != nil || *kept != *urls {
			t.Fatalf("%s: no answer: %+v %v", name, kept, err)
		}
	}
}

func TestSemverPrecedence(t *testing.T) {
	ordered := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "10.0.0"}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := compareSemver(ordered[i], ordered[j]); got != want {
				t.Fatalf("%s vs %s: %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}
