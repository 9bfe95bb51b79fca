package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every section of the shared protocol vectors, for all six algorithms. */
class VectorsTest {
    static Stream<String> algorithms() {
        return Vectors.list("algorithms").stream().map(a -> (String) a.get("algorithm"));
    }

    private static LicenceVerifier verifier(Map<String, Object> algorithm, String fingerprint, String... more) throws LicensorException {
        return LicenceVerifier.builder().publicKeys(more).publicKeys((String) algorithm.get("publicKeyPem")).fingerprint(fingerprint).build();
    }

    /** A fingerprint the licence signs in (its first), or null when it signs none. */
    private static String firstFingerprint(Map<String, Object> algorithm) {
        Object fp = Vectors.map(algorithm.get("claims")).get("fp");
        return fp instanceof List ? (String) ((List<?>) fp).get(0) : (String) fp;
    }

    /** A moment the term is valid at: its start. */
    private static Instant issued(Map<String, Object> algorithm) {
        Map<String, Object> claims = Vectors.map(algorithm.get("claims"));
        return Instant.ofEpochSecond((Long) claims.getOrDefault("nbf", claims.get("iat")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("algorithms")
    void verifiesTheLicenceAndReadsItsClaimsInSignedOrder(String id) throws Exception {
        Map<String, Object> algorithm = Vectors.algorithm(id);
        LicenceVerification result = verifier(algorithm, firstFingerprint(algorithm)).verify((String) algorithm.get("licence"), issued(algorithm));
        assertTrue(result.valid(), () -> result.reasons().toString());
        assertEquals(Json.write(algorithm.get("claims")), Json.write(result.claims().orElseThrow().asMap()));
        assertEquals(algorithm.get("payloadJson"), Json.write(result.claims().orElseThrow().asMap()));
        assertEquals(LicenceVerification.CalendarStatus.ACTIVE, result.status().orElseThrow());
        // An integer upd is the update window's claim (DESIGN.md 20), not a parameter.
        Map<String, Object> claims = Vectors.map(algorithm.get("claims"));
        boolean window = claims.get("upd") instanceof Long;
        List<String> params = claims.keySet().stream().filter(name -> !LicenceClaims.ISSUER_CLAIMS.contains(name) && !(window && name.equals("upd"))).toList();
        assertEquals(params, List.copyOf(result.claims().orElseThrow().params().keySet()));
        if (window) {
            assertEquals(Optional.of(Instant.ofEpochSecond((Long) claims.get("upd"))), result.claims().orElseThrow().updatesUntil());
        }
    }

    @Test
    void theVectorsSignATermWithAnUpdateWindow() {
        assertTrue(Vectors.list("algorithms").stream().anyMatch(a -> Vectors.map(a.get("claims")).get("upd") instanceof Long));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("algorithms")
    void acceptsAKeyHistoryAndRefusesAnotherProductsKey(String id) throws Exception {
        Map<String, Object> algorithm = Vectors.algorithm(id);
        String other = (String) Vectors.list("algorithms").stream().filter(a -> !a.get("algorithm").equals(id)).findFirst().orElseThrow().get("publicKeyPem");
        String licence = (String) algorithm.get("licence");
        assertTrue(verifier(algorithm, firstFingerprint(algorithm), other).verify(licence, issued(algorithm)).valid());
        LicenceVerification wrongKey = LicenceVerifier.builder().publicKeys(other).build().verify(licence, issued(algorithm));
        assertEquals(List.of(LicenceVerification.Refusal.BAD_SIGNATURE), wrongKey.reasons());
        assertFalse(wrongKey.signed());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("algorithms")
    void refusesEveryTamperedString(String id) throws Exception {
        Map<String, Object> algorithm = Vectors.algorithm(id);
        LicenceVerifier verifier = verifier(algorithm, firstFingerprint(algorithm));
        for (Map<String, Object> tampered : Vectors.list(algorithm.get("tampered"))) {
            LicenceVerification result = verifier.verify((String) tampered.get("licence"), issued(algorithm));
            assertEquals(List.of(LicenceVerification.Refusal.valueOf((String) tampered.get("expected"))), result.reasons(), (String) tampered.get("name"));
            assertTrue(result.claims().isEmpty());
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("algorithms")
    void judgesTheCalendarAndTheMachine(String id) throws Exception {
        Map<String, Object> algorithm = Vectors.algorithm(id);
        String licence = (String) algorithm.get("licence");
        Map<String, Object> claims = Vectors.map(algorithm.get("claims"));
        LicenceVerifier verifier = verifier(algorithm, firstFingerprint(algorithm));
        if (claims.containsKey("nbf")) {
            assertEquals(List.of(LicenceVerification.Refusal.NOT_YET_VALID), verifier.verify(licence, issued(algorithm).minusSeconds(1)).reasons());
        }
        if (claims.containsKey("exp")) {
            long exp = (Long) claims.get("exp");
            long graceEnd = exp + (Long) claims.get("grace") * 86_400;
            LicenceVerification.CalendarStatus atExpiry = (Long) claims.get("grace") > 0 ? LicenceVerification.CalendarStatus.GRACE : LicenceVerification.CalendarStatus.EXPIRED;
            assertEquals(atExpiry, verifier.verify(licence, Instant.ofEpochSecond(exp)).status().orElseThrow());
            assertTrue(verifier.verify(licence, Instant.ofEpochSecond(graceEnd - 1)).valid());
            assertEquals(List.of(LicenceVerification.Refusal.EXPIRED), verifier.verify(licence, Instant.ofEpochSecond(graceEnd)).reasons());
            assertEquals(Instant.ofEpochSecond(graceEnd), verifier.verify(licence, Instant.ofEpochSecond(exp)).graceEndsAt().orElseThrow());
        } else {
            assertTrue(verifier.verify(licence, Instant.ofEpochSecond(4_000_000_000L)).valid());
        }

        // "none readable" shares no component with any machine.
        String stranger = (String) Vectors.list("fingerprints").get(4).get("fingerprint");
        LicenceVerification elsewhere = verifier(algorithm, stranger).verify(licence, issued(algorithm));
        if (claims.containsKey("fp")) {
            assertEquals(List.of(LicenceVerification.Refusal.FINGERPRINT_MISMATCH), elsewhere.reasons());
            assertEquals(false, elsewhere.fingerprintMatch().orElseThrow());
        } else {
            assertTrue(elsewhere.valid());
            assertTrue(elsewhere.fingerprintMatch().isEmpty());
        }

        LicenceVerifier pinned = LicenceVerifier.builder().publicKeys((String) algorithm.get("publicKeyPem")).fingerprint(firstFingerprint(algorithm))
            .productKey("another-product").build();
        assertEquals(List.of(LicenceVerification.Refusal.WRONG_PRODUCT), pinned.verify(licence, issued(algorithm)).reasons());
        LicenceVerifier otherOrganisation = LicenceVerifier.builder().publicKeys((String) algorithm.get("publicKeyPem")).fingerprint(firstFingerprint(algorithm))
            .productKey((String) claims.get("prd")).organisation("not-" + claims.get("org")).build();
        assertEquals(List.of(LicenceVerification.Refusal.WRONG_PRODUCT), otherOrganisation.verify(licence, issued(algorithm)).reasons());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("algorithms")
    void verifiesReceiptsAndRefusesBadOnes(String id) throws Exception {
        Map<String, Object> algorithm = Vectors.algorithm(id);
        PublicKeys keys = PublicKeys.read(List.of((String) algorithm.get("publicKeyPem")));
        for (Map<String, Object> receipt : Vectors.list(algorithm.get("receipts"))) {
            Receipt fields = fields(receipt);
            assertEquals(receipt.get("messageHex"), HexFormat.of().formatHex(fields.message()), (String) receipt.get("name"));
            assertTrue(fields.verify((String) receipt.get("receipt"), keys), (String) receipt.get("name"));
            assertEquals(receipt.get("grants"), fields.grants(), (String) receipt.get("name"));
        }
        for (Map<String, Object> bad : Vectors.list(algorithm.get("badReceipts"))) {
            assertFalse(fields(bad).verify((String) bad.get("receipt"), keys), (String) bad.get("name"));
        }
    }

    private static Receipt fields(Map<String, Object> receipt) {
        Map<String, Object> f = Vectors.map(receipt.get("fields"));
        String[] v = Stream.of("lid", "status", "nonce", "checkedAt", "boundAt", "fpDigest").map(name -> f.get(name) == null ? "" : (String) f.get(name)).toArray(String[]::new);
        return new Receipt(Receipt.NODE_LOCKED, v[0], v[1], v[2], v[3], v[4], v[5], "");
    }

    @Test
    void buildsFingerprintsFromRawValues() throws Exception {
        for (Map<String, Object> vector : Vectors.list("fingerprints")) {
            Map<String, String> raw = new java.util.HashMap<>();
            Vectors.map(vector.get("raw")).forEach((name, value) -> raw.put(name, (String) value));
            Fingerprint built = Fingerprint.fromRaw(raw);
            assertEquals(vector.get("fingerprint"), built.value(), (String) vector.get("name"));
            assertEquals(vector.get("parts"), built.parts(), (String) vector.get("name"));
            assertEquals(vector.get("parts"), Fingerprint.parse(built.value()).parts());
            assertEquals(vector.get("fpDigest"), Fingerprint.digest(built.value()));
        }
    }

    @Test
    void refusesBadFingerprintsWithTheirProblem() {
        for (Map<String, Object> bad : Vectors.list("badFingerprints")) {
            Fingerprint.MalformedFingerprintException thrown =
                assertThrows(Fingerprint.MalformedFingerprintException.class, () -> Fingerprint.parse((String) bad.get("fingerprint")), (String) bad.get("name"));
            assertEquals(bad.get("problem"), thrown.problem(), (String) bad.get("name"));
        }
    }

    @Test
    void matchesFingerprintsByNeed() throws Exception {
        for (Map<String, Object> match : Vectors.list("matches")) {
            Fingerprint a = Fingerprint.parse((String) match.get("a"));
            Fingerprint b = Fingerprint.parse((String) match.get("b"));
            assertEquals(((Long) match.get("score")).intValue(), a.matchScore(b));
            assertEquals(match.get("match"), a.matches(b, ((Long) match.get("need")).intValue()));
        }
    }

    @Test
    void judgesCalendarStatuses() throws Exception {
        Map<String, Object> ed25519 = Vectors.algorithm("ED25519");
        for (Map<String, Object> vector : Vectors.list("statuses")) {
            Map<String, Object> c = Vectors.map(vector.get("claims"));
            StringBuilder payload = new StringBuilder("{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1600000000");
            if (c.containsKey("nbf")) payload.append(",\"nbf\":").append(c.get("nbf"));
            if (c.containsKey("exp")) payload.append(",\"exp\":").append(c.get("exp"));
            payload.append(",\"grace\":").append(c.get("grace")).append(",\"mm\":1}");
            LicenceVerification result = LicenceVerifier.builder().publicKeys((String) ed25519.get("publicKeyPem")).build()
                .verify(Vectors.licence(ed25519, payload.toString()), Instant.ofEpochSecond((Long) vector.get("now")));
            assertEquals(vector.get("status"), result.status().orElseThrow().name(), payload::toString);
            Object graceEndsAt = vector.get("graceEndsAt");
            assertEquals(graceEndsAt == null ? null : Instant.ofEpochSecond((Long) graceEndsAt), result.graceEndsAt().orElse(null));
        }
    }

    @Test
    void readsCanonicalPayloadsInClaimOrder() throws Exception {
        Map<String, Object> ed25519 = Vectors.algorithm("ED25519");
        LicenceVerifier verifier = LicenceVerifier.builder().publicKeys((String) ed25519.get("publicKeyPem")).build();
        for (Map<String, Object> vector : Vectors.list("claimOrder")) {
            String payloadJson = (String) vector.get("payloadJson");
            LicenceVerification result = verifier.verify(Vectors.licence(ed25519, payloadJson), Instant.ofEpochSecond(1_700_000_000));
            assertTrue(result.signed(), (String) vector.get("name"));
            assertEquals(payloadJson, Json.write(result.claims().orElseThrow().asMap()), (String) vector.get("name"));
        }
    }

    @Test
    void refusesSignedPayloadsThatAreNotStrictJsonOrHaveNonIntegerClaims() throws Exception {
        Map<String, Object> ed25519 = Vectors.algorithm("ED25519");
        LicenceVerifier verifier = LicenceVerifier.builder().publicKeys((String) ed25519.get("publicKeyPem")).build();
        String good = "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1700000000,\"grace\":0,\"mm\":1}";
        assertTrue(verifier.verify(Vectors.licence(ed25519, good)).valid());
        for (String payload : List.of(
            "{\"v\":3,\"lid\":\"l\",\"lid\":\"m\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1700000000,\"grace\":0,\"mm\":1}",
            good + " x",
            good + "{}",
            "\ufeff" + good,
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1700000000.5,\"grace\":0,\"mm\":1}",
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1e300,\"grace\":0,\"mm\":1}",
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1700000000.0,\"grace\":0,\"mm\":1}",
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":17e8,\"grace\":0,\"mm\":1}",
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1700000000,\"grace\":0,\"mm\":1,\"ratio\":1.5}",
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1700000000,\"grace\":0,\"mm\":1,\"limits\":{\"a\":1,\"a\":2}}",
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":9007199254740993,\"grace\":0,\"mm\":1}",
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":1700000000,\"grace\":0,\"mm\":1,}",
            "{\"v\":3,\"lid\":\"l\",\"prd\":\"p\",\"org\":\"o\",\"iat\":01700000000,\"grace\":0,\"mm\":1}")) {
            assertEquals(List.of(LicenceVerification.Refusal.MALFORMED), verifier.verify(Vectors.licence(ed25519, payload)).reasons(), payload);
        }
        String invalidUtf8 = Base64Url.encode(new byte[] {'{', '"', (byte) 0xff, '"', ':', '1', '}'});
        String signed = invalidUtf8 + "." + Base64Url.encode(Vectors.sign(ed25519, invalidUtf8.getBytes(StandardCharsets.US_ASCII)));
        assertEquals(List.of(LicenceVerification.Refusal.MALFORMED), verifier.verify(signed).reasons());
    }

    @Test
    void refusesUnreadableAndPrivateKeys() {
        Map<String, Object> ed25519 = Vectors.algorithm("ED25519");
        for (String key : List.of("", "not a key", (String) ed25519.get("privateKeyPem"))) {
            LicensorException thrown = assertThrows(LicensorException.class, () -> LicenceVerifier.builder().publicKeys(key).build());
            assertEquals(LicensorException.Reason.INVALID_KEY, thrown.reason());
        }
        LicensorException none = assertThrows(LicensorException.class, () -> LicenceVerifier.builder().build());
        assertEquals(LicensorException.Reason.INVALID_KEY, none.reason());
        assertNull(none.status());
    }

    @Test
    void readsALicenceFileWithoutWhatAnEditorAddsWhileVerifyStaysStrict(@TempDir Path dir) throws Exception {
        Map<String, Object> algorithm = Vectors.list("algorithms").get(0);
        String licence = (String) algorithm.get("licence");
        Path file = dir.resolve("licence.lic");
        Files.writeString(file, "\uFEFF \r\n" + licence + "\r\n\n", StandardCharsets.UTF_8);
        assertEquals(licence, LicenceFile.read(file));
        LicenceVerification strict = verifier(algorithm, firstFingerprint(algorithm)).verify(licence + "\n", issued(algorithm));
        assertEquals(List.of(LicenceVerification.Refusal.MALFORMED), strict.reasons());
    }
}
