package licensor

import (
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Config configures a Client. BaseURL, Slug, CheckID, CheckToken, PublicKeys and Licence are required.
type Config struct {
	// BaseURL is the service's address, e.g. https://licensing.example.com.
	BaseURL string
	// Slug is the organisation's slug; licences of another organisation are WrongProduct.
	Slug    string
	CheckID string
	// CheckToken is the whole check token, svcc_<checkId>_<secret>. It identifies; it is not a secret.
	CheckToken string
	// PublicKeys are the product's public keys (PEM), its key history: any of them may have signed.
	PublicKeys []string
	// Licence is the licence string this installation holds.
	Licence string
	// ProductKey is the product this application is: a licence signed for another is WrongProduct.
	ProductKey string
	// MachineLabel names this machine to the vendor (1 to 64 printable characters), sent with each
	// check; send it only with the user's agreement.
	MachineLabel string
	// Store keeps the last verified answer, the newest term seen and the clock offset per licence
	// (default: FileStore(DefaultStoreDir())).
	Store StateStore
	// HTTPClient sends the requests (default: a client with Go's default transport).
	HTTPClient *http.Client
	// Clock is the time (default time.Now).
	Clock func() time.Time
	// Timeout bounds each request (default 10 s); a slower answer is no answer.
	Timeout time.Duration
	// Fingerprint is this machine's fingerprint, when the application collected it itself.
	Fingerprint string
	// StableID is passed to CollectFingerprint when Fingerprint is empty.
	StableID string
}

const (
	defaultTimeout = 10 * time.Second
	// maxOffset bounds how far a remembered clock offset is believed: an edited state file cannot
	// stretch an answer's life by more.
	maxOffset = 24 * time.Hour
	// leaseOffset bounds the remembered offset when judging a lease's end (DESIGN.md 13).
	leaseOffset = time.Minute
	// rollbackTolerance: latency between the service signing checkedAt and the answer arriving is
	// not a rollback.
	rollbackTolerance = time.Minute
	// maxAnswerBytes bounds what is read of an answer; the service's are a few hundred bytes.
	maxAnswerBytes = 1 << 20
)

// Client checks one licence on this machine (DESIGN.md 2 and 6). It is safe for concurrent use.
type Client struct {
	config     Config
	keys       PublicKeys
	url        string
	store      StateStore
	httpClient *http.Client
	clock      func() time.Time
	timeout    time.Duration

	fingerprintOnce sync.Once
	fingerprint     string

	mu        sync.Mutex
	licence   string
	newestIat int64 // the newest term this client has seen, beside the stored one
	// lastUsage is this client's last verified usage answer; usageRetryAt holds back usage sends
	// after a 429 (DESIGN.md 19).
	lastUsage    *verifiedUsage
	usageRetryAt time.Time
	// feed is the feed token a memory-only store cannot keep (DESIGN.md 20).
	feed *keptFeed
}

// NewClient checks the configuration and reads the keys; it touches neither the network nor the
// disk. Errors: CodeInvalidOptions for a missing or malformed field (a CheckToken that is not
// svcc_<CheckID>_...), CodeInvalidKey for unreadable keys, CodeNotCheckable for an OFFLINE
// licence (it has no check path: use VerifyLicence).
func NewClient(config Config) (*Client, error) {
	return newClient(config, "Licence")
}

// newClient is NewClient; StartTrial requires ProductKey instead of Licence.
func newClient(config Config, last string) (*Client, error) {
	required := map[string]string{
		"BaseURL": config.BaseURL, "Slug": config.Slug, "CheckID": config.CheckID,
		"CheckToken": config.CheckToken, "Licence": config.Licence, "ProductKey": config.ProductKey,
	}
	for _, name := range []string{"BaseURL", "Slug", "CheckID", "CheckToken", last} {
		if required[name] == "" {
			return nil, newError(CodeInvalidOptions, "%s must be a non-empty string", name)
		}
	}
	if !strings.HasPrefix(config.CheckToken, "svcc_"+config.CheckID+"_") {
		return nil, newError(CodeInvalidOptions, "CheckToken must be the whole svcc_<checkId>_<secret> token for this CheckID")
	}
	if config.MachineLabel != "" && !printable(config.MachineLabel, 64) {
		return nil, newError(CodeInvalidOptions, "MachineLabel must be 1 to 64 printable characters")
	}
	if config.Timeout < 0 {
		return nil, newError(CodeInvalidOptions, "Timeout must not be negative")
	}
	if licenceType(config.Licence) == "OFFLINE" {
		return nil, newError(CodeNotCheckable, "an OFFLINE licence has no check path: use VerifyLicence")
	}
	keys, err := ParsePublicKeys(config.PublicKeys...)
	if err != nil {
		return nil, err
	}
	c := &Client{
		config:      config,
		keys:        keys,
		url:         strings.TrimRight(config.BaseURL, "/") + "/o/" + pathEscape(config.Slug) + "/api/public/license/" + pathEscape(config.CheckID) + "/",
		store:       config.Store,
		httpClient:  config.HTTPClient,
		clock:       config.Clock,
		timeout:     config.Timeout,
		fingerprint: config.Fingerprint,
		licence:     config.Licence,
	}
	if c.store == nil {
		dir, err := DefaultStoreDir()
		if err != nil {
			return nil, newError(CodeInvalidOptions, "no user configuration directory for the state (%v): set Config.Store", err)
		}
		c.store = FileStore(dir)
	}
	if c.httpClient == nil {
		c.httpClient = &http.Client{}
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	if c.timeout == 0 {
		c.timeout = defaultTimeout
	}
	return c, nil
}

func printable(text string, max int) bool {
	n := 0
	for _, r := range text {
		if !unicode.IsPrint(r) {
			return false
		}
		n++
	}
	return n <= max
}

// licenceType is the typ claim of a well-formed payload, read without the signature.
func licenceType(licence string) string {
	payloadPart, _, _ := strings.Cut(licence, ".")
	payload, ok := decodeB64U(payloadPart)
	if !ok {
		return ""
	}
	value, err := parseJSON(payload)
	if object, ok := value.(*jsonObject); err == nil && ok {
		if claims, _ := parseClaims(object); claims != nil {
			return claims.Typ
		}
	}
	return ""
}

// Licence is the licence string in use: the one configured, or the term Fetch last returned.
func (c *Client) Licence() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.licence
}

// Fingerprint is this machine's fingerprint: Config.Fingerprint, else collected once.
func (c *Client) Fingerprint() string {
	c.fingerprintOnce.Do(func() {
		if c.fingerprint == "" {
			c.fingerprint = CollectFingerprint(c.config.StableID).Fingerprint
		}
	})
	return c.fingerprint
}

// Verify verifies a licence string offline as the client does, pinned to the configured slug
// and product key, at the client's clock and with this machine's fingerprint.
func (c *Client) Verify(licence string) *LicenceVerification {
	return c.verify(licence, c.clock())
}

func (c *Client) verify(licence string, now time.Time) *LicenceVerification {
	return VerifyLicence(licence, c.keys, VerifyOptions{
		Now: now, Fingerprint: c.Fingerprint(), ProductKey: c.config.ProductKey, Organisation: c.config.Slug,
	})
}

// stateKey: a licence's state lives under its own signed organisation and product.
func (c *Client) stateKey(claims *Claims) StateKey {
	return StateKey{Slug: claims.Org, ProductKey: claims.Prd, Lid: claims.Lid}
}

// newestSeen is the newest term seen for a licence: by this client or in the store.
func (c *Client) newestSeen(record Record) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if record.NewestIat != nil && *record.NewestIat > c.newestIat {
		return *record.NewestIat
	}
	return c.newestIat
}

