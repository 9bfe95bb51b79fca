package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** startTrial and a trial's judgement (DESIGN.md 18) against a stand-in trial endpoint: the trial licence plus a check of that term. */
class TrialTest extends ServiceTest {
    private static final String BOUND_AT = "2026-01-05T09:30:12.345Z";
    private static final String OTHER_MACHINE = (String) Vectors.list("fingerprints").get(1).get("fingerprint");
    private static final long DAY_MS = 86_400_000L;

    /** A 14-day trial from NOW: grace 0, this machine's fp, {@code trl} after {@code max}. */
    private String trial(String fp, String trl) throws Exception {
        return trial(fp, trl, 3);
    }

    private String trial(String fp, String trl, int fpn) throws Exception {
        long iat = NOW / 1000;
        return Vectors.licence(ED25519, "{\"v\":3,\"lid\":\"" + lid + "\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"ONLINE\",\"iat\":" + iat
            + ",\"exp\":" + (iat + 14 * 86_400) + ",\"grace\":0,\"fp\":\"" + fp + "\",\"fpn\":" + fpn + ",\"mm\":1,\"chk\":60,\"max\":3600" + trl + "}");
    }

    private String trial() throws Exception {
        return trial(MACHINE, ",\"trl\":true");
    }

    /** Every request (start or check) answered as the service does: the term (on a start) and its receipt for this request. */
    private void answering(int status, String licence, String signed, long checkedAt, Map<String, Object> extra) {
        service.handler = request -> {
            Map<String, Object> more = new LinkedHashMap<>(extra);
            if ("trial".equals(request.get("endpoint"))) more.put("license", licence);
            FakeService.Reply reply = service.answer(request, lid, signed, BOUND_AT, Instant.ofEpochMilli(checkedAt), more);
            return new FakeService.Reply("trial".equals(request.get("endpoint")) ? status : 200, reply.body());
        };
    }

    private LicenceClient.Builder options() {
        return builder(null);
    }

    private LicensorException refusal(LicenceClient.Builder options) {
        return assertThrows(LicensorException.class, () -> options.startTrial(null));
    }

    @Test
    void sendsThisMachineAndHoldsTheTrial() throws Exception {
        answering(201, trial(), "ACTIVE", NOW, Map.of());
        TrialStart start = options().startTrial("ada@example.com");
        Map<String, Object> sent = service.requests.get(0);
        assertEquals("trial", sent.get("endpoint"));
        assertEquals(List.of("fingerprint", "nonce", "devicePublicKey", "email", "endpoint"), List.copyOf(sent.keySet()));
        assertEquals(MACHINE, sent.get("fingerprint"));
        assertEquals(43, ((String) sent.get("devicePublicKey")).length());
        assertEquals("Bearer " + FakeService.TOKEN, service.authorizations.get(0));
        assertTrue(start.created());
        assertEquals(trial(), start.licence());
        assertEquals(trial(), start.client().licence());
        assertEquals(Instant.ofEpochMilli(NOW + 14 * DAY_MS), start.endsAt());
        assertEquals(CheckState.VALID, start.result().state());
        // trl is the trial's claim, not a product parameter.
        LicenceClaims claims = start.result().licence().claims().orElseThrow();
        assertTrue(claims.trial());
        assertFalse(claims.params().containsKey("trl"));
        assertEquals(new TrialStatus(start.endsAt(), 14 * 86_400, false), start.result().trial().orElseThrow());

        answering(200, trial(), "ACTIVE", NOW, Map.of());
        TrialStart again = options().startTrial(null);
        assertFalse(again.created());
        assertFalse(service.requests.get(1).containsKey("email"));
        assertEquals(sent.get("devicePublicKey"), service.requests.get(1).get("devicePublicKey"));
        assertTrue(again.client().check().trial().isPresent());
    }

    @Test
    void refusalsHaveTheirCodes() throws Exception {
        service.handler = request -> new FakeService.Reply(403, "{\"error\":\"no trials\",\"reason\":\"TRIALS_OFF\"}");
        assertEquals(LicensorException.Reason.TRIALS_OFF, refusal(options()).reason());
        service.handler = request -> new FakeService.Reply(403, "{\"error\":\"used\",\"reason\":\"TRIAL_USED\",\"matched\":[\"machine\",\"disk\"]}");
        LicensorException used = refusal(options());
        assertEquals(LicensorException.Reason.TRIAL_USED, used.reason());
        assertEquals(List.of("machine", "disk"), used.matched());
        service.handler = request -> new FakeService.Reply(429, "{\"error\":\"limit\",\"reason\":\"TRIAL_LIMIT\"}", Map.of("Retry-After", "3600"));
        LicensorException limited = refusal(options());
        assertEquals(LicensorException.Reason.HTTP_STATUS, limited.reason());
        assertEquals(429, limited.status());
        assertEquals(3600, limited.retryAfterSeconds());
        assertEquals("TRIAL_LIMIT", limited.serviceReason());
        service.handler = request -> new FakeService.Reply(403, "{\"error\":\"product inactive\"}");
        LicensorException other = refusal(options());
        assertEquals(LicensorException.Reason.HTTP_STATUS, other.reason());
        assertEquals(403, other.status());
    }

