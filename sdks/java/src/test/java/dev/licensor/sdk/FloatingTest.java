package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Floating licences (DESIGN.md 13): v 5 claims, SVCR2 receipts, licensed until the signed lease end, borrowing. */
class FloatingTest extends ServiceTest {
    private String licence() throws Exception {
        return Vectors.licence(ED25519, "{\"v\":5,\"lid\":\"" + lid + "\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"ONLINE\",\"iat\":" + (NOW / 1000 - 86_400)
            + ",\"exp\":" + (NOW / 1000 + 365 * 86_400) + ",\"grace\":7,\"mm\":5,\"chk\":300,\"max\":1800,\"lse\":900,\"brw\":604800,\"lse2\":1}");
    }

    private LicenceClient client() throws Exception {
        return builder(licence()).build();
    }

    /** Every check takes or renews a lease ending lse after the service's checkedAt; a borrow ends at its until. */
    private void leasing() {
        service.handler = request -> {
            Instant checkedAt = now.plusMillis(serviceAhead);
            Object until = request.get("until");
            String end = until != null ? (String) until : FakeService.ISO.format(checkedAt.plusSeconds(900));
            return service.answer(request, lid, "ACTIVE", "2026-11-22T06:45:00.000Z", checkedAt, end, Map.of());
        };
    }

    private void down() {
        service.handler = request -> new FakeService.Reply(503, "{}");
    }

    @Test
    void aLeaseIsValidUntilItsSignedEndWhateverMaxSays() throws Exception {
        leasing();
        CheckResult fresh = client().check();
        assertEquals(CheckState.VALID, fresh.state());
        assertEquals(Optional.of(now.plusSeconds(900)), fresh.leaseEndsAt());
        Map<String, Object> answer = Vectors.map(Json.parseObject(Files.readString(stateDir.resolve("acme/acme-cad/" + lid + ".json"))).get("answer"));
        assertEquals("SVCR2", answer.get("tag"));
        assertEquals(FakeService.ISO.format(now.plusSeconds(900)), answer.get("leaseEndsAt"));

        down();
        now = now.plusSeconds(899);
        assertEquals(CheckState.VALID, client().check().state());
        now = now.plusSeconds(1);
        CheckResult lapsed = client().check();
        assertEquals(CheckState.STALE, lapsed.state());
        assertTrue(lapsed.reasons().isEmpty());
    }

    @Test
    void theLeaseEndIsJudgedWithTheOffsetClampedToAMinute() throws Exception {
        serviceAhead = 10 * 60_000;
        leasing();
        client().check();
        down();
        // The lease ends 900 s after checkedAt, 1,500 s from now by this clock, which runs 10 minutes
        // behind the service; the remembered offset is believed up to 60 s only, so by this clock the
        // lease lasts until 60 s before that.
        now = now.plusSeconds(600 + 900 - 60 - 1);
        CheckResult before = client().check();
        assertEquals(CheckState.VALID, before.state());
        assertFalse(before.clockRollback());
        now = now.plusSeconds(1);
        assertEquals(CheckState.STALE, client().check().state());
    }

    @Test
    void aBorrowedLeaseOutlivesMax() throws Exception {
        leasing();
        LicenceClient client = client();
        client.check();
        Instant until = now.plusSeconds(7 * 86_400);
        CheckResult borrowed = client.borrow(until);
        assertEquals(CheckState.VALID, borrowed.state());
        assertEquals(Optional.of(until), borrowed.leaseEndsAt());
        Map<String, Object> sent = service.requests.get(1);
        assertEquals("borrow", sent.get("endpoint"));
        assertEquals(FakeService.ISO.format(until), sent.get("until"));
        assertEquals(licence(), sent.get("license"));

        down();
        now = now.plusSeconds(3 * 86_400);
        CheckResult offline = client().check();
        assertEquals(CheckState.VALID, offline.state());
        assertEquals(Optional.of(until), offline.leaseEndsAt());
    }

    @Test
    void aRefusedBorrowIsNoAnswer() throws Exception {
        leasing();
        client().check();
        service.handler = request -> new FakeService.Reply(403, "{\"error\":\"borrowing is off\"}");
        CheckResult refused = client().borrow(now.plusSeconds(3600));
        assertEquals(CheckState.VALID, refused.state());
        assertEquals(Optional.of(403), refused.noAnswer().orElseThrow().status());
    }

    @Test
    void noLeaseIsNoSeatAndANodeLockedReceiptDoesNotCount() throws Exception {
        service.handler = request -> service.answer(request, lid, "ACTIVE", null, now, "", Map.of("valid", false, "reason", "SEATS_FULL"));
        CheckResult full = client().check();
        assertEquals(CheckState.INVALID, full.state());
        assertEquals(List.of(CheckResult.Reason.NO_SEAT), full.reasons());

        // An SVCR1 receipt for a floating term: the tag follows the presented term alone.
        service.handler = request -> service.answer(request, lid, "ACTIVE", "2026-11-22T06:45:00.000Z", now, Map.of());
        assertEquals(LicensorException.Reason.BAD_RECEIPT, client().check().noAnswer().orElseThrow().code());
    }