// ClearCache forgets the stored answer for the licence in use; the newest term seen and the
// clock offset are kept.
func (c *Client) ClearCache() error {
	v := c.verify(c.Licence(), c.clock())
	if !v.Signed {
		return nil
	}
	return c.store.Update(c.stateKey(v.Claims), func(r *Record) { r.Answer = nil })
}

func newNonce() string {
	bytes := make([]byte, 24)
	if _, err := rand.Read(bytes); err != nil {
		panic("licensor: no randomness for a nonce: " + err.Error())
	}
	return encodeB64U(bytes)
}

// ReleaseResult is the service's verdict on Release: Released with ReleasedAt, or not with a
// Reason: NO_SEAT (this machine holds none), AT_ISSUE (its seat is in the signature) or
// UNKNOWN_LICENCE.
type ReleaseResult struct {
	Released   bool
	ReleasedAt string
	Reason     string
}

// Release frees this machine's seat ("Deactivate this computer", DESIGN.md 12) so the licence can
// be used on another machine; afterwards the stored answer is forgotten and the next Check starts
// fresh. Errors are *Error (CodeHTTPStatus with Status 403 when the product's self-release limit
// is reached; CodeBadLicence when the licence in use does not verify), or, after a release the
// service confirmed, the store's error when the answer could not be forgotten.
func (c *Client) Release(ctx context.Context) (ReleaseResult, error) {
	licence := c.Licence()
	v := c.verify(licence, c.clock())
	if !v.Signed {
		return ReleaseResult{}, newError(CodeBadLicence, "the licence in use does not verify: %s", v.Message)
	}
	nonce := newNonce()
	body, err := c.post(ctx, "release", request{License: licence, Fingerprint: c.Fingerprint(), Nonce: nonce})
	if err != nil {
		return ReleaseResult{}, err
	}
	answerNonce, _ := fieldOf[string](body, "nonce")
	lid, _ := fieldOf[string](body, "lid")
	released, ok := fieldOf[bool](body, "released")
	if answerNonce != nonce || lid != v.Claims.Lid || !ok {
		return ReleaseResult{}, newError(CodeBadResponse, "the release answer is not for this licence and request")
	}
	if !released {
		reason, _ := fieldOf[string](body, "reason")
		return ReleaseResult{Reason: reason}, nil
	}
	releasedAt, _ := fieldOf[string](body, "releasedAt")
	return ReleaseResult{Released: true, ReleasedAt: releasedAt}, c.store.Update(c.stateKey(v.Claims), func(r *Record) { r.Answer = nil })
}

