package licensor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// StoredAnswer is a verified check answer as kept: exactly the strings signed and the receipt,
// so the client verifies it again on every load and an edited file is worth nothing.
type StoredAnswer struct {
	// Tag is SVCR1 (terms with v 3 or 4) or SVCR2 (v 5, floating: LeaseEndsAt is signed too).
	Tag ReceiptTag
	ReceiptFields
	Receipt string
	// Renewed is the answer's unsigned renewed hint.
	Renewed bool
	// Converted is the answer's unsigned converted hint (a converted trial, DESIGN.md 18).
	Converted bool
}

// Record is what the client remembers about one licence on this machine. NewestIat and OffsetMs
// outlive the answer: Release and ClearCache forget only the answer (DESIGN.md 12).
type Record struct {
	// NewestIat is the newest term (iat, Unix seconds) seen for this licence.
	NewestIat *int64
	// OffsetMs is the service's clock minus this machine's when the latest verified answer arrived.
	OffsetMs *int64
	Answer   *StoredAnswer
}

// StateKey names one licence's record by its signed claims: org, prd and lid.
type StateKey struct {
	Slug       string
	ProductKey string
	Lid        string
}

// StateStore keeps a Record per licence. Update must be atomic with respect to other Updates of the
// same key, in this process and (for a file store) in others.
type StateStore interface {
	Load(key StateKey) (Record, error)
	Update(key StateKey, change func(*Record)) error
}

// MemoryStore keeps records for the life of the process only.
func MemoryStore() StateStore { return &memoryStore{records: map[StateKey]Record{}} }

type memoryStore struct {
	mu      sync.Mutex
	records map[StateKey]Record
}

func (s *memoryStore) Load(key StateKey) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyRecord(s.records[key]), nil
}

func (s *memoryStore) Update(key StateKey, change func(*Record)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	record := copyRecord(s.records[key])
	change(&record)
	s.records[key] = copyRecord(record)
	return nil
}

func copyRecord(r Record) Record {
	if r.Answer != nil {
		answer := *r.Answer
		r.Answer = &answer
	}
	return r
}

// DefaultStoreDir is `<user config dir>/licensor`: $XDG_CONFIG_HOME/licensor or
// ~/.config/licensor on Linux, ~/Library/Application Support/licensor on macOS,
// %APPDATA%\licensor on Windows.
func DefaultStoreDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "licensor"), nil
}

// FileStore keeps one file per licence, `<root>/<slug>/<productKey>/<lid>.json` (directories
// 0700, files 0600), in the format every Licensor SDK shares, so two SDKs on one machine agree.
// A write goes to a temporary file renamed over the old one while holding `<lid>.lock`; a file
// that is not valid JSON of that shape counts as empty.
func FileStore(root string) StateStore { return &fileStore{root: root} }

type fileStore struct{ root string }

const (
	stateFormat    = 1
	lockStaleAfter = 10 * time.Second
	lockWaitFor    = 5 * time.Second
	lockRetryEvery = 20 * time.Millisecond
)

// pathPart is what slugs, product keys and lids are on the service; nothing else becomes a path.
var pathPart = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// The file's shape, fields in the shared order.
type stateFile struct {
	Format    int         `json:"format"`
	Lid       string      `json:"lid"`
	NewestIat *int64      `json:"newestIat"`
	OffsetMs  *int64      `json:"offsetMs"`
	Answer    *answerFile `json:"answer"`
}

type answerFile struct {
	Tag         string `json:"tag"`
	Lid         string `json:"lid"`
	Status      string `json:"status"`
	Nonce       string `json:"nonce"`
	CheckedAt   string `json:"checkedAt"`
	BoundAt     string `json:"boundAt"`
	FpDigest    string `json:"fpDigest"`
	LeaseEndsAt string `json:"leaseEndsAt"`
	Receipt     string `json:"receipt"`
	Renewed     bool   `json:"renewed"`
	Converted   bool   `json:"converted"`
}

func (s *fileStore) paths(key StateKey) (dir, file string, err error) {
	if dir, err = s.productDirectory(key.Slug, key.ProductKey); err != nil {
		return "", "", err
	}
	if err = checkPathPart(key.Lid); err != nil {
		return "", "", err
	}
	return dir, filepath.Join(dir, key.Lid+".json"), nil
}

// productDirectory is `<root>/<slug>/<productKey>`, where the licences' files and the product's
// air-gap files live.
func (s *fileStore) productDirectory(slug, productKey string) (string, error) {
	for _, part := range []string{slug, productKey} {
		if err := checkPathPart(part); err != nil {
			return "", err
		}
	}
	return filepath.Join(s.root, slug, productKey), nil
}

