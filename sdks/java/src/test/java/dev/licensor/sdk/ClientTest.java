package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The check client against a stand-in service whose answers are signed with a vector key. */
class ClientTest extends ServiceTest {
    private static final String BOUND_AT = "2026-01-05T09:30:12.345Z";

    private String licence(long iat, String typ) throws Exception {
        return Vectors.licence(ED25519, "{\"v\":3,\"lid\":\"" + lid + "\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"" + typ + "\",\"iat\":" + iat
            + ",\"exp\":" + (NOW / 1000 + 365 * 86_400) + ",\"grace\":7,\"mm\":1,\"chk\":60,\"max\":3600,\"edition\":\"pro\"}");
    }

    private String licence() throws Exception {
        return licence(NOW / 1000 - 86_400, "ONLINE");
    }

    private LicenceClient client() throws Exception {
        return builder(licence()).build();
    }

    /** The service answers every check with this signed status and boundAt, at its own clock. */
    private void answering(String status, String boundAt, Map<String, Object> extra) {
        service.handler = request -> service.answer(request, lid, status, boundAt, now.plusMillis(serviceAhead), extra);
    }

    private void down(int status) {
        service.handler = request -> new FakeService.Reply(status, "{\"error\":\"unavailable\"}");
    }

    private Path stateFile() {
        return stateDir.resolve("acme").resolve("acme-cad").resolve(lid + ".json");
    }

    private Map<String, Object> stateOnDisk() throws Exception {
        return Json.parseObject(Files.readString(stateFile()));
    }

