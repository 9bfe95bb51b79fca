// Command example verifies a licence offline and checks it online with the Go SDK, as an
// installed application would, printing each step. It exits 0 exactly when the check is VALID.
//
// Environment: LICENSOR_URL, LICENSOR_ORG, LICENSOR_PRODUCT_KEY, LICENSOR_CHECK_ID,
// LICENSOR_CHECK_TOKEN, LICENSOR_PUBLIC_KEY_FILE (PEM), LICENSOR_LICENCE_FILE (.lic) and
// LICENSOR_STATE_DIR (optional: the user's configuration directory otherwise).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"licensor.dev/licensor"
)

func main() {
	valid, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed:", err)
		os.Exit(2)
	}
	if !valid {
		os.Exit(1)
	}
}

func env(name string) (string, error) {
	value := os.Getenv(name)
	if value == "" {
		return "", fmt.Errorf("set %s", name)
	}
	return value, nil
}

func run() (bool, error) {
	names := []string{"LICENSOR_URL", "LICENSOR_ORG", "LICENSOR_PRODUCT_KEY", "LICENSOR_CHECK_ID", "LICENSOR_CHECK_TOKEN", "LICENSOR_PUBLIC_KEY_FILE", "LICENSOR_LICENCE_FILE"}
	values := map[string]string{}
	for _, name := range names {
		value, err := env(name)
		if err != nil {
			return false, err
		}
		values[name] = value
	}
	publicKey, err := os.ReadFile(values["LICENSOR_PUBLIC_KEY_FILE"])
	if err != nil {
		return false, err
	}
	licenceFile, err := os.ReadFile(values["LICENSOR_LICENCE_FILE"])
	if err != nil {
		return false, err
	}
	licence := strings.TrimSpace(string(licenceFile))

	keys, err := licensor.ParsePublicKeys(string(publicKey))
	if err != nil {
		return false, err
	}
	offline := licensor.VerifyLicence(licence, keys, licensor.VerifyOptions{
		ProductKey: values["LICENSOR_PRODUCT_KEY"], Organisation: values["LICENSOR_ORG"],
	})
	if !offline.Valid {
		fmt.Printf("- the licence is refused offline: %v %s\n", offline.Reasons, offline.Message)
		return false, nil
	}
	licensee := ""
	if offline.Claims.Lic != nil {
		licensee = *offline.Claims.Lic
	}
	fmt.Printf("- verified the licence %s offline: %s, licensee %q\n", offline.Claims.Lid, offline.Status, licensee)

	fingerprint := licensor.CollectFingerprint("")
	fmt.Printf("- this machine's fingerprint is %s (readable: %v)\n", fingerprint.Fingerprint, fingerprint.Readable)

	config := licensor.Config{
		BaseURL: values["LICENSOR_URL"], Slug: values["LICENSOR_ORG"], ProductKey: values["LICENSOR_PRODUCT_KEY"],
		CheckID: values["LICENSOR_CHECK_ID"], CheckToken: values["LICENSOR_CHECK_TOKEN"],
		PublicKeys: []string{string(publicKey)}, Licence: licence, Fingerprint: fingerprint.Fingerprint,
	}
	if dir := os.Getenv("LICENSOR_STATE_DIR"); dir != "" {
		config.Store = licensor.FileStore(dir)
	}
	client, err := licensor.NewClient(config)
	if errors.Is(err, licensor.ErrNotCheckable) {
		fmt.Println("- an OFFLINE licence has no online check")
		return false, nil
	}
	if err != nil {
		return false, err
	}

	result := client.Check(context.Background())
	signed := "none"
	if result.Answer != nil && result.Answer.Status != "" {
		signed = result.Answer.Status
	}
	fmt.Printf("- checked it online: %s (signed status %s, reasons %v)\n", result.State, signed, result.Reasons)
	if result.NoAnswer != nil {
		fmt.Printf("- the service gave no answer: %s %s\n", result.NoAnswer.Code, result.NoAnswer.Message)
	}
	if result.Renewed {
		renewed, err := client.Fetch(context.Background())
		if err != nil {
			fmt.Printf("- the licence was renewed, but fetching the new term failed: %v\n", err)
		} else {
			fmt.Printf("- the licence was renewed: store the new term %.24s...\n", renewed)
		}
	}
	return result.State == licensor.Valid, nil
}