func checkPathPart(part string) error {
	if !pathPart.MatchString(part) || strings.Trim(part, ".") == "" {
		return fmt.Errorf("licensor: %q cannot name a state file", part)
	}
	return nil
}

func (s *fileStore) Load(key StateKey) (Record, error) {
	_, file, err := s.paths(key)
	if err != nil {
		return Record{}, err
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, nil
	}
	if err != nil {
		return Record{}, err
	}
	return decodeState(data), nil
}

func (s *fileStore) Update(key StateKey, change func(*Record)) error {
	dir, file, err := s.paths(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	unlock, err := acquireLock(filepath.Join(dir, key.Lid+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	record, err := s.Load(key)
	if err != nil {
		return err
	}
	change(&record)
	return writeAtomically(dir, file, encodeState(record, key.Lid))
}

// acquireLock creates the lock file exclusively, waiting for another holder up to lockWaitFor;
// a lock older than lockStaleAfter was left by a process that died and is removed.
func acquireLock(path string) (unlock func(), err error) {
	deadline := time.Now().Add(lockWaitFor)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if info, statErr := os.Stat(path); statErr == nil && time.Since(info.ModTime()) > lockStaleAfter {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("licensor: %s is held by another process", path)
		}
		time.Sleep(lockRetryEvery)
	}
}

func writeAtomically(dir, file string, data []byte) error {
	temporary, err := os.CreateTemp(dir, filepath.Base(file)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = temporary.Write(data)
	if err == nil {
		err = temporary.Sync()
	}
	if closeErr := temporary.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(temporary.Name(), file)
	}
	if err != nil {
		os.Remove(temporary.Name())
	}
	return err
}

func encodeState(r Record, lid string) []byte {
	state := stateFile{Format: stateFormat, Lid: lid, NewestIat: r.NewestIat, OffsetMs: r.OffsetMs}
	if a := r.Answer; a != nil {
		state.Answer = &answerFile{string(a.Tag), a.Lid, a.Status, a.Nonce, a.CheckedAt, a.BoundAt, a.FpDigest, a.LeaseEndsAt, a.Receipt, a.Renewed, a.Converted}
	}
	data, _ := json.MarshalIndent(state, "", "  ") // plain fields: cannot fail
	return append(data, '\n')
}

// decodeState reads each field alone: a file that is not a JSON object of format 1 is empty; a
// newestIat or offsetMs of the wrong type is nil; an answer missing a field or holding one of the
// wrong type is nil, so a damaged answer never costs the newest term.
func decodeState(data []byte) Record {
	var r Record
	value, err := parseJSON(data)
	object, ok := value.(*jsonObject)
	if format, _ := fieldOf[jsonNumber](object, "format"); err != nil || !ok || format != "1" {
		return r
	}
	integer := func(o *jsonObject, name string) *int64 {
		if n, ok := fieldOf[jsonNumber](o, name); ok {
			if i, ok := n.integer(); ok {
				return &i
			}
		}
		return nil
	}
	if r.NewestIat = integer(object, "newestIat"); r.NewestIat != nil && *r.NewestIat < 0 {
		r.NewestIat = nil
	}
	r.OffsetMs = integer(object, "offsetMs")
	answer, ok := fieldOf[*jsonObject](object, "answer")
	if !ok {
		return r
	}
	var a StoredAnswer
	var tag string
	texts := map[string]*string{
		"tag": &tag, "lid": &a.Lid, "status": &a.Status, "nonce": &a.Nonce, "checkedAt": &a.CheckedAt,
		"boundAt": &a.BoundAt, "fpDigest": &a.FpDigest, "leaseEndsAt": &a.LeaseEndsAt, "receipt": &a.Receipt,
	}
	for name, target := range texts {
		if *target, ok = fieldOf[string](answer, name); !ok {
			return r
		}
	}
	if a.Tag = ReceiptTag(tag); a.Tag != SVCR1 && a.Tag != SVCR2 {
		return r
	}
	if a.Renewed, ok = fieldOf[bool](answer, "renewed"); !ok {
		return r
	}
	// Optional: files written before trials existed have none.
	a.Converted, _ = fieldOf[bool](answer, "converted")
	r.Answer = &a
	return r
}

// fieldOf is an object's member of type T.
func fieldOf[T any](o *jsonObject, name string) (T, bool) {
	var value any
	if o != nil {
		value, _ = o.get(name)
	}
	typed, ok := value.(T)
	return typed, ok
}
