package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Air-gapped activation (DESIGN.md 14): the shared vectors' texts, and the client's request, activation, check and deactivation. */
class AirGapTest extends ServiceTest {
    private static final Map<String, Object> VECTORS = Vectors.map(Vectors.ALL.get("airGap"));

    private static Map<String, Object> section(String name) {
        return Vectors.map(VECTORS.get(name));
    }

    private static String deviceDpk() {
        return (String) section("deviceKey").get("dpk");
    }

    /** The MALFORMED or BAD_SIGNATURE verdict on a text, as each reader must give it. */
    private static String verdict(String tag, String text, java.util.function.Predicate<AirGap.Signed> verifies) {
        try {
            return verifies.test(AirGap.parse(tag, text)) ? "VALID" : "BAD_SIGNATURE";
        } catch (AirGap.Malformed malformed) {
            return "MALFORMED";
        }
    }

    @Test
    void signsTheVectorsRequestAndDeactivationExactly() throws Exception {
        AirGap.DeviceKey device = AirGap.DeviceKey.of(Base64Url.decode((String) section("deviceKey").get("seed")));
        assertEquals(deviceDpk(), device.dpk());
        Map<String, Object> request = section("request");
        assertEquals(request.get("text"), AirGap.sign(AirGap.REQUEST, Vectors.map(request.get("fields")), device.key()));
        assertEquals(request.get("groups"), AirGap.groupsOfFive((String) request.get("text")));
        assertEquals(request.get("text"), AirGap.compact((String) request.get("groups")));
        Map<String, Object> deactivation = section("deactivation");
        assertEquals(deactivation.get("text"), AirGap.sign(AirGap.DEACTIVATION, Vectors.map(deactivation.get("fields")), device.key()));
        assertEquals("VALID", verdict(AirGap.DEACTIVATION, (String) deactivation.get("text"), s -> AirGap.verifiedByDevice(s, deviceDpk())));
        assertEquals("BAD_SIGNATURE", verdict(AirGap.REQUEST, (String) request.get("text"), s -> AirGap.verifiedByDevice(s, (String) section("otherDeviceKey").get("dpk"))));
    }

    @Test
    void readsEveryAlgorithmsResponseWithItsFieldsInOrder() throws Exception {
        for (Map<String, Object> response : Vectors.list(VECTORS.get("responses"))) {
            String id = (String) response.get("algorithm");
            PublicKeys keys = PublicKeys.read(List.of(Vectors.algorithm(id).get("publicKeyPem")));
            AirGap.Signed signed = AirGap.parse(AirGap.RESPONSE, (String) response.get("text"));
            assertTrue(AirGap.verifiedByProduct(signed, keys), id);
            assertEquals(Json.write(response.get("fields")), Json.write(signed.fields()), id);
            String other = id.equals("ED25519") ? "EC_P256" : "ED25519";
            assertFalse(AirGap.verifiedByProduct(signed, PublicKeys.read(List.of(Vectors.algorithm(other).get("publicKeyPem")))), id);
        }
    }

    @Test
    void refusesEveryBadText() throws Exception {
        PublicKeys keys = PublicKeys.read(List.of(Vectors.list("algorithms").get(0).get("publicKeyPem")));
        for (Map<String, Object> bad : Vectors.list(VECTORS.get("badResponses"))) {
            assertEquals(bad.get("expected"), verdict(AirGap.RESPONSE, (String) bad.get("text"), s -> AirGap.verifiedByProduct(s, keys)), "response: " + bad.get("name"));
        }
        for (Map<String, Object> bad : Vectors.list(VECTORS.get("badRequests"))) {
            assertEquals(bad.get("expected"), verdict(AirGap.REQUEST, (String) bad.get("text"), s -> AirGap.verifiedByDevice(s, deviceDpk())), "request: " + bad.get("name"));
        }
        for (Map<String, Object> bad : Vectors.list(VECTORS.get("badDeactivations"))) {
            assertEquals(bad.get("expected"), verdict(AirGap.DEACTIVATION, (String) bad.get("text"), s -> AirGap.verifiedByDevice(s, deviceDpk())), "deactivation: " + bad.get("name"));
        }
        assertThrows(AirGap.Malformed.class, () -> AirGap.parse(AirGap.RESPONSE, "SVCX1." + "A".repeat(4100) + ".AA"));
    }

    private LicenceClient client(StateStore store) throws Exception {
        String licence = Vectors.licence(ED25519, "{\"v\":3,\"lid\":\"" + lid + "\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"ONLINE\",\"iat\":" + (NOW / 1000 - 86_400)
            + ",\"exp\":" + (NOW / 1000 + 365 * 86_400) + ",\"grace\":7,\"mm\":1,\"chk\":60,\"max\":3600}");
        return builder(licence).store(store).build();
    }

    /** The vendor's answer to a request: an SVCX1 signed with the product key, its fields taken from the request unless overridden. */
    private String respond(String request, String aid, Map<String, Object> overrides) throws Exception {
        Map<String, Object> asked = AirGap.parse(AirGap.REQUEST, AirGap.compact(request)).fields();
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("lid", asked.get("lid"));
        fields.put("aid", aid);
        fields.put("fp", asked.get("fp"));
        fields.put("dpk", asked.get("dpk"));
        fields.put("nonce", asked.get("nonce"));
        fields.put("status", "ACTIVE");
        fields.put("iat", NOW / 1000);
        fields.put("boundAt", NOW / 1000);
        fields.put("until", NOW / 1000 + 30 * 86_400);
        fields.putAll(overrides);
        String signedPart = "SVCX1." + Base64Url.encode(Json.write(fields).getBytes(StandardCharsets.UTF_8));
        return signedPart + "." + Base64Url.encode(Vectors.sign(ED25519, signedPart.getBytes(StandardCharsets.US_ASCII)));
    }

