package licensor

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
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
	"sync"
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
	ManifestSignature      *string             `json:"manifestSignature"`
	ManifestKeyFingerprint *string             `json:"manifestKeyFingerprint"`
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
	// goPlatforms and goArches are Go's names for the service's platforms and arches.
	goPlatforms = map[string]string{"linux": "linux", "darwin": "darwin", "windows": "windows"}
	goArches    = map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "arm": "armv7", "riscv64": "riscv64"}
	// filenamePattern is DESIGN.md 20's filename rule (Download also refuses ".." anywhere), so a
	// name never leaves the folder it is written to.
	filenamePattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._+ -]{0,253}[A-Za-z0-9._+-])?$`)
	sha256Pattern   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// maxRedirects is how many redirects a download follows at most.
const maxRedirects = 5

// CheckForUpdate asks the licence's latest.json feed for the highest release above
// query.CurrentVersion that this licence may download on the platform and arch (DESIGN.md 20;
// docs/protocol.md section 16). The feed token is kept per licence (`<lid>.feed.json` beside its
// state) and asked for when none is kept; a 403 forgets it, and a kept one is asked for again,
// once. The update is kept only when a manifest signature by one of the client's keys verifies and
// the manifest names this organisation, this product, the update's version and channel, a version
// above CurrentVersion and each of the update's files as the update lists it; else
// CodeBadManifest. Errors are *Error: CodeInvalidOptions (the query, nothing sent),
// CodeBadLicence, CodeHTTPStatus (with Status and the answer's Reason), CodeTimeout, CodeNetwork,
// CodeBadResponse, CodeBadManifest.
func (c *Client) CheckForUpdate(ctx context.Context, query UpdateQuery) (*UpdateCheck, error) {
	params, err := updateParams(query)
	if err != nil {
		return nil, err
	}
	v, err := c.signedLicence()
	if err != nil {
		return nil, err
	}
	kept := c.keptFeed(v.Claims)
	feed := kept
	if feed == nil {
		if feed, err = c.askFeed(ctx, v.Claims); err != nil {
			return nil, err
		}
	}
	body, err := c.get(ctx, c.feedBase(feed.Token)+"latest.json?"+params)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusForbidden {
		// A reset, a new seat or a revocation: the token is worth nothing now.
		c.forgetFeed(v.Claims)
		if kept == nil {
			return nil, err
		}
		if feed, err = c.askFeed(ctx, v.Claims); err != nil {
			return nil, err
		}
		body, err = c.get(ctx, c.feedBase(feed.Token)+"latest.json?"+params)
	}
	if err != nil {
		return nil, err
	}
	result, err := readLatest(body)
	if err != nil || result.Update == nil {
		return result, err
	}
	files, err := c.verifyManifest(result.Update, v.Claims)
	if err != nil {
		return nil, err
	}
	if compareSemver(result.Update.Version, query.CurrentVersion) <= 0 {
		return nil, newError(CodeBadManifest, "the update's version %s is not above %s", result.Update.Version, query.CurrentVersion)
	}
	for _, a := range result.Update.Artifacts {
		if signed, ok := files[a.Filename]; !ok || signed != (signedFile{a.Platform, a.Arch, a.Size, a.Sha256}) {
			return nil, newError(CodeBadManifest, "the manifest does not list %s as the update does", a.Filename)
		}
	}
	return result, nil
}

// Download streams one of the update's files (by filename) into the folder to (made if
// missing): to a temporary file there, renamed to to/filename only when its size and SHA-256 are
// the signed manifest's; otherwise it is deleted (CodeDigestMismatch). The file's URL carries
// the feed token: no credential is sent; up to 5 redirects are followed (S3's presigned URL). The timeout holds between chunks, not for the whole
// file. Errors are *Error: CodeInvalidOptions (a filename the update does not list, a folder that
// cannot be written), CodeBadManifest, CodeDigestMismatch, CodeHTTPStatus (with Reason),
// CodeTimeout, CodeNetwork.
func (c *Client) Download(ctx context.Context, update *Update, filename, to string) (*DownloadedFile, error) {
	var artifact *UpdateArtifact
	for i := 0; update != nil && i < len(update.Artifacts); i++ {
		if update.Artifacts[i].Filename == filename {
			artifact = &update.Artifacts[i]
		}
	}
	if artifact == nil || !filenamePattern.MatchString(filename) || strings.Contains(filename, "..") {
		return nil, newError(CodeInvalidOptions, "the update lists no file %q", filename)
	}
	if to == "" {
		return nil, newError(CodeInvalidOptions, "to must be the folder to download into")
	}
	v, err := c.signedLicence()
	if err != nil {
		return nil, err
	}
	files, err := c.verifyManifest(update, v.Claims)
	if err != nil {
		return nil, err
	}
	signed, ok := files[filename]
	if !ok {
		return nil, newError(CodeBadManifest, "the manifest does not list %s", filename)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := &idleTimer{cancel: cancel, timeout: c.timeout}
	idle.arm()
	defer idle.stop()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, artifact.URL, nil)
	if err != nil {
		return nil, newError(CodeBadResponse, "the file's url cannot be requested: %v", err)
	}
	// On S3 the file's URL answers 303 to a presigned URL of the store.
	client := *c.httpClient
	client.CheckRedirect = func(_ *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return errors.New("more than 5 redirects")
		}
		return nil
	}
	response, err := client.Do(request)
	if err != nil {
		return nil, idle.failure(err, "the file cannot be fetched")
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(response.Body, maxAnswerBytes))
		return nil, statusError(response, text)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return nil, newError(CodeInvalidOptions, "the folder %s cannot be made: %v", to, err)
	}
	// In the same folder, so the rename is atomic; a leading dot keeps it out of ordinary listings.
	temporary, err := os.CreateTemp(to, "."+filename+".*.part")
	if err != nil {
		return nil, newError(CodeInvalidOptions, "the file cannot be written in %s: %v", to, err)
	}
	digest := sha256.New()
	// One byte more than signed is enough to tell a longer file: reading stops there.
	size, err := io.Copy(io.MultiWriter(temporary, digest), io.LimitReader(idleReader{response.Body, idle}, signed.size+1))
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
		return nil, idle.failure(err, "the download was cut off")
	case size != signed.size || sum != signed.sha256:
		os.Remove(temporary.Name())
		return nil, newError(CodeDigestMismatch, "%s is not the file the manifest signed (size or SHA-256 differ): it was deleted", filename)
	}
	path := filepath.Join(to, filename)
	if err := os.Rename(temporary.Name(), path); err != nil {
		os.Remove(temporary.Name())
		return nil, newError(CodeInvalidOptions, "the file cannot be kept as %s: %v", path, err)
	}
	return &DownloadedFile{Path: path, Size: size, Sha256: sum}, nil
}

// FeedURLs asks for the licence's feed token (the same one until the download links are reset
// or this machine takes a new seat), keeps it and answers its feeds; when no answer comes
// (CodeTimeout, CodeNetwork) it answers the kept ones. Errors are *Error: CodeBadLicence,
// CodeHTTPStatus (a refusal, with its Reason), CodeTimeout or CodeNetwork with none kept,
// CodeBadResponse.
func (c *Client) FeedURLs(ctx context.Context) (*FeedURLs, error) {
	v, err := c.signedLicence()
	if err != nil {
		return nil, err
	}
	feed, err := c.askFeed(ctx, v.Claims)
	var e *Error
	if errors.As(err, &e) && (e.Code == CodeTimeout || e.Code == CodeNetwork) {
		if kept := c.keptFeed(v.Claims); kept != nil {
			feed, err = kept, nil
		}
	}
	if err != nil {
		return nil, err
	}
	urls := feed.URLs
	return &urls, nil
}

// updateParams is latest.json's query, or CodeInvalidOptions for what the service would refuse.
func updateParams(query UpdateQuery) (string, error) {
	if len(query.CurrentVersion) > 64 || !semverPattern.MatchString(query.CurrentVersion) {
		return "", newError(CodeInvalidOptions, `CurrentVersion must be a SemVer version such as 1.2.3 (no "v", no build metadata)`)
	}
	platform, arch := query.Platform, query.Arch
	if platform == "" {
		platform = goPlatforms[runtime.GOOS]
	}
	if arch == "" {
		arch = goArches[runtime.GOARCH]
	}
	switch {
	case !platforms[platform]:
		return "", newError(CodeInvalidOptions, "Platform must be linux, darwin, windows or any (this machine's is not known: give it)")
	case !arches[arch]:
		return "", newError(CodeInvalidOptions, "Arch must be x86_64, aarch64, i686, armv7, riscv64, universal or any (this machine's is not known: give it)")
	case query.Channel != "" && !channels[query.Channel]:
		return "", newError(CodeInvalidOptions, "Channel must be stable, rc, beta, alpha or dev")
	}
	params := "platform=" + url.QueryEscape(platform) + "&arch=" + url.QueryEscape(arch) + "&version=" + url.QueryEscape(query.CurrentVersion)
	if query.Channel != "" {
		params += "&channel=" + url.QueryEscape(query.Channel)
	}
	return params, nil
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

// keptFeed is a feed token and its URLs as kept per licence (docs/protocol.md section 8).
type keptFeed struct {
	Format int      `json:"format"`
	Lid    string   `json:"lid"`
	Token  string   `json:"token"`
	URLs   FeedURLs `json:"urls"`
}

// feedFile is `<root>/<org>/<prd>/<lid>.feed.json`, "" for a memory-only store.
func (c *Client) feedFile(claims *Claims) string {
	store, ok := c.store.(productDirectoryStore)
	if !ok || checkPathPart(claims.Lid) != nil {
		return ""
	}
	dir, err := store.productDirectory(claims.Org, claims.Prd)
	if err != nil {
		return ""
	}
	return filepath.Join(dir, claims.Lid+".feed.json")
}

// keptFeed is the licence's kept feed, or nil (none, unreadable, another licence's).
func (c *Client) keptFeed(claims *Claims) *keptFeed {
	file := c.feedFile(claims)
	if file == "" {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.feed != nil && c.feed.Lid == claims.Lid {
			return c.feed
		}
		return nil
	}
	data, _ := os.ReadFile(file)
	value, err := parseJSON(data)
	object, _ := value.(*jsonObject)
	feed := &keptFeed{Format: stateFormat, Lid: claims.Lid}
	urls, _ := fieldOf[*jsonObject](object, "urls")
	format, _ := fieldOf[jsonNumber](object, "format")
	lid, _ := fieldOf[string](object, "lid")
	if err != nil || format != "1" || lid != claims.Lid || !readStrings(object, map[string]*string{"token": &feed.Token}) || feed.Token == "" || !readURLs(urls, &feed.URLs) {
		return nil
	}
	return feed
}

func readURLs(object *jsonObject, urls *FeedURLs) bool {
	return readStrings(object, map[string]*string{"electron": &urls.Electron, "tauri": &urls.Tauri, "sparkle": &urls.Sparkle, "json": &urls.JSON})
}

// askFeed asks the service for the licence's feed token and keeps it; unkept, it still serves
// this call (the next asks again).
func (c *Client) askFeed(ctx context.Context, claims *Claims) (*keptFeed, error) {
	body, err := c.post(ctx, "feed-token", request{License: c.Licence(), Fingerprint: c.Fingerprint()})
	if err != nil {
		return nil, err
	}
	feed := &keptFeed{Format: stateFormat, Lid: claims.Lid}
	urls, _ := fieldOf[*jsonObject](body, "urls")
	if !readStrings(body, map[string]*string{"token": &feed.Token}) || feed.Token == "" || !readURLs(urls, &feed.URLs) {
		return nil, newError(CodeBadResponse, "the feed-token answer lacks its token or URLs")
	}
	if file := c.feedFile(claims); file != "" {
		data, _ := json.MarshalIndent(feed, "", "  ") // strings only: cannot fail
		if os.MkdirAll(filepath.Dir(file), 0o700) == nil {
			_ = writeAtomically(filepath.Dir(file), file, append(data, '\n'))
		}
	} else {
		c.mu.Lock()
		c.feed = feed
		c.mu.Unlock()
	}
	return feed, nil
}

func (c *Client) forgetFeed(claims *Claims) {
	if file := c.feedFile(claims); file != "" {
		os.Remove(file)
		return
	}
	c.mu.Lock()
	c.feed = nil
	c.mu.Unlock()
}

// get reads a JSON object answered 200 to a GET (no credential header); everything else is an *Error.
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

// idleTimer cancels a download when no bytes come for the timeout.
type idleTimer struct {
	cancel  func()
	timeout time.Duration
	mu      sync.Mutex
	timer   *time.Timer
	fired   bool
}

func (t *idleTimer) arm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
	}
	t.timer = time.AfterFunc(t.timeout, func() {
		t.mu.Lock()
		t.fired = true
		t.mu.Unlock()
		t.cancel()
	})
}

func (t *idleTimer) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timer.Stop()
}

// failure is a transfer's error: TIMEOUT when the timer ended it, else NETWORK.
func (t *idleTimer) failure(err error, what string) *Error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fired {
		return newError(CodeTimeout, "no bytes within %v", t.timeout)
	}
	return newError(CodeNetwork, "%s: %v", what, err)
}

// idleReader arms the timer again before each read.
type idleReader struct {
	r     io.Reader
	timer *idleTimer
}

func (r idleReader) Read(p []byte) (int, error) {
	r.timer.arm()
	return r.r.Read(p)
}

// readLatest reads latest.json's {update, blocked}; BAD_RESPONSE for another shape.
func readLatest(body *jsonObject) (*UpdateCheck, error) {
	bad := newError(CodeBadResponse, "the latest.json answer is not {update, blocked}")
	result := &UpdateCheck{}
	if value, present := body.get("blocked"); !present {
		return nil, bad
	} else if object, ok := value.(*jsonObject); ok {
		result.Blocked = &BlockedRelease{}
		reason := &result.Blocked.Reason
		if !readStrings(object, map[string]*string{"version": &result.Blocked.Version, "publishedAt": &result.Blocked.PublishedAt, "reason": reason}) ||
			(*reason != "UPDATES_EXPIRED" && *reason != "NOT_ENTITLED") {
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
	result.Update = &Update{}
	if !ok || !readUpdate(object, result.Update) {
		return nil, bad
	}
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

// readNullable reads a string or null member (present either way).
func readNullable(object *jsonObject, name string, target **string) bool {
	value, present := object.get(name)
	text, ok := value.(string)
	if ok {
		*target = &text
	}
	return present && (ok || value == nil)
}

func readUpdate(object *jsonObject, u *Update) bool {
	if !readStrings(object, map[string]*string{"version": &u.Version, "channel": &u.Channel, "publishedAt": &u.PublishedAt, "notes": &u.Notes, "manifest": &u.Manifest}) ||
		!readNullable(object, "manifestSignature", &u.ManifestSignature) || !readNullable(object, "manifestKeyFingerprint", &u.ManifestKeyFingerprint) {
		return false
	}
	signatures, ok := fieldOf[[]any](object, "manifestSignatures")
	if !ok {
		return false
	}
	u.ManifestSignatures = []ManifestSignature{}
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

// signedFile is what a manifest signs of one file.
type signedFile struct {
	platform, arch string
	size           int64
	sha256         string
}

// verifyManifest checks that a manifest signature whose keyFingerprint is one of the client's
// keys verifies with that key, and that the manifest is SVCM1 of this organisation and product,
// of the update's version and channel; it answers the signed files by filename.
func (c *Client) verifyManifest(u *Update, claims *Claims) (map[string]signedFile, error) {
	known := map[string]crypto.PublicKey{}
	for _, key := range c.keys {
		if der, err := x509.MarshalPKIXPublicKey(key); err == nil {
			sum := sha256.Sum256(der)
			known[hex.EncodeToString(sum[:])] = key
		}
	}
	verified := false
	for _, s := range u.ManifestSignatures {
		key, ok := known[s.KeyFingerprint]
		signature, decoded := decodeB64U(s.Signature)
		if ok && decoded && verifySignature(key, []byte(u.Manifest), signature) {
			verified = true
			break
		}
	}
	if !verified {
		return nil, newError(CodeBadManifest, "the update's manifest is not signed by a key this application knows")
	}
	product := c.config.ProductKey
	if product == "" {
		product = claims.Prd
	}
	parts := strings.Split(u.Manifest, "\x1f")
	bad := newError(CodeBadManifest, "the update's manifest is not SVCM1")
	if len(parts) < 7 || parts[0] != "SVCM1" || !decimal.MatchString(parts[5]) || !decimal.MatchString(parts[6]) {
		return nil, bad
	}
	if n, err := strconv.Atoi(parts[6]); err != nil || len(parts) != 7+5*n {
		return nil, bad
	}
	files := map[string]signedFile{}
	for i := 7; i < len(parts); i += 5 {
		size, err := strconv.ParseInt(parts[i+3], 10, 64)
		_, duplicate := files[parts[i]]
		if !decimal.MatchString(parts[i+3]) || err != nil || size > maxSafeInteger || !sha256Pattern.MatchString(parts[i+4]) || duplicate {
			return nil, bad
		}
		files[parts[i]] = signedFile{platform: parts[i+1], arch: parts[i+2], size: size, sha256: parts[i+4]}
	}
	switch {
	case parts[1] != c.config.Slug || parts[2] != product:
		return nil, newError(CodeBadManifest, "the update's manifest is another organisation's or product's")
	case parts[3] != u.Version || parts[4] != u.Channel:
		return nil, newError(CodeBadManifest, "the update's manifest is for another version or channel")
	case !semverPattern.MatchString(u.Version):
		return nil, newError(CodeBadManifest, "the update's version is not SemVer")
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