    @Test
    void borrowingNeedsAFloatingLicence() throws Exception {
        String nodeLocked = Vectors.licence(ED25519, "{\"v\":3,\"lid\":\"" + lid + "\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"ONLINE\",\"iat\":1,\"grace\":0,\"mm\":1}");
        LicenceClient client = LicenceClient.builder().baseUrl(service.baseUrl()).slug(FakeService.SLUG).checkId(FakeService.CHECK_ID)
            .checkToken(FakeService.TOKEN).publicKeys(PEM).licence(nodeLocked).fingerprint(MACHINE).store(StateStore.memory()).build();
        assertEquals(LicensorException.Reason.INVALID_OPTIONS, assertThrows(LicensorException.class, () -> client.borrow(Instant.now())).reason());
        assertEquals(0, service.requests.size());
    }

    @Test
    void readsFloatingClaims() throws Exception {
        LicenceClaims claims = client().verify().claims().orElseThrow();
        assertEquals(5, claims.version());
        assertEquals(900, claims.leaseSeconds().getAsLong());
        assertEquals(604_800, claims.maxBorrowSeconds().getAsLong());
        assertEquals(Map.of("lse2", 1L), claims.params());
    }

    /** What a keeper reported, in order. */
    private static final class Reports implements LeaseKeeper.Listener {
        final List<String> seen = new java.util.ArrayList<>();

        @Override public void leaseAtRisk(CheckResult result, Instant leaseEndsAt) { seen.add("at risk until " + leaseEndsAt); }
        @Override public void leaseLost(CheckResult result) { seen.add("lost " + result.state()); }
        @Override public void renewedTerm(String licence) { seen.add("renewed term"); }
        @Override public void failed(LicensorException error) { seen.add("failed " + error.reason()); }
    }

    /** Leases as {@link #leasing()} does, answers release, and fetch with {@code fetched}. */
    private void leasingAndReleasing(String fetched, boolean renewed) {
        service.handler = request -> {
            switch ((String) request.get("endpoint")) {
                case "release":
                    return new FakeService.Reply(200, Json.write(Map.of("lid", lid, "released", true, "releasedAt", "2026-11-25T10:00:00.000Z", "nonce", request.get("nonce"))));
                case "fetch":
                    return new FakeService.Reply(200, Json.write(Map.of("license", fetched)));
                default: {
                    Instant checkedAt = now.plusMillis(serviceAhead);
                    Object until = request.get("until");
                    String end = until != null ? (String) until : FakeService.ISO.format(checkedAt.plusSeconds(900));
                    return service.answer(request, lid, "ACTIVE", "2026-11-22T06:45:00.000Z", checkedAt, end, renewed ? Map.of("renewed", true) : Map.of());
                }
            }
        };
    }

    @Test
    void theKeeperReportsALeaseAtRiskThenLostAndReleasesOnStop() throws Exception {
        leasingAndReleasing(licence(), false);
        Reports reports = new Reports();
        LicenceClient client = client();
        LeaseKeeper keeper = new LeaseKeeper(client, reports, Duration.ofSeconds(300), false);
        long delay = keeper.tick();
        assertTrue(delay >= 270_000 && delay <= 330_000, "every lse / 3 with ±10% jitter: " + delay);
        assertEquals(List.of(), reports.seen);

        down();
        now = now.plusSeconds(800);
        long untilLapse = keeper.tick();
        assertEquals(List.of("at risk until " + Instant.ofEpochMilli(NOW).plusSeconds(900)), reports.seen);
        assertEquals(3, service.count("check"), "the failed renewal is retried at once");
        assertEquals(100_000, untilLapse, "the next round comes when the lease would lapse");

        now = now.plusSeconds(100);
        keeper.tick();
        assertEquals("lost STALE", reports.seen.get(reports.seen.size() - 1));

        leasingAndReleasing(licence(), false);
        keeper.tick();
        keeper.stop();
        assertEquals(1, service.count("release"));
        keeper.stop();
        assertEquals(1, service.count("release"));
    }

    @Test
    void theKeeperNeverReleasesABorrowedLeaseAndFetchesARenewedTerm() throws Exception {
        leasingAndReleasing(licence(), true);
        Reports reports = new Reports();
        LicenceClient client = client();
        LeaseKeeper keeper = new LeaseKeeper(client, reports, Duration.ofSeconds(300), false);
        keeper.tick();
        assertEquals(List.of("renewed term"), reports.seen);
        assertEquals(1, service.count("fetch"));
        leasingAndReleasing(licence(), false);
        client.borrow(now.plusSeconds(86_400));
        // The next round's answer signs the borrowed end the service keeps.
        service.handler = request -> service.answer(request, lid, "ACTIVE", "2026-11-22T06:45:00.000Z", now,
            FakeService.ISO.format(Instant.ofEpochMilli(NOW).plusSeconds(86_400)), Map.of());
        keeper.tick();
        keeper.stop();
        assertEquals(0, service.count("release"));
    }