    private static LicensorException.Reason refusal(org.junit.jupiter.api.function.Executable call) {
        return assertThrows(LicensorException.class, call).reason();
    }

    @Test
    void activatesWithoutTheNetworkUntilUntilThenDeactivates() throws Exception {
        LicenceClient client = client(StateStore.files(stateDir));
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(client::deactivateAirGapped));
        assertEquals(CheckState.STALE, client.check().state()); // the service is down and nothing is kept
        AirGapText request = client.createAirGapRequest();
        AirGap.Signed signed = AirGap.parse(AirGap.REQUEST, request.text());
        String dpk = signed.string("dpk");
        assertTrue(AirGap.verifiedByDevice(signed, dpk));
        assertEquals(List.of(lid, MACHINE), List.of(signed.string("lid"), signed.string("fp")));
        assertEquals(32, signed.string("nonce").length());
        Path product = stateDir.resolve("acme").resolve("acme-cad");
        assertTrue(Files.readString(product.resolve("device.json")).contains(dpk));

        // Another request's nonce, another licence, another device key: refused, and the pending request stays.
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(() -> client.activateAirGapped(respond(request.text(), "7", Map.of("nonce", "x".repeat(32))))));
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(() -> client.activateAirGapped(respond(request.text(), "7", Map.of("lid", "other")))));
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(() -> client.activateAirGapped(respond(request.text(), "7", Map.of("dpk", section("otherDeviceKey").get("dpk"))))));
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(() -> client.activateAirGapped(request.text())));

        String response = respond(request.groups(), "7", Map.of());
        AirGapActivation activation = client.activateAirGapped(AirGap.groupsOfFive(response));
        assertEquals(new AirGapActivation(Instant.ofEpochSecond(NOW / 1000 + 30 * 86_400), "7"), activation);
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(() -> client.activateAirGapped(response))); // no request pending now

        CheckResult result = client.check();
        assertEquals(List.of(CheckState.VALID, true, false), List.of(result.state(), result.airGapped(), result.clockRollback()));
        assertTrue(result.noAnswer().isPresent());
        assertTrue(client(StateStore.files(stateDir)).check().airGapped(), "kept across a restart");
        assertFalse(client(StateStore.memory()).check().airGapped(), "kept only in the product directory");

        now = Instant.ofEpochMilli(NOW - 120_000);
        result = client.check();
        assertEquals(List.of(CheckState.STALE, false, true), List.of(result.state(), result.airGapped(), result.clockRollback()));
        now = activation.until();
        assertEquals(CheckState.STALE, client.check().state());
        now = Instant.ofEpochMilli(NOW + 60_000);

        AirGapText code = client.deactivateAirGapped();
        AirGap.Signed deactivation = AirGap.parse(AirGap.DEACTIVATION, code.text());
        assertTrue(AirGap.verifiedByDevice(deactivation, dpk));
        assertEquals(List.of(lid, "7", NOW / 1000 + 60), List.of(deactivation.string("lid"), deactivation.string("aid"), deactivation.seconds("iat")));
        assertFalse(client.check().airGapped());
        // A deactivated activation is never accepted again, even answering a new request.
        String again = client.createAirGapRequest().text();
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(() -> client.activateAirGapped(respond(again, "7", Map.of()))));
        assertEquals("7", Vectors.map(Vectors.list(Json.parseObject(Files.readString(product.resolve("air-gap.json"))).get("deactivated")).get(0)).get("aid"));
    }

    @Test
    void aLaterAnswerThatSaysNotLicensedEndsTheActivation() throws Exception {
        LicenceClient client = client(StateStore.files(stateDir));
        client.activateAirGapped(respond(client.createAirGapRequest().text(), "8", Map.of()));
        service.handler = request -> service.answer(request, lid, "REVOKED", null, now, Map.of());
        assertEquals(CheckState.INVALID, client.check().state());
        service.handler = request -> new FakeService.Reply(503, "{\"error\":\"down\"}");
        CheckResult result = client.check();
        assertEquals(List.of(CheckState.INVALID, false), List.of(result.state(), result.airGapped()));
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(client::deactivateAirGapped));
    }

    @Test
    void anotherMachineCannotUseTheActivation() throws Exception {
        LicenceClient client = client(StateStore.files(stateDir));
        String other = (String) Vectors.list("fingerprints").get(1).get("fingerprint");
        String request = client.createAirGapRequest().text();
        assertEquals(LicensorException.Reason.BAD_ACTIVATION, refusal(() -> client.activateAirGapped(respond(request, "9", Map.of("fp", other)))));
    }

    @Test
    void needsAStateDirectoryForTheDeviceKey() throws Exception {
        assertEquals(LicensorException.Reason.INVALID_OPTIONS, refusal(() -> client(StateStore.memory()).createAirGapRequest()));
    }
}
