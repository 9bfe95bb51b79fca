package licensor

import (
	"os"
	"strings"
)

// ReadLicenceFile is the licence string in a .lic file, without what an editor or a download puts
// around it: a byte-order mark and surrounding spaces, tabs and line breaks. VerifyLicence itself
// stays strict (a string with a trailing newline is Malformed), so read files through this.
func ReadLicenceFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.Trim(strings.TrimPrefix(string(data), "\uFEFF"), " \t\r\n\f\v"), nil
}
