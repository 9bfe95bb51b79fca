package licensor

import (
	"runtime"
	"testing"
)

func TestCollectFingerprintOnThisMachine(t *testing.T) {
	report := CollectFingerprint("")
	parts, err := ParseFingerprint(report.Fingerprint)
	if err != nil {
		t.Fatalf("%s: %v", report.Fingerprint, err)
	}
	if parts != report.Parts {
		t.Fatalf("parts %v, want %v", report.Parts, parts)
	}
	for i, readable := range report.Readable {
		if readable != (parts[i] != MissingComponent) {
			t.Fatalf("readable %v for parts %v", report.Readable, parts)
		}
	}
	// Every machine has a host name, and Linux always reports a CPU model ("unknown" at worst).
	if !report.Readable[1] || (runtime.GOOS == "linux" && !report.Readable[3]) {
		t.Fatalf("readable %v", report.Readable)
	}
	if again := CollectFingerprint(""); again.Fingerprint != report.Fingerprint {
		t.Fatalf("two collections differ: %s and %s", report.Fingerprint, again.Fingerprint)
	}

	stable := CollectFingerprint("installation-42")
	if !stable.StableID || stable.Parts[0] != HashComponent("installation-42") || stable.Parts[1] != report.Parts[1] {
		t.Fatalf("stable id: %+v", stable)
	}
}
