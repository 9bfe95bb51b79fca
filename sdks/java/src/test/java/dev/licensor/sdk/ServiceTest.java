package dev.licensor.sdk;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/** What the client tests share: a stand-in service signing with the Ed25519 vector key, a clock the test moves, and clients of this machine. */
abstract class ServiceTest {
    static final Map<String, Object> ED25519 = Vectors.algorithm("ED25519");
    static final String PEM = (String) ED25519.get("publicKeyPem");
    static final String MACHINE = (String) Vectors.list("fingerprints").get(0).get("fingerprint");
    static final long NOW = 1_790_000_000_000L;

    @TempDir
    Path stateDir;
    FakeService service;
    final String lid = UUID.randomUUID().toString();
    Instant now = Instant.ofEpochMilli(NOW);
    /** The service's clock minus ours. */
    long serviceAhead;

    @BeforeEach
    void start() throws Exception {
        service = new FakeService(ED25519);
    }

    @AfterEach
    void stop() {
        service.close();
    }

    /** A client of this machine for a licence, on the test's clock, its state under stateDir (a base URL with a trailing slash, which the client takes as well). */
    LicenceClient.Builder builder(String licence) {
        Clock clock = new Clock() {
            @Override public ZoneOffset getZone() { return ZoneOffset.UTC; }
            @Override public Clock withZone(java.time.ZoneId zone) { return this; }
            @Override public Instant instant() { return now; }
        };
        return LicenceClient.builder().baseUrl(service.baseUrl() + "/").slug(FakeService.SLUG).checkId(FakeService.CHECK_ID).checkToken(FakeService.TOKEN)
            .publicKeys(PEM).licence(licence).productKey("acme-cad").fingerprint(MACHINE).clock(clock)
            .store(StateStore.files(stateDir)).timeout(Duration.ofSeconds(2));
    }
}