    @Test
    void aGenuineAnswerIsValidAndKeptInTheSharedStateFormat() throws Exception {
        answering("ACTIVE", BOUND_AT, Map.of());
        serviceAhead = 1234;
        CheckResult result = client().check();
        assertEquals(CheckState.VALID, result.state());
        assertEquals(Optional.of(true), result.fresh());
        assertTrue(result.noAnswer().isEmpty());
        assertFalse(result.clockRollback());

        Map<String, Object> sent = service.requests.get(0);
        assertEquals(licence(), sent.get("license"));
        assertEquals(MACHINE, sent.get("fingerprint"));
        assertTrue(((String) sent.get("nonce")).matches("[A-Za-z0-9_-]{32}"));
        assertEquals("Bearer " + FakeService.TOKEN, service.authorizations.get(0));

        Map<String, Object> state = stateOnDisk();
        assertEquals(List.of("format", "lid", "newestIat", "offsetMs", "answer"), List.copyOf(state.keySet()));
        assertEquals(1L, state.get("format"));
        assertEquals(lid, state.get("lid"));
        assertEquals(NOW / 1000 - 86_400, state.get("newestIat"));
        assertEquals(1234L, state.get("offsetMs"));
        Map<String, Object> answer = Vectors.map(state.get("answer"));
        assertEquals(List.of("tag", "lid", "status", "nonce", "checkedAt", "boundAt", "fpDigest", "leaseEndsAt", "receipt", "renewed", "converted"), List.copyOf(answer.keySet()));
        assertEquals("SVCR1", answer.get("tag"));
        assertEquals(sent.get("nonce"), answer.get("nonce"));
        assertEquals(Fingerprint.digest(MACHINE), answer.get("fpDigest"));
        assertEquals("", answer.get("leaseEndsAt"));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(stateFile())));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(stateFile().getParent())));
        assertFalse(Files.exists(stateFile().resolveSibling(lid + ".lock")));
    }

    @Test
    void everyNonceIsFresh() throws Exception {
        answering("ACTIVE", BOUND_AT, Map.of());
        LicenceClient client = client();
        client.check();
        client.check();
        assertNotEquals(service.requests.get(0).get("nonce"), service.requests.get(1).get("nonce"));
    }

    @Test
    void noAnswerRestsOnTheKeptAnswerUntilItIsOlderThanMax() throws Exception {
        answering("ACTIVE", BOUND_AT, Map.of());
        client().check();
        down(503);
        now = now.plusSeconds(3000);
        CheckResult kept = client().check();
        assertEquals(CheckState.VALID, kept.state());
        assertEquals(Optional.of(false), kept.fresh());
        assertEquals(LicensorException.Reason.HTTP_STATUS, kept.noAnswer().orElseThrow().code());
        assertEquals(Optional.of(503), kept.noAnswer().orElseThrow().status());
        assertEquals(3000.0, kept.ageSeconds().getAsDouble(), 0.001);

        now = now.plusSeconds(601);
        CheckResult old = client().check();
        assertEquals(CheckState.STALE, old.state());
        assertEquals(3601.0, old.ageSeconds().getAsDouble(), 0.001);
    }

    @Test
    void withoutAnyAnswerTheStateIsStale() throws Exception {
        service.close();
        CheckResult result = client().check();
        assertEquals(CheckState.STALE, result.state());
        assertEquals(LicensorException.Reason.NETWORK, result.noAnswer().orElseThrow().code());
        assertTrue(result.fresh().isEmpty());
        assertTrue(result.ageSeconds().isEmpty());
    }

    @Test
    void aSlowServiceIsATimeout() throws Exception {
        service.handler = request -> {
            try {
                Thread.sleep(1500);
            } catch (InterruptedException stop) {
                Thread.currentThread().interrupt();
            }
            return new FakeService.Reply(503, "{}");
        };
        CheckResult result = builder(licence()).timeout(Duration.ofMillis(300)).build().check();
        assertEquals(LicensorException.Reason.TIMEOUT, result.noAnswer().orElseThrow().code());
    }

    @Test
    void forgedAndMalformedAnswersAreNoAnswer() throws Exception {
        // A receipt for another nonce (a replay) cannot verify.
        service.handler = request -> service.answer(Map.of("nonce", "another-nonce-0123456789", "fingerprint", MACHINE), lid, "ACTIVE", BOUND_AT, now, Map.of());
        CheckResult replay = client().check();
        assertEquals(CheckState.STALE, replay.state());
        assertEquals(LicensorException.Reason.BAD_RECEIPT, replay.noAnswer().orElseThrow().code());
        assertFalse(Files.exists(stateFile()));

        service.handler = request -> new FakeService.Reply(200, "{\"valid\":true,\"valid\":true}");
        assertEquals(LicensorException.Reason.BAD_RESPONSE, client().check().noAnswer().orElseThrow().code());
        service.handler = request -> new FakeService.Reply(200, "{\"valid\":true,\"status\":null,\"checkedAt\":\"x\",\"receipt\":\"x\"}");
        assertEquals(LicensorException.Reason.BAD_RESPONSE, client().check().noAnswer().orElseThrow().code());
        service.handler = request -> new FakeService.Reply(403, "{\"valid\":false}");
        assertEquals(Optional.of(403), client().check().noAnswer().orElseThrow().status());
    }

    @Test
    void theVerdictComesFromSignedFieldsOnly() throws Exception {
        answering("REVOKED", BOUND_AT, Map.of("valid", true));
        CheckResult revoked = client().check();
        assertEquals(CheckState.INVALID, revoked.state());
        assertEquals(List.of(CheckResult.Reason.REVOKED), revoked.reasons());

        answering("ACTIVE", BOUND_AT, Map.of("valid", false, "reason", "REVOKED"));
        CheckResult active = client().check();
        assertEquals(CheckState.VALID, active.state());
        assertEquals(Optional.of("REVOKED"), active.serverReason());

        answering("ACTIVE", null, Map.of());
        assertEquals(List.of(CheckResult.Reason.NO_SEAT), client().check().reasons());
        answering(null, null, Map.of());
        assertEquals(List.of(CheckResult.Reason.UNKNOWN_LICENCE), client().check().reasons());
    }

    @Test
    void aNegativeVerdictStandsWhateverItsAge() throws Exception {
        answering("REVOKED", BOUND_AT, Map.of());
        client().check();
        down(500);
        now = now.plusSeconds(30 * 86_400);
        CheckResult result = client().check();
        assertEquals(CheckState.INVALID, result.state());
        assertEquals(List.of(CheckResult.Reason.REVOKED), result.reasons());
    }

    @Test
    void anEditedStateFileCountsAsNoAnswerButKeepsTheNewestTerm() throws Exception {
        answering("REVOKED", BOUND_AT, Map.of());
        client().check();
        Files.writeString(stateFile(), Files.readString(stateFile()).replace("\"REVOKED\"", "\"ACTIVE\""));
        down(500);
        CheckResult edited = client().check();
        assertEquals(CheckState.STALE, edited.state());
        assertTrue(edited.answer().isEmpty());

        Files.writeString(stateFile(), "{\"format\":1,\"newestIat\":" + (NOW / 1000) + ",\"answer\":\"garbage\"}");
        CheckResult older = client().check();
        assertEquals(CheckState.INVALID, older.state());
        assertEquals(List.of(CheckResult.Reason.OLDER_TERM), older.reasons());

        Files.writeString(stateFile(), "not json");
        assertEquals(CheckState.STALE, client().check().state());
    }

    @Test
    void aClockWoundBackIsRollbackButSkewIsNot() throws Exception {
        serviceAhead = 3 * 3_600_000L;
        answering("ACTIVE", BOUND_AT, Map.of());
        client().check();
        down(503);
        now = now.plusSeconds(60);
        CheckResult skewed = client().check();
        assertEquals(CheckState.VALID, skewed.state());
        assertFalse(skewed.clockRollback());
        assertEquals(60.0, skewed.ageSeconds().getAsDouble(), 0.001);

        now = now.minusSeconds(2 * 3600);
        CheckResult rolledBack = client().check();
        assertEquals(CheckState.STALE, rolledBack.state());
        assertTrue(rolledBack.clockRollback());

        // A fresh answer proves itself by its nonce, even while the rollback is reported.
        answering("ACTIVE", BOUND_AT, Map.of());
        CheckResult fresh = client().check();
        assertEquals(CheckState.VALID, fresh.state());
        assertTrue(fresh.clockRollback());
    }

    @Test
    void anOlderTermIsRefusedAndNeverSent() throws Exception {
        answering("ACTIVE", BOUND_AT, Map.of());
        builder(licence(NOW / 1000, "ONLINE")).build().check();
        int sent = service.count("check");
        CheckResult older = client().check();
        assertEquals(CheckState.INVALID, older.state());
        assertEquals(List.of(CheckResult.Reason.OLDER_TERM), older.reasons());
        assertEquals(sent, service.count("check"));
    }

    @Test
    void offlineRefusalsAreInvalidAndNeverSent() throws Exception {
        CheckResult wrongProduct = builder(licence()).productKey("other").build().check();
        assertEquals(List.of(CheckResult.Reason.WRONG_PRODUCT), wrongProduct.reasons());
        CheckResult forged = builder(licence().substring(0, licence().length() - 4) + "AAAA").build().check();
        assertEquals(List.of(CheckResult.Reason.BAD_SIGNATURE), forged.reasons());
        now = Instant.ofEpochSecond(NOW / 1000 + 400 * 86_400);
        assertEquals(List.of(CheckResult.Reason.EXPIRED), client().check().reasons());
        assertEquals(0, service.requests.size());
    }

    @Test
    void releaseForgetsTheAnswerButNotTheTermOrOffset() throws Exception {
        serviceAhead = 5000;
        answering("ACTIVE", BOUND_AT, Map.of());
        LicenceClient client = client();
        client.check();
        service.handler = request -> new FakeService.Reply(200, Json.write(Map.of("lid", lid, "released", true, "releasedAt", "2026-11-25T10:00:00.000Z", "nonce", request.get("nonce"))));
        ReleaseResult released = client.release();
        assertTrue(released.released());
        assertEquals(Optional.of("2026-11-25T10:00:00.000Z"), released.releasedAt());
        Map<String, Object> state = stateOnDisk();
        assertNull(state.get("answer"));
        assertEquals(5000L, state.get("offsetMs"));
        assertEquals(NOW / 1000 - 86_400, state.get("newestIat"));

        service.handler = request -> new FakeService.Reply(200, Json.write(Map.of("lid", lid, "released", false, "reason", "NO_SEAT", "nonce", request.get("nonce"))));
        assertEquals(Optional.of("NO_SEAT"), client.release().reason());
        service.handler = request -> new FakeService.Reply(200, Json.write(Map.of("lid", lid, "released", true, "nonce", "replayed-nonce-0123456789")));
        assertEquals(LicensorException.Reason.BAD_RESPONSE, assertThrows(LicensorException.class, client::release).reason());
        down(403);
        LicensorException limit = assertThrows(LicensorException.class, client::release);
        assertEquals(LicensorException.Reason.HTTP_STATUS, limit.reason());
        assertEquals(403, limit.status());
    }

    @Test
    void clearCacheKeepsTheTermAndOffset() throws Exception {
        answering("ACTIVE", BOUND_AT, Map.of());
        LicenceClient client = client();
        client.check();
        client.clearCache();
        assertNull(stateOnDisk().get("answer"));
        assertEquals(NOW / 1000 - 86_400, stateOnDisk().get("newestIat"));
        down(503);
        assertEquals(CheckState.STALE, client.check().state());
    }

    @Test
    void fetchTakesOnlyANewerTermOfTheSameLicence() throws Exception {
        String newer = licence(NOW / 1000, "ONLINE");
        service.handler = request -> new FakeService.Reply(200, Json.write(Map.of("license", newer)));
        LicenceClient client = client();
        assertEquals(newer, client.fetch());
        assertEquals(newer, client.licence());
        assertEquals(NOW / 1000, stateOnDisk().get("newestIat"));
        assertEquals(0, service.count("check"));

        String older = licence(NOW / 1000 - 2 * 86_400, "ONLINE");
        service.handler = request -> new FakeService.Reply(200, Json.write(Map.of("license", older)));
        assertEquals(LicensorException.Reason.OLDER_TERM, assertThrows(LicensorException.class, client::fetch).reason());
        assertEquals(LicensorException.Reason.OLDER_TERM, assertThrows(LicensorException.class, client()::fetch).reason());

        String another = Vectors.licence(ED25519, "{\"v\":3,\"lid\":\"another\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"ONLINE\",\"iat\":" + (NOW / 1000 + 1) + ",\"grace\":0,\"mm\":1}");
        service.handler = request -> new FakeService.Reply(200, Json.write(Map.of("license", another)));
        assertEquals(LicensorException.Reason.LID_MISMATCH, assertThrows(LicensorException.class, client::fetch).reason());
        service.handler = request -> new FakeService.Reply(200, Json.write(Map.of("license", newer + "x")));
        assertEquals(LicensorException.Reason.BAD_LICENCE, assertThrows(LicensorException.class, client::fetch).reason());
        service.handler = request -> new FakeService.Reply(200, "{}");
        assertEquals(LicensorException.Reason.BAD_RESPONSE, assertThrows(LicensorException.class, client::fetch).reason());
        down(404);
        assertEquals(404, assertThrows(LicensorException.class, client::fetch).status());
    }

    @Test
    void aMemoryStoreKeepsTheAnswerForTheProcess() throws Exception {
        StateStore memory = StateStore.memory();
        answering("ACTIVE", BOUND_AT, Map.of());
        builder(licence()).store(memory).build().check();
        down(503);
        CheckResult kept = builder(licence()).store(memory).build().check();
        assertEquals(CheckState.VALID, kept.state());
        assertEquals(Optional.of(false), kept.fresh());
        assertFalse(Files.exists(stateFile()));
    }

    @Test
    void badOptionsAreRefusedWhenBuilt() throws Exception {
        assertEquals(LicensorException.Reason.INVALID_OPTIONS, assertThrows(LicensorException.class, () -> builder(licence()).slug("").build()).reason());
        assertEquals(LicensorException.Reason.INVALID_OPTIONS,
            assertThrows(LicensorException.class, () -> builder(licence()).checkToken("svcc_other_" + "0".repeat(64)).build()).reason());
        assertEquals(LicensorException.Reason.NOT_CHECKABLE, assertThrows(LicensorException.class, () -> builder(licence(NOW / 1000, "OFFLINE")).build()).reason());
        assertEquals(LicensorException.Reason.INVALID_KEY, assertThrows(LicensorException.class, () -> builder(licence()).publicKeys("junk").build()).reason());
    }

    @Test
    void aStaleLockIsTakenOverAndAHeldOneWaitedFor() throws Exception {
        answering("ACTIVE", BOUND_AT, Map.of());
        LicenceClient client = client();
        client.check();
        Path lock = stateFile().resolveSibling(lid + ".lock");
        Files.writeString(lock, "", StandardCharsets.UTF_8);
        Files.setLastModifiedTime(lock, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 11_000));
        assertTrue(client.check().storeError().isEmpty());
        assertFalse(Files.exists(lock));

        Files.writeString(lock, "", StandardCharsets.UTF_8);
        Thread releaser = new Thread(() -> {
            try {
                Thread.sleep(300);
                Files.delete(lock);
            } catch (Exception ignored) {
                // the test fails below if the lock stays
            }
        });
        releaser.start();
        CheckResult waited = client.check();
        releaser.join();
        assertTrue(waited.storeError().isEmpty());
        assertEquals(waited.answer().orElseThrow().checkedAt(), Instant.parse((String) Vectors.map(stateOnDisk().get("answer")).get("checkedAt")));
    }
}
