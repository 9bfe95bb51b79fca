package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** recordUsage and usage (DESIGN.md 19) against the stand-in service: the queue on disk and SVCU1. */
class UsageTest extends ServiceTest {
    private String licence(String extra) throws Exception {
        return Vectors.licence(ED25519, "{\"v\":3,\"lid\":\"" + lid + "\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"ONLINE\",\"iat\":" + (NOW / 1000 - 86_400)
            + ",\"exp\":" + (NOW / 1000 + 365 * 86_400) + ",\"grace\":7,\"mm\":1,\"chk\":60,\"max\":3600" + extra + "}");
    }

    private LicenceClient client() throws Exception {
        return builder(licence("")).build();
    }

    private Path queue() {
        return stateDir.resolve("usage").resolve(lid);
    }

    private List<String> queued() throws Exception {
        if (!Files.isDirectory(queue())) return List.of();
        try (var files = Files.list(queue())) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** The service counts what it accepts, each event's result from {@code result}, signed with {@code key}. */
    private void counting(String status, Function<Map<String, Object>, String> result, Map<String, Object> key) {
        AtomicLong used = new AtomicLong();
        service.handler = request -> {
            Map<String, String> decided = new java.util.HashMap<>();
            for (Object item : (List<?>) request.get("events")) {
                @SuppressWarnings("unchecked")
                Map<String, Object> event = (Map<String, Object>) item;
                String outcome = result.apply(event);
                decided.put((String) event.get("id"), outcome);
                if (outcome.equals("ACCEPTED")) used.addAndGet((Long) event.get("amount"));
            }
            return service.usageAnswer(request, lid, status, used.get(), e -> decided.get((String) e.get("id")), key);
        };
    }

    private void counting() {
        counting("ACTIVE", e -> "ACCEPTED", ED25519);
    }

    private static List<?> sentEvents(Map<String, Object> request) {
        return (List<?>) request.get("events");
    }

    @Test
    void theMessageIsDesignsExample() {
        byte[] message = UsageQueue.receiptMessage("L", "ACTIVE", "N", "2026-11-22T07:00:00.000Z", "2026-11-20T09:00:00.000Z", "D", List.<String[]>of(new String[] {"e-1", "ACCEPTED"}),
            List.of(new UsageReport.Balance("exports", 3, Optional.of(1_000_000_000_000L), Optional.of(0L), Optional.of(999_999_999_997L), Optional.of("2026-12-01T00:00:00.000Z"), 0)));
        assertEquals("SVCU1␟L␟ACTIVE␟N␟2026-11-22T07:00:00.000Z␟2026-11-20T09:00:00.000Z␟D␟1␟e-1␟ACCEPTED␟1␟exports␟3␟1000000000000␟0␟999999999997␟2026-12-01T00:00:00.000Z",
            new String(message, StandardCharsets.UTF_8).replace('\u001f', '␟'));
        byte[] unlimited = UsageQueue.receiptMessage("L", "", "N", "T", "", "D", List.of(),
            List.of(new UsageReport.Balance("seats", 0, Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(), 0)));
        assertEquals("SVCU1\u001fL\u001f\u001fN\u001fT\u001f\u001fD\u001f0\u001f1\u001fseats\u001f0\u001f\u001f\u001f\u001f", new String(unlimited, StandardCharsets.UTF_8));
        assertEquals(null, UsageQueue.receiptMessage("L\u001f", "", "N", "T", "", "D", List.of(), List.of()));
    }

    @Test
    void theEventIsQueuedBeforeSendingAndRemovedOnceItsReceiptVerifies() throws Exception {
        UsageReport first = client().recordUsage("exports", 3);
        assertEquals(Optional.empty(), first.licensed());
        assertEquals(Optional.empty(), first.meters());
        assertEquals(Optional.of(503), first.noAnswer().get().status());
        UsageReport.Event event = first.events().get(0);
        assertEquals(UsageReport.QUEUED, event.result());
        Path file = queue().resolve(event.id() + ".json");
        Map<String, Object> stored = Json.parseObject(Files.readString(file));
        assertEquals(List.of("id", "meter", "amount", "at"), List.copyOf(stored.keySet()));
        assertEquals(Map.of("id", event.id(), "meter", "exports", "amount", 3L, "at", FakeService.ISO.format(now)), stored);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(queue())));