    @Test
    void aStartedKeeperChecksAtOnceAndReleasesWhenStopped() throws Exception {
        leasingAndReleasing(licence(), false);
        java.util.concurrent.CountDownLatch checked = new java.util.concurrent.CountDownLatch(1);
        LeaseKeeper keeper = LeaseKeeper.start(client(), new LeaseKeeper.Listener() {
            @Override public void checked(CheckResult result) { checked.countDown(); }
        });
        assertTrue(checked.await(10, java.util.concurrent.TimeUnit.SECONDS));
        keeper.close();
        assertEquals(1, service.count("release"));
    }

    @Test
    void aKeeperNeedsAFloatingLicence() throws Exception {
        String nodeLocked = Vectors.licence(ED25519, "{\"v\":3,\"lid\":\"" + lid + "\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"ONLINE\",\"iat\":1,\"grace\":0,\"mm\":1}");
        LicenceClient client = LicenceClient.builder().baseUrl(service.baseUrl()).slug(FakeService.SLUG).checkId(FakeService.CHECK_ID)
            .checkToken(FakeService.TOKEN).publicKeys(PEM).licence(nodeLocked).fingerprint(MACHINE).store(StateStore.memory()).build();
        assertEquals(LicensorException.Reason.INVALID_OPTIONS, assertThrows(LicensorException.class, () -> LeaseKeeper.start(client, new Reports())).reason());
    }

    static Stream<Map<String, Object>> floatingVectors() {
        return Vectors.list("algorithms").stream().filter(a -> a.containsKey("floating"));
    }

    /** The shared vectors' floating sections (packages/protocol, once floating licences are merged). */
    @Test
    void passesTheFloatingVectors() throws Exception {
        assumeTrue(floatingVectors().findAny().isPresent(), "the shared vectors have no floating licences yet");
        for (Map<String, Object> algorithm : floatingVectors().toList()) {
            String id = (String) algorithm.get("algorithm");
            Map<String, Object> floating = Vectors.map(algorithm.get("floating"));
            Map<String, Object> expected = Vectors.map(floating.get("claims"));
            LicenceVerifier verifier = LicenceVerifier.builder().publicKeys((String) algorithm.get("publicKeyPem")).build();
            Instant issued = Instant.ofEpochSecond((Long) expected.getOrDefault("nbf", expected.get("iat")));
            LicenceVerification verified = verifier.verify((String) floating.get("licence"), issued);
            assertTrue(verified.valid(), id + " " + verified.reasons());
            assertEquals(floating.get("payloadJson"), Json.write(verified.claims().orElseThrow().asMap()), id);
            assertEquals(expected.get("lse"), verified.claims().orElseThrow().leaseSeconds().getAsLong(), id);
            assertFalse(verified.claims().orElseThrow().params().containsKey("lse"), id);
            for (Map<String, Object> tampered : Vectors.list(floating.get("tampered"))) {
                assertEquals(List.of(LicenceVerification.Refusal.valueOf((String) tampered.get("expected"))),
                    verifier.verify((String) tampered.get("licence"), issued).reasons(), id + " " + tampered.get("name"));
            }
            PublicKeys keys = PublicKeys.read(List.of((String) algorithm.get("publicKeyPem")));
            for (Map<String, Object> receipt : Vectors.list(floating.get("receipts"))) {
                Receipt fields = fields(receipt);
                assertEquals(receipt.get("messageHex"), HexFormat.of().formatHex(fields.message()), id + " " + receipt.get("name"));
                assertTrue(fields.verify((String) receipt.get("receipt"), keys), id + " " + receipt.get("name"));
                assertEquals(receipt.get("grants"), fields.grants(), id + " " + receipt.get("name"));
            }
            for (Map<String, Object> bad : Vectors.list(floating.get("badReceipts"))) {
                assertFalse(fields(bad).verify((String) bad.get("receipt"), keys), id + " " + bad.get("name"));
            }
        }
    }

    private static Receipt fields(Map<String, Object> receipt) {
        Map<String, Object> f = Vectors.map(receipt.get("fields"));
        String[] v = Stream.of("lid", "status", "nonce", "checkedAt", "boundAt", "fpDigest", "leaseEndsAt")
            .map(name -> f.get(name) == null ? "" : (String) f.get(name)).toArray(String[]::new);
        return new Receipt((String) receipt.get("tag"), v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
    }
}