// Fetch gets the current term of this licence (after Renewed), verifies it offline with the
// product's keys, checks that it is the same licence (lid), of this product, and not older (iat)
// than a term already seen; then uses it for later checks and returns it (store it for the next
// start). Errors are *Error: CodeHTTPStatus, CodeTimeout, CodeNetwork, CodeBadResponse,
// CodeBadLicence, CodeLidMismatch, CodeOlderTerm. Check never calls it.
func (c *Client) Fetch(ctx context.Context) (string, error) {
	now := c.clock()
	licence := c.Licence()
	current := c.verify(licence, now)
	if !current.Signed {
		return "", newError(CodeBadLicence, "the licence in use does not verify: %s", current.Message)
	}
	body, err := c.post(ctx, "fetch", request{License: licence, Fingerprint: c.Fingerprint()})
	if err != nil {
		return "", err
	}
	fetched, ok := fieldOf[string](body, "license")
	if !ok {
		return "", newError(CodeBadResponse, "the fetch answer has no licence string")
	}
	next := c.verify(fetched, now)
	switch {
	case !next.Signed:
		return "", newError(CodeBadLicence, "the fetched licence does not verify: %s", next.Message)
	case next.Claims.Lid != current.Claims.Lid:
		return "", newError(CodeLidMismatch, "the fetched licence is another licence")
	case contains(next.Reasons, WrongProduct):
		return "", newError(CodeBadLicence, "the fetched licence is for another product")
	}
	key := c.stateKey(current.Claims)
	record, _ := c.store.Load(key)
	newest := c.newestSeen(record)
	if current.Claims.Iat > newest {
		newest = current.Claims.Iat
	}
	if next.Claims.Iat < newest {
		return "", newError(CodeOlderTerm, "the fetched term is older than one already seen")
	}
	// The term is returned even when the store cannot keep it: this client remembers it.
	c.rememberTerm(next.Claims.Iat)
	_ = c.store.Update(key, func(r *Record) { r.NewestIat = maxPointer(r.NewestIat, next.Claims.Iat) })
	c.mu.Lock()
	c.licence = fetched
	c.mu.Unlock()
	return fetched, nil
}

func contains(reasons []Reason, reason Reason) bool {
	for _, r := range reasons {
		if r == reason {
			return true
		}
	}
	return false
}