        // A restart: another client on the same state sends what the first queued, oldest first, then its own.
        counting();
        now = now.plusSeconds(60);
        UsageReport report = client().recordUsage("exports", 2);
        Map<String, Object> sent = service.requests.get(service.requests.size() - 1);
        assertEquals("usage", sent.get("endpoint"));
        assertEquals(stored, sentEvents(sent).get(0));
        assertEquals(List.of("ACCEPTED", "ACCEPTED"), report.events().stream().map(UsageReport.Event::result).toList());
        assertEquals(Optional.of(true), report.licensed());
        assertEquals(Optional.of(true), report.fresh());
        assertEquals(Optional.of(List.of(new UsageReport.Balance("exports", 5, Optional.of(1000L), Optional.of(0L), Optional.of(995L), Optional.of("2026-12-01T00:00:00.000Z"), 0))), report.meters());
        assertEquals(List.of(), queued());
        assertEquals(List.of(), client().usage().events());
        assertEquals(List.of(), sentEvents(service.requests.get(service.requests.size() - 1)));
    }

    @Test
    void anAnswerThatDoesNotVerifyKeepsTheEvent() throws Exception {
        counting("ACTIVE", e -> "ACCEPTED", Vectors.algorithm("EC_P256"));
        UsageReport report = client().recordUsage("exports");
        assertEquals(LicensorException.Reason.BAD_RECEIPT, report.noAnswer().get().code());
        service.handler = request -> new FakeService.Reply(200, "{\"events\":[],\"meters\":[{\"key\":\"exports\",\"used\":1.5}],\"checkedAt\":\"x\",\"receipt\":\"x\"}");
        assertEquals(LicensorException.Reason.BAD_RESPONSE, client().recordUsage("exports").noAnswer().get().code());
        assertEquals(2, queued().size());
    }

    @Test
    void whatTheServiceWouldRefuseIsInvalidOptions() throws Exception {
        LicenceClient client = client();
        Object[][] cases = {{"1exports", 1L}, {"", 1L}, {null, 1L}, {"exports", 0L}, {"exports", -1L}, {"exports", 1_000_000_001L}};
        for (Object[] c : cases) {
            LicensorException refused = assertThrows(LicensorException.class, () -> client.recordUsage((String) c[0], (Long) c[1]));
            assertEquals(LicensorException.Reason.INVALID_OPTIONS, refused.reason());
        }
        LicenceClient memory = builder(licence("")).store(StateStore.memory()).build();
        assertEquals(LicensorException.Reason.INVALID_OPTIONS, assertThrows(LicensorException.class, () -> memory.recordUsage("exports")).reason());
        assertEquals(0, service.requests.size());
        assertEquals(List.of(), queued());
    }

    @Test
    void queueFullAt1000() throws Exception {
        Files.createDirectories(queue());
        for (int i = 0; i < 1000; i++) {
            String id = String.format("event-%04d", i);
            Files.writeString(queue().resolve(id + ".json"), "{\"id\":\"" + id + "\",\"meter\":\"exports\",\"amount\":1,\"at\":\"2026-11-22T07:00:00.000Z\"}");
        }
        assertEquals(LicensorException.Reason.QUEUE_FULL, assertThrows(LicensorException.class, () -> client().recordUsage("exports")).reason());
        assertEquals(1000, queued().size());
        assertEquals(0, service.requests.size());
    }

    @Test
    void batchesOf100OldestFirst() throws Exception {
        Files.createDirectories(queue());
        for (int i = 0; i < 150; i++) {
            String id = String.format("e%03d", 149 - i);
            String at = FakeService.ISO.format(now.minusSeconds(i / 2));
            Files.writeString(queue().resolve(id + ".json"), "{\"id\":\"" + id + "\",\"meter\":\"exports\",\"amount\":1,\"at\":\"" + at + "\"}");
        }
        counting();
        UsageReport report = client().recordUsage("exports");
        assertEquals(List.of(100, 51), service.requests.stream().map(r -> sentEvents(r).size()).toList());
        List<Map<?, ?>> sent = new ArrayList<>();
        for (Map<String, Object> r : service.requests) for (Object e : sentEvents(r)) sent.add((Map<?, ?>) e);
        for (int i = 1; i < sent.size(); i++) {
            String a = sent.get(i - 1).get("at") + " " + sent.get(i - 1).get("id"), b = sent.get(i).get("at") + " " + sent.get(i).get("id");
            assertTrue(a.compareTo(b) < 0, a + " then " + b);
        }
        assertEquals("e000", sent.get(0).get("id"));
        assertEquals(151, report.meters().get().get(0).used());
        assertEquals(List.of(), queued());
    }

    @Test
    void notLicensedEventsStayAndOtherResultsAreFinal() throws Exception {
        counting("EXPIRED", e -> "NOT_LICENSED", ED25519);
        LicenceClient client = client();
        UsageReport report = client.recordUsage("exports", 4);
        assertEquals(Optional.of(false), report.licensed());
        assertEquals(Optional.of(CheckResult.Reason.EXPIRED), report.reason());
        assertEquals(4, report.meters().get().get(0).pending());
        assertEquals(1, queued().size());
        java.util.Iterator<String> results = List.of("ACCEPTED", "LIMIT_REACHED", "UNKNOWN_METER", "TOO_OLD", "EVENT_LIMIT", "ID_REUSED").iterator();
        counting("ACTIVE", e -> results.next(), ED25519);
        for (int i = 0; i < 5; i++) client.recordUsage("exports");
        assertEquals(List.of(), queued());
    }

    @Test
    void nothingIsSentBeforeRetryAfter() throws Exception {
        service.handler = request -> new FakeService.Reply(429, "{\"error\":\"too many\"}");
        service.headers = Map.of("Retry-After", "30");
        LicenceClient client = client();
        assertEquals(Optional.of(429), client.recordUsage("exports").noAnswer().get().status());
        counting();
        now = now.plusSeconds(20);
        assertEquals(Optional.of(429), client.recordUsage("exports").noAnswer().get().status());
        assertEquals(1, service.requests.size());
        now = now.plusSeconds(11);
        UsageReport report = client.usage();
        assertTrue(report.noAnswer().isEmpty());
        assertEquals(2, report.meters().get().get(0).used());
    }

    @Test
    void otherLicencesEventsArePendingAndNeverSent() throws Exception {
        Path other = stateDir.resolve("usage").resolve("trial-lid");
        Files.createDirectories(other);
        for (String id : List.of("t1", "t2")) Files.writeString(other.resolve(id + ".json"), "{\"id\":\"" + id + "\",\"meter\":\"exports\",\"amount\":1,\"at\":\"2026-11-22T07:00:00.000Z\"}");
        counting();
        UsageReport report = client().recordUsage("exports");
        assertEquals(2, report.pending());
        assertEquals(1, sentEvents(service.requests.get(0)).size());
        try (var files = Files.list(other)) {
            assertEquals(2, files.count());
        }
    }

    @Test
    void metersReadTheMtrClaim() throws Exception {
        LicenceClient client = builder(licence(",\"mtr\":[{\"k\":\"exports\",\"p\":\"MONTH\",\"l\":1000,\"o\":0},{\"k\":\"renders\",\"p\":\"NONE\",\"l\":null,\"o\":null}]")).build();
        List<LicenceClaims.Meter> meters = client.verify().claims().orElseThrow().meters();
        assertEquals(List.of(new LicenceClaims.Meter("exports", "MONTH", Optional.of(1000L), Optional.of(0L)), new LicenceClaims.Meter("renders", "NONE", Optional.empty(), Optional.empty())), meters);
        assertNotNull(client().verify().claims().orElseThrow().meters());
        assertEquals(List.of(), client().verify().claims().orElseThrow().meters());
    }

    @Test
    void theMtrClaimIsNoProductParameter() throws Exception {
        LicenceClaims metered = builder(licence(",\"mtr\":[{\"k\":\"exports\",\"p\":\"MONTH\",\"l\":1000,\"o\":0}],\"tier\":\"pro\"")).build().verify().claims().orElseThrow();
        assertEquals(Map.of("tier", "pro"), metered.params());
        assertEquals(1, metered.meters().size());
        // A product's parameter that kept the name from before meters existed stays a parameter.
        LicenceClaims kept = builder(licence(",\"mtr\":\"legacy\"")).build().verify().claims().orElseThrow();
        assertEquals(Map.of("mtr", "legacy"), kept.params());
        assertEquals(List.of(), kept.meters());
    }

    @Test
    void updatesUntilIsTheSignedUpdElseTheGraceEndAndUpdIsNoParameter() throws Exception {
        long upd = NOW / 1000 + 730 * 86_400;
        LicenceClient windowed = builder(licence(",\"upd\":" + upd + ",\"tier\":\"pro\"")).build();
        assertEquals(Optional.of(java.time.Instant.ofEpochSecond(upd)), windowed.updatesUntil());
        assertEquals(Map.of("tier", "pro"), windowed.verify().claims().orElseThrow().params());
        LicenceClient kept = builder(licence(",\"upd\":\"nightly\"")).build();
        assertEquals(Map.of("upd", "nightly"), kept.verify().claims().orElseThrow().params());
        assertEquals(Optional.of(java.time.Instant.ofEpochSecond(NOW / 1000 + 372 * 86_400)), kept.updatesUntil());
    }
}
