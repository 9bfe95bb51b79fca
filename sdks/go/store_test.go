package licensor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFileStoreUpdatesUnderTheLockLoseNothing(t *testing.T) {
	root := t.TempDir()
	key := StateKey{Slug: testSlug, ProductKey: testProduct, Lid: testLidValue}
	var wg sync.WaitGroup
	for i := 1; i <= 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Separate stores, as separate processes would have.
			err := FileStore(root).Update(key, func(r *Record) {
				if i%2 == 0 {
					r.NewestIat = maxPointer(r.NewestIat, int64(i))
				} else if r.OffsetMs == nil || *r.OffsetMs < int64(i) {
					offset := int64(i)
					r.OffsetMs = &offset
				}
			})
			if err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	record, err := FileStore(root).Load(key)
	if err != nil || record.NewestIat == nil || *record.NewestIat != 20 || record.OffsetMs == nil || *record.OffsetMs != 19 {
		t.Fatalf("record %+v, %v", record, err)
	}
	if _, err := os.Stat(filepath.Join(root, testSlug, testProduct, testLidValue+".lock")); !os.IsNotExist(err) {
		t.Fatalf("the lock file was left behind: %v", err)
	}
}

func TestFileStoreTakesOverAStaleLock(t *testing.T) {
	root := t.TempDir()
	key := StateKey{Slug: testSlug, ProductKey: testProduct, Lid: testLidValue}
	dir := filepath.Join(root, testSlug, testProduct)
	lock := filepath.Join(dir, testLidValue+".lock")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-11 * time.Second)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	if err := FileStore(root).Update(key, func(r *Record) { r.NewestIat = maxPointer(nil, 7) }); err != nil {
		t.Fatal(err)
	}
}

func TestFileStoreRefusesPathsOutsideItsRoot(t *testing.T) {
	for _, lid := range []string{"..", "a/b", `a\b`, "", ".", "a:b", "l\x00", strings.Repeat("x", 129)} {
		if err := FileStore(t.TempDir()).Update(StateKey{Slug: testSlug, ProductKey: testProduct, Lid: lid}, func(*Record) {}); err == nil {
			t.Errorf("lid %q was accepted", lid)
		}
	}
}

func TestDecodeStateReadsWhatItCan(t *testing.T) {
	answer := `{"tag":"SVCR1","lid":"l-1","status":"ACTIVE","nonce":"n","checkedAt":"c","boundAt":"b","fpDigest":"f","leaseEndsAt":"","receipt":"r","renewed":false}`
	cases := []struct {
		name      string
		file      string
		newestIat bool
		answer    bool
	}{
		{"the shared shape", `{"format":1,"lid":"l-1","newestIat":5,"offsetMs":-3,"answer":` + answer + `}`, true, true},
		{"no answer", `{"format":1,"lid":"l-1","newestIat":5,"offsetMs":null,"answer":null}`, true, false},
		{"an answer missing a field", `{"format":1,"lid":"l-1","newestIat":5,"offsetMs":1,"answer":{"tag":"SVCR1"}}`, true, false},
		{"an unknown tag", `{"format":1,"lid":"l-1","newestIat":5,"offsetMs":1,"answer":` + strings.Replace(answer, "SVCR1", "SVCR9", 1) + `}`, true, false},
		{"a negative newestIat", `{"format":1,"lid":"l-1","newestIat":-5,"offsetMs":1,"answer":` + answer + `}`, false, true},
		{"a later format", `{"format":2,"lid":"l-1","newestIat":5,"offsetMs":1,"answer":` + answer + `}`, false, false},
		{"a duplicate key", `{"format":1,"lid":"l-1","newestIat":5,"newestIat":6,"offsetMs":1,"answer":` + answer + `}`, false, false},
		{"not JSON", `{"format":1,`, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := decodeState([]byte(c.file))
			if (r.NewestIat != nil) != c.newestIat || (r.Answer != nil) != c.answer {
				t.Fatalf("newestIat %v answer %+v", r.NewestIat, r.Answer)
			}
		})
	}
	// What encodeState writes, decodeState reads back.
	five, minus := int64(5), int64(-3)
	written := Record{NewestIat: &five, OffsetMs: &minus, Answer: &StoredAnswer{Tag: "SVCR1", ReceiptFields: ReceiptFields{Lid: "l-1", Status: "ACTIVE"}, Renewed: true}}
	read := decodeState(encodeState(written, "l-1"))
	if fmt.Sprint(*read.NewestIat, *read.OffsetMs, *read.Answer) != fmt.Sprint(five, minus, *written.Answer) {
		t.Fatalf("round trip: %+v", read)
	}
}

func TestMemoryStoreKeepsRecordsApart(t *testing.T) {
	store := MemoryStore()
	key := StateKey{Slug: testSlug, ProductKey: testProduct, Lid: testLidValue}
	if err := store.Update(key, func(r *Record) { r.Answer = &StoredAnswer{ReceiptFields: ReceiptFields{Status: "ACTIVE"}} }); err != nil {
		t.Fatal(err)
	}
	loaded, _ := store.Load(key)
	loaded.Answer.Status = "edited"
	again, _ := store.Load(key)
	if again.Answer.Status != "ACTIVE" {
		t.Fatal("a loaded record shares memory with the store")
	}
	if other, _ := store.Load(StateKey{Slug: testSlug, ProductKey: testProduct, Lid: "l-2"}); other.Answer != nil {
		t.Fatal("another licence sees the answer")
	}
}