    @Test
    void refusesWhatIsNotThisMachinesTrial() throws Exception {
        String forged = trial();
        for (String licence : List.of(trial(MACHINE, ""), trial(MACHINE, ",\"trl\":\"true\""), forged.substring(0, forged.length() - 4) + "AAAA")) {
            answering(201, licence, "ACTIVE", NOW, Map.of());
            assertEquals(LicensorException.Reason.BAD_LICENCE, refusal(options()).reason(), licence);
        }
        // The vectors' second machine shares some components with the first: all five must match.
        answering(201, trial(OTHER_MACHINE, ",\"trl\":true", 5), "ACTIVE", NOW, Map.of());
        assertEquals(LicensorException.Reason.BAD_LICENCE, refusal(options()).reason());
        service.handler = request -> {
            Map<String, Object> forgedNonce = new LinkedHashMap<>(request);
            forgedNonce.put("nonce", "x".repeat(32));
            FakeService.Reply reply = service.answer(forgedNonce, lid, "ACTIVE", BOUND_AT, now, Map.of("license", uncheckedTrial()));
            return new FakeService.Reply(201, reply.body());
        };
        assertEquals(LicensorException.Reason.BAD_RECEIPT, refusal(options()).reason());
        assertEquals(LicensorException.Reason.INVALID_OPTIONS, refusal(options().store(StateStore.memory())).reason());
        assertEquals(LicensorException.Reason.INVALID_OPTIONS, refusal(options().productKey(null)).reason());
    }

    private String uncheckedTrial() {
        try {
            return trial();
        } catch (Exception impossible) {
            throw new IllegalStateException(impossible);
        }
    }

    @Test
    void aClockSetBackNeverRevivesAnEndedTrial() throws Exception {
        answering(200, trial(), "ACTIVE", NOW, Map.of());
        LicenceClient client = options().startTrial(null).client();
        // This machine's clock says two days before the end; the service signs that it has ended.
        now = Instant.ofEpochMilli(NOW + 12 * DAY_MS);
        answering(200, trial(), "EXPIRED", NOW + 15 * DAY_MS, Map.of("converted", true));
        CheckResult ended = client.check();
        assertEquals(CheckState.INVALID, ended.state());
        assertEquals(List.of(CheckResult.Reason.EXPIRED), ended.reasons());
        assertFalse(ended.clockRollback());
        assertEquals(0, ended.trial().orElseThrow().secondsLeft());
        assertTrue(ended.trial().orElseThrow().converted());
        now = Instant.ofEpochMilli(NOW + DAY_MS);
        CheckResult rolledBack = client.check();
        assertEquals(CheckState.INVALID, rolledBack.state());
        assertEquals(List.of(CheckResult.Reason.EXPIRED), rolledBack.reasons());
        assertTrue(rolledBack.clockRollback());
        assertEquals(2, service.requests.size());
    }

    @Test
    void theEndIsJudgedByTheServiceTime() throws Exception {
        // The service's clock is twelve hours ahead of this machine's.
        answering(200, trial(), "ACTIVE", NOW + DAY_MS / 2, Map.of());
        TrialStart start = options().startTrial(null);
        assertEquals(13 * 86_400 + 43_200, start.result().trial().orElseThrow().secondsLeft());
        now = Instant.ofEpochMilli(NOW + 13 * DAY_MS + 18 * 3_600_000L);
        CheckResult result = start.client().check();
        assertEquals(CheckState.INVALID, result.state());
        assertEquals(List.of(CheckResult.Reason.EXPIRED), result.reasons());
        assertEquals(1, service.requests.size());
    }

    @Test
    void convertedIsKeptWithTheAnswer() throws Exception {
        answering(200, trial(), "ACTIVE", NOW, Map.of("converted", true));
        TrialStart start = options().startTrial(null);
        assertTrue(start.result().trial().orElseThrow().converted());
        now = Instant.ofEpochMilli(NOW + 3_600_000L);
        service.handler = request -> new FakeService.Reply(503, "{}");
        CheckResult result = builder(start.licence()).timeout(Duration.ofSeconds(2)).build().check();
        assertEquals(CheckState.VALID, result.state());
        assertEquals(new TrialStatus(start.endsAt(), 14 * 86_400 - 3_600, true), result.trial().orElseThrow());
    }
}
