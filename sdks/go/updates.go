package licensor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Releases and licensed downloads (DESIGN.md 20): the SDKs' latest.json feed read with a feed
// token kept per licence, an update kept only when its signed manifest (SVCM1) verifies with the
// product's keys, and its files kept only when their bytes are the manifest's.

// UpdateQuery says which update CheckForUpdate looks for.
type UpdateQuery struct {
	// CurrentVersion is the running application's SemVer version (required); only a higher one
	// is an update.
	CurrentVersion string
	// Platform is linux, darwin, windows or any (default this machine's).
	Platform string
	// Arch is x86_64, aarch64, i686, armv7, riscv64, universal or any (default this machine's).
	Arch string
	// Channel is stable (default), rc, beta, alpha or dev; a channel offers the ones before it too.
	Channel string
}

// Update is a published release this licence may download, as latest.json answers it, its
// manifest verified.
type Update struct {
	Version                string              `json:"version"`
	Channel                string              `json:"channel"`
	PublishedAt            string              `json:"publishedAt"`
	Notes                  string              `json:"notes"`
	Manifest               string              `json:"manifest"`
	ManifestSignatures     []ManifestSignature `json:"manifestSignatures"`
	ManifestSignature      string              `json:"manifestSignature"`
	ManifestKeyFingerprint string              `json:"manifestKeyFingerprint"`
	// Artifacts are the release's files for the platform and arch asked, by filename.
	Artifacts []UpdateArtifact `json:"artifacts"`
}

// ManifestSignature is one key's signature of a release manifest: the key's SPKI SHA-256 (hex)
// and the signature (base64url).
type ManifestSignature struct {
	KeyFingerprint string `json:"keyFingerprint"`
	Signature      string `json:"signature"`
}

// UpdateArtifact is one file of an update; URL downloads it with the feed token alone.
type UpdateArtifact struct {
	ID          int64  `json:"id"`
	Filename    string `json:"filename"`
	Platform    string `json:"platform"`
	Arch        string `json:"arch"`
	Size        int64  `json:"size"`
	Sha256      string `json:"sha256"`
	Sha512      string `json:"sha512"`
	ContentType string `json:"contentType"`
	URL         string `json:"url"`
}

// BlockedRelease is a higher release than the update that this licence may not download: Reason
// UPDATES_EXPIRED (published after its update window) or NOT_ENTITLED (its requires not met).
type BlockedRelease struct {
	Version     string `json:"version"`
	PublishedAt string `json:"publishedAt"`
	Reason      string `json:"reason"`
}

// UpdateCheck is what CheckForUpdate found: an update (nil: none) and a blocked release (nil: none).
type UpdateCheck struct {
	Update  *Update
	Blocked *BlockedRelease
}

// DownloadedFile is a file Download kept: its path, size and SHA-256 (lowercase hex).
type DownloadedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Sha256 string `json:"sha256"`
}

// FeedURLs are the licence's feeds for the updaters (electron-updater, Tauri v2, Sparkle 2, and
// the SDKs' latest.json). They are secrets: anyone holding one downloads what the licence may.
type FeedURLs struct {
	Electron string `json:"electron"`
	Tauri    string `json:"tauri"`
	Sparkle  string `json:"sparkle"`
	JSON     string `json:"json"`
}

