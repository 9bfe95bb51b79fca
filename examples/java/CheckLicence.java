import dev.licensor.sdk.CheckResult;
import dev.licensor.sdk.CheckState;
import dev.licensor.sdk.LicenceClient;
import dev.licensor.sdk.LicenceVerifier;
import dev.licensor.sdk.LicensorException;
import dev.licensor.sdk.StateStore;
import dev.licensor.sdk.LicenceVerification;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Verifies a licence offline and checks it online, as an installed application would, printing
 * each step. Exits 0 exactly when the check's state is VALID. Configuration from the environment:
 * LICENSOR_URL, LICENSOR_ORG, LICENSOR_PRODUCT_KEY, LICENSOR_CHECK_ID, LICENSOR_CHECK_TOKEN,
 * LICENSOR_PUBLIC_KEY_FILE (PEM), LICENSOR_LICENCE_FILE (.lic), LICENSOR_STATE_DIR.
 */
public final class CheckLicence {
    public static void main(String[] args) throws Exception {
        String publicKey = Files.readString(Path.of(env("LICENSOR_PUBLIC_KEY_FILE")));
        String licence = Files.readString(Path.of(env("LICENSOR_LICENCE_FILE"))).strip();

        LicenceVerification offline = LicenceVerifier.builder()
            .publicKeys(publicKey)
            .productKey(env("LICENSOR_PRODUCT_KEY"))
            .organisation(env("LICENSOR_ORG"))
            .build()
            .verify(licence);
        if (!offline.valid()) {
            System.out.println("- offline verification refused the licence: " + offline.reasons());
            System.exit(1);
        }
        System.out.println("- verified the licence offline: " + offline.status().orElseThrow() + ", licensee "
            + offline.claims().orElseThrow().licensee().orElse("(none)") + ", expires " + offline.expiresAt().map(Object::toString).orElse("never"));

        LicenceClient client;
        try {
            client = LicenceClient.builder()
                .baseUrl(env("LICENSOR_URL"))
                .slug(env("LICENSOR_ORG"))
                .productKey(env("LICENSOR_PRODUCT_KEY"))
                .checkId(env("LICENSOR_CHECK_ID"))
                .checkToken(env("LICENSOR_CHECK_TOKEN"))
                .publicKeys(publicKey)
                .licence(licence)
                .store(StateStore.files(Path.of(env("LICENSOR_STATE_DIR"))))
                .build();
        } catch (LicensorException refused) {
            System.out.println("- the client cannot be set up: " + refused.reason() + " " + refused.getMessage());
            System.exit(1);
            return;
        }
        System.out.println("- this machine's fingerprint is " + client.fingerprint());

        CheckResult result = client.check();
        System.out.println("- checked it online: " + result.state()
            + result.answer().map(a -> ", signed status " + (a.status().isEmpty() ? "none" : a.status()) + (a.fresh() ? " (fresh answer)" : " (remembered answer)")).orElse("")
            + (result.reasons().isEmpty() ? "" : ", reasons " + result.reasons())
            + result.noAnswer().map(n -> ", no answer: " + n.code() + " " + n.message()).orElse("")
            + (result.renewed() ? ", a newer term exists: call fetch()" : ""));
        System.exit(result.state() == CheckState.VALID ? 0 : 1);
    }

    private static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            System.err.println("set " + name);
            System.exit(2);
        }
        return value;
    }
}