var (
	semverPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?$`)
	channels      = map[string]bool{"stable": true, "rc": true, "beta": true, "alpha": true, "dev": true}
	platforms     = map[string]bool{"linux": true, "darwin": true, "windows": true, "any": true}
	arches        = map[string]bool{"x86_64": true, "aarch64": true, "i686": true, "armv7": true, "riscv64": true, "universal": true, "any": true}
	// goArches are Go's names for the service's arches.
	goArches = map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "arm": "armv7", "riscv64": "riscv64"}
)

// CheckForUpdate asks the licence's latest.json feed for the highest release above
// query.CurrentVersion that this licence may download on the platform and arch (DESIGN.md 20).
// The feed token is kept in the state store per licence and asked for when none is kept; a 403
// on a kept token forgets it and asks again, once. The update is kept only when one of its
// manifest signatures verifies with the client's keys, and the manifest names this organisation,
// this product, the update's version and channel, and a version above CurrentVersion; else
// CodeBadManifest. Errors are *Error: CodeInvalidOptions (the query), CodeBadLicence,
// CodeHTTPStatus (with Status and the answer's Reason), CodeTimeout, CodeNetwork, CodeBadResponse,
// CodeBadManifest.
func (c *Client) CheckForUpdate(ctx context.Context, query UpdateQuery) (*UpdateCheck, error) {
	if !semverPattern.MatchString(query.CurrentVersion) {
		return nil, newError(CodeInvalidOptions, "CurrentVersion must be a SemVer version such as 1.2.3")
	}
	if query.Platform == "" {
		query.Platform = thisPlatform()
	}
	if query.Arch == "" {
		query.Arch = goArches[runtime.GOARCH]
		if query.Arch == "" {
			query.Arch = "any"
		}
	}
	if query.Channel == "" {
		query.Channel = "stable"
	}
	switch {
	case !platforms[query.Platform]:
		return nil, newError(CodeInvalidOptions, "Platform must be linux, darwin, windows or any")
	case !arches[query.Arch]:
		return nil, newError(CodeInvalidOptions, "Arch must be x86_64, aarch64, i686, armv7, riscv64, universal or any")
	case !channels[query.Channel]:
		return nil, newError(CodeInvalidOptions, "Channel must be stable, rc, beta, alpha or dev")
	}
	v, err := c.signedLicence()
	if err != nil {
		return nil, err
	}
	key := c.stateKey(v.Claims)
	record, _ := c.store.Load(key)
	token, kept := record.FeedToken, true
	params := url.Values{"platform": {query.Platform}, "arch": {query.Arch}, "version": {query.CurrentVersion}, "channel": {query.Channel}}
	for {
		if token == "" {
			kept = false
			if token, err = c.askFeedToken(ctx, v, key); err != nil {
				return nil, err
			}
		}
		body, err := c.get(ctx, c.feedBase(token)+"latest.json?"+params.Encode())
		var e *Error
		if kept && errors.As(err, &e) && e.Status == http.StatusForbidden {
			_ = c.store.Update(key, func(r *Record) { r.FeedToken = "" })
			token = ""
			continue
		}
		if err != nil {
			return nil, err
		}
		return c.readLatest(body, query.CurrentVersion)
	}
}

// Download streams one of the update's files (by filename) to a temporary file beside to, and
// keeps it as to only when its size and SHA-256 are the signed manifest's; otherwise it is
// deleted (CodeDigestMismatch). The file's URL carries the feed token: no credential is sent.
// Errors are *Error: CodeInvalidOptions (a filename the update does not list, no update, an
// empty to), CodeBadManifest, CodeDigestMismatch, CodeHTTPStatus, CodeTimeout, CodeNetwork.
func (c *Client) Download(ctx context.Context, update *Update, filename, to string) (*DownloadedFile, error) {
	if update == nil {
		return nil, newError(CodeInvalidOptions, "there is no update to download")
	}
	if to == "" {
		return nil, newError(CodeInvalidOptions, "to must be the path of the file to write")
	}
	var artifact *UpdateArtifact
	for i := range update.Artifacts {
		if update.Artifacts[i].Filename == filename {
			artifact = &update.Artifacts[i]
		}
	}
	if artifact == nil {
		return nil, newError(CodeInvalidOptions, "the update has no file %q", filename)
	}
	entries, err := c.verifyManifest(update)
	if err != nil {
		return nil, err
	}
	signed, ok := entries[filename]
	if !ok {
		return nil, newError(CodeBadManifest, "the manifest does not sign %q", filename)
	}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, artifact.URL, nil)
	if err != nil {
		return nil, newError(CodeBadResponse, "the file's url cannot be requested: %v", err)
	}
	// The timeout bounds waiting for the answer to begin; the bytes take as long as they take.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := time.AfterFunc(c.timeout, cancel)
	response, err := c.httpClient.Do(request.WithContext(ctx))
	if !timer.Stop() && err != nil {
		return nil, newError(CodeTimeout, "no answer within %v", c.timeout)
	}
	if err != nil {
		return nil, transportError(ctx, err, "the file cannot be fetched", c.timeout)
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(response.Body, maxAnswerBytes))
		return nil, statusError(response, text)
	}
	temporary, err := os.CreateTemp(filepath.Dir(to), "."+filepath.Base(to)+".*.part")
	if err != nil {
		return nil, newError(CodeInvalidOptions, "the file cannot be written beside %s: %v", to, err)
	}
	digest := sha256.New()
	// One byte more than signed is enough to tell a longer file.
	size, err := io.Copy(io.MultiWriter(temporary, digest), io.LimitReader(response.Body, signed.size+1))
	if err == nil {
		err = temporary.Sync()
	}
	if closeErr := temporary.Close(); err == nil {
		err = closeErr
	}
	sum := hex.EncodeToString(digest.Sum(nil))
	switch {
	case err != nil:
		os.Remove(temporary.Name())
		return nil, transportError(ctx, err, "the file was cut off", c.timeout)
	case size != signed.size || sum != signed.sha256:
		os.Remove(temporary.Name())
		return nil, newError(CodeDigestMismatch, "%s is not the signed file (%d bytes, SHA-256 %s)", filename, size, sum)
	}
	if err := os.Rename(temporary.Name(), to); err != nil {
		os.Remove(temporary.Name())
		return nil, newError(CodeInvalidOptions, "the file cannot be kept as %s: %v", to, err)
	}
	return &DownloadedFile{Path: to, Size: size, Sha256: sum}, nil
}

// FeedURLs asks for the licence's feed token (the same one until the download links are reset
// or this machine takes a new seat) and answers its feeds; when no answer comes (timeout,
// network, the service failing) it answers the kept token's. Errors are *Error: CodeBadLicence,
// CodeHTTPStatus (a refusal, with its Reason), CodeTimeout or CodeNetwork with no kept token,
// CodeBadResponse.
func (c *Client) FeedURLs(ctx context.Context) (*FeedURLs, error) {
	v, err := c.signedLicence()
	if err != nil {
		return nil, err
	}
	key := c.stateKey(v.Claims)
	token, err := c.askFeedToken(ctx, v, key)
	var e *Error
	if errors.As(err, &e) && (e.Code == CodeTimeout || e.Code == CodeNetwork || e.Status >= 500) {
		if record, _ := c.store.Load(key); record.FeedToken != "" {
			token, err = record.FeedToken, nil
		}
	}
	if err != nil {
		return nil, err
	}
	base := c.feedBase(token)
	return &FeedURLs{
		Electron: base + "electron/",
		Tauri:    base + "tauri/{{target}}/{{arch}}/{{current_version}}",
		Sparkle:  base + "sparkle/appcast.xml",
		JSON:     base + "latest.json",
	}, nil
}

func thisPlatform() string {
	if platforms[runtime.GOOS] {
		return runtime.GOOS
	}
	return "any"
}

// signedLicence is the licence in use verified offline; a download needs only its signature
// (an expired licence keeps what its window covers).
func (c *Client) signedLicence() (*LicenceVerification, error) {
	v := c.verify(c.Licence(), c.clock())
	if !v.Signed {
		return nil, newError(CodeBadLicence, "the licence in use does not verify: %s", v.Message)
	}
	return v, nil
}

// feedBase is the feeds' address under a token, on the configured service.
func (c *Client) feedBase(token string) string {
	return strings.TrimRight(c.config.BaseURL, "/") + "/o/" + pathEscape(c.config.Slug) + "/api/public/feeds/" + pathEscape(token) + "/"
}

// askFeedToken asks the service for the licence's feed token and keeps it.
func (c *Client) askFeedToken(ctx context.Context, v *LicenceVerification, key StateKey) (string, error) {
	body, err := c.post(ctx, "feed-token", request{License: c.Licence(), Fingerprint: c.Fingerprint()})
	if err != nil {
		return "", err
	}
	token, ok := fieldOf[string](body, "token")
	if !ok || !strings.HasPrefix(token, "SVCF1.") {
		return "", newError(CodeBadResponse, "the feed-token answer has no SVCF1 token")
	}
	// Unkept, the token still serves this call: the next asks again.
	_ = c.store.Update(key, func(r *Record) { r.FeedToken = token })
	return token, nil
}

// get reads a JSON object answered 200 to a GET; everything else is an *Error.
func (c *Client) get(ctx context.Context, address string) (*jsonObject, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, address, nil)
	if err != nil {
		return nil, newError(CodeNetwork, "the request cannot be made: %v", err)
	}
	request.Header.Set("Accept", "application/json")
	response, err := c.httpClient.Do(request)
	if err != nil {
		return nil, transportError(ctx, err, "the service cannot be reached", c.timeout)
	}
	defer response.Body.Close()
	text, err := io.ReadAll(io.LimitReader(response.Body, maxAnswerBytes+1))
	if response.StatusCode != http.StatusOK {
		return nil, statusError(response, text)
	}
	if err != nil {
		return nil, transportError(ctx, err, "the answer was cut off", c.timeout)
	}
	value, err := parseJSON(text)
	object, ok := value.(*jsonObject)
	if err != nil || !ok || len(text) > maxAnswerBytes {
		return nil, newError(CodeBadResponse, "the answer is not a JSON object")
	}
	return object, nil
}

// statusError is a non-200 answer: HTTP_STATUS with the body's error and reason when it has them.
func statusError(response *http.Response, text []byte) *Error {
	value, _ := parseJSON(text)
	body, _ := value.(*jsonObject)
	message, ok := fieldOf[string](body, "error")
	if !ok {
		message = "the service answered " + strconv.Itoa(response.StatusCode)
	}
	reason, _ := fieldOf[string](body, "reason")
	return &Error{Code: CodeHTTPStatus, Message: message, Status: response.StatusCode, Reason: reason, RetryAfterSeconds: retryAfterSeconds(response)}
}

// readLatest reads latest.json's {update, blocked}, keeping the update only when its manifest
// verifies and is above current.
func (c *Client) readLatest(body *jsonObject, current string) (*UpdateCheck, error) {
	bad := newError(CodeBadResponse, "the latest.json answer is not {update, blocked}")
	result := &UpdateCheck{}
	if value, present := body.get("blocked"); !present {
		return nil, bad
	} else if object, ok := value.(*jsonObject); ok {
		result.Blocked = &BlockedRelease{}
		if !readStrings(object, map[string]*string{"version": &result.Blocked.Version, "publishedAt": &result.Blocked.PublishedAt, "reason": &result.Blocked.Reason}) {
			return nil, bad
		}
	} else if value != nil {
		return nil, bad
	}
	value, present := body.get("update")
	if !present {
		return nil, bad
	}
	if value == nil {
		return result, nil
	}
	object, ok := value.(*jsonObject)
	update := &Update{}
	if !ok || !readUpdate(object, update) {
		return nil, bad
	}
	if _, err := c.verifyManifest(update); err != nil {
		return nil, err
	}
	if compareSemver(update.Version, current) <= 0 {
		return nil, newError(CodeBadManifest, "the update's version %s is not above %s", update.Version, current)
	}
	result.Update = update
	return result, nil
}

func readStrings(object *jsonObject, targets map[string]*string) bool {
	for name, target := range targets {
		text, ok := fieldOf[string](object, name)
		if !ok {
			return false
		}
		*target = text
	}
	return true
}

func readInteger(object *jsonObject, name string, target *int64) bool {
	n, ok := fieldOf[jsonNumber](object, name)
	if ok {
		*target, ok = n.integer()
	}
	return ok
}

func readUpdate(object *jsonObject, u *Update) bool {
	if !readStrings(object, map[string]*string{
		"version": &u.Version, "channel": &u.Channel, "publishedAt": &u.PublishedAt, "notes": &u.Notes, "manifest": &u.Manifest,
		"manifestSignature": &u.ManifestSignature, "manifestKeyFingerprint": &u.ManifestKeyFingerprint,
	}) {
		return false
	}
	signatures, ok := fieldOf[[]any](object, "manifestSignatures")
	if !ok {
		return false
	}
	for _, item := range signatures {
		entry, ok := item.(*jsonObject)
		var s ManifestSignature
		if !ok || !readStrings(entry, map[string]*string{"keyFingerprint": &s.KeyFingerprint, "signature": &s.Signature}) {
			return false
		}
		u.ManifestSignatures = append(u.ManifestSignatures, s)
	}
	artifacts, ok := fieldOf[[]any](object, "artifacts")
	if !ok {
		return false
	}
	u.Artifacts = []UpdateArtifact{}
	for _, item := range artifacts {
		entry, ok := item.(*jsonObject)
		var a UpdateArtifact
		if !ok || !readInteger(entry, "id", &a.ID) || !readInteger(entry, "size", &a.Size) || !readStrings(entry, map[string]*string{
			"filename": &a.Filename, "platform": &a.Platform, "arch": &a.Arch, "sha256": &a.Sha256, "sha512": &a.Sha512,
			"contentType": &a.ContentType, "url": &a.URL,
		}) {
			return false
		}
		u.Artifacts = append(u.Artifacts, a)
	}
	return true
}

// signedFile is a manifest's size and SHA-256 of one file.
type signedFile struct {
	size   int64
	sha256 string
}

// verifyManifest checks that a signature of the update's manifest verifies with the client's keys
// and that the manifest is this organisation's and product's, of the update's version and
// channel; it answers the signed files by filename.
func (c *Client) verifyManifest(u *Update) (map[string]signedFile, error) {
	verified := false
	for _, s := range u.ManifestSignatures {
		if signature, ok := decodeB64U(s.Signature); ok && c.keys.verifiedBy([]byte(u.Manifest), signature) {
			verified = true
			break
		}
	}
	if !verified {
		return nil, newError(CodeBadManifest, "no signature of the manifest verifies with the product's keys")
	}
	product := c.config.ProductKey
	if product == "" {
		product = c.verify(c.Licence(), c.clock()).Claims.Prd
	}
	parts := strings.Split(u.Manifest, "\x1f")
	if len(parts) < 7 || parts[0] != "SVCM1" || parts[1] != c.config.Slug || parts[2] != product || parts[3] != u.Version || parts[4] != u.Channel {
		return nil, newError(CodeBadManifest, "the manifest is not this product's release %s (%s)", u.Version, u.Channel)
	}
	n, err := strconv.Atoi(parts[6])
	if err != nil || len(parts) != 7+5*n {
		return nil, newError(CodeBadManifest, "the manifest's files cannot be read")
	}
	files := map[string]signedFile{}
	for i := 7; i < len(parts); i += 5 {
		size, err := strconv.ParseInt(parts[i+3], 10, 64)
		if err != nil {
			return nil, newError(CodeBadManifest, "the manifest's files cannot be read")
		}
		files[parts[i]] = signedFile{size: size, sha256: parts[i+4]}
	}
	return files, nil
}

// compareSemver orders two SemVer versions by precedence (SemVer 2.0.0, 11): -1, 0 or 1.
func compareSemver(a, b string) int {
	coreA, preA, _ := strings.Cut(a, "-")
	coreB, preB, _ := strings.Cut(b, "-")
	partsA, partsB := strings.Split(coreA, "."), strings.Split(coreB, ".")
	for i := range partsA {
		if order := compareNumeric(partsA[i], partsB[i]); order != 0 {
			return order
		}
	}
	switch {
	case preA == preB:
		return 0
	case preA == "":
		return 1
	case preB == "":
		return -1
	}
	idsA, idsB := strings.Split(preA, "."), strings.Split(preB, ".")
	for i := 0; i < len(idsA) && i < len(idsB); i++ {
		x, y := idsA[i], idsB[i]
		numX, numY := isDigits(x), isDigits(y)
		order := 0
		switch {
		case numX && numY:
			order = compareNumeric(x, y)
		case numX:
			order = -1
		case numY:
			order = 1
		default:
			order = strings.Compare(x, y)
		}
		if order != 0 {
			return order
		}
	}
	return compareNumeric(strconv.Itoa(len(idsA)), strconv.Itoa(len(idsB)))
}

// compareNumeric orders decimal strings without leading zeros, of any length.
func compareNumeric(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
