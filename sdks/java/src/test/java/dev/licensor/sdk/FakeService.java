package dev.licensor.sdk;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** A stand-in for the check API on 127.0.0.1, answering with receipts signed by a vector key. */
final class FakeService implements AutoCloseable {
    static final String SLUG = "acme";
    static final String CHECK_ID = "k3x9abcdefgh";
    static final String TOKEN = "svcc_" + CHECK_ID + "_" + "0".repeat(64);

    /** What the service answers: a status, a body and headers to add. */
    record Reply(int status, String body, Map<String, String> headers) {
        Reply(int status, String body) {
            this(status, body, Map.of());
        }
    }

    static final java.time.format.DateTimeFormatter ISO =
        java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(java.time.ZoneOffset.UTC);

    final Map<String, Object> algorithm;
    final List<Map<String, Object>> requests = new ArrayList<>();
    final List<String> authorizations = new ArrayList<>();
    private final HttpServer server;
    volatile Function<Map<String, Object>, Reply> handler = request -> new Reply(503, "{\"error\":\"down\"}");
    /** What the feeds answer (DESIGN.md 20), by the path under {@code feeds/} (token first). */
    volatile Function<String, Reply> feeds = path -> new Reply(404, "{\"error\":\"no such feed\"}");
    /** The feed paths asked, with their queries. */
    final List<String> feedRequests = new ArrayList<>();
    /** Sent with every answer (a 429's Retry-After). */
    volatile Map<String, String> headers = Map.of();

    FakeService(Map<String, Object> algorithm) throws IOException {
        this.algorithm = algorithm;
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/o/" + SLUG + "/api/public/license/" + CHECK_ID + "/", exchange -> {
            Map<String, Object> request;
            try {
                request = new LinkedHashMap<>(Json.parseObject(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8)));
            } catch (Json.JsonException bad) {
                request = new LinkedHashMap<>();
            }
            String path = exchange.getRequestURI().getPath();
            request.put("endpoint", path.substring(path.lastIndexOf('/') + 1));
            synchronized (this) {
                requests.add(request);
                authorizations.add(exchange.getRequestHeaders().getFirst("Authorization"));
            }
            Reply reply = handler.apply(request);
            byte[] bytes = reply.body().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            reply.headers().forEach(exchange.getResponseHeaders()::add);
            headers.forEach((name, value) -> exchange.getResponseHeaders().add(name, value));
            exchange.sendResponseHeaders(reply.status(), bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.createContext("/o/" + SLUG + "/api/public/feeds/", exchange -> {
            String asked = exchange.getRequestURI().getRawPath().substring(("/o/" + SLUG + "/api/public/feeds/").length());
            String query = exchange.getRequestURI().getRawQuery();
            synchronized (this) {
                feedRequests.add(query == null ? asked : asked + "?" + query);
            }
            Reply reply = feeds.apply(asked);
            byte[] bytes = reply.body().getBytes(StandardCharsets.UTF_8);
            reply.headers().forEach(exchange.getResponseHeaders()::add);
            exchange.sendResponseHeaders(reply.status(), bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.start();
    }

    String baseUrl() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** A genuine check answer for this request, with the given signed status and boundAt (null = absent). */
    Reply answer(Map<String, Object> request, String lid, String status, String boundAt, Instant checkedAt, Map<String, Object> extra) {
        return answer(request, lid, status, boundAt, checkedAt, null, extra);
    }

    /** A floating licence's answer (SVCR2) when {@code leaseEndsAt} is not null; "" signs no lease end. */
    Reply answer(Map<String, Object> request, String lid, String status, String boundAt, Instant checkedAt, String leaseEndsAt, Map<String, Object> extra) {
        String checked = ISO.format(checkedAt);
        Receipt fields = new Receipt(leaseEndsAt == null ? Receipt.NODE_LOCKED : Receipt.FLOATING, lid, status == null ? "" : status,
            (String) request.get("nonce"), checked, boundAt == null ? "" : boundAt, Fingerprint.digest((String) request.get("fingerprint")),
            leaseEndsAt == null ? "" : leaseEndsAt);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("lid", lid);
        body.put("valid", fields.grants());
        if (status != null) body.put("status", status);
        body.put("nonce", request.get("nonce"));
        body.put("checkedAt", checked);
        body.put("serverTime", checked);
        if (boundAt != null) body.put("boundAt", boundAt);
        if (leaseEndsAt != null && !leaseEndsAt.isEmpty()) body.put("leaseEndsAt", leaseEndsAt);
        try {
            body.put("receipt", Base64Url.encode(Vectors.sign(algorithm, fields.message())));
        } catch (Exception impossible) {
            throw new IllegalStateException(impossible);
        }
        body.putAll(extra);
        return new Reply(200, Json.write(body));
    }

    /**
     * A usage answer as DESIGN.md 19 has the service sign it (SVCU1): each event's result from
     * {@code result}, the meter {@code exports} (limit 1000) at {@code used}; {@code key} signs it.
     */
    Reply usageAnswer(Map<String, Object> request, String lid, String status, long used, Function<Map<String, Object>, String> result, Map<String, Object> key) {
        String checked = ISO.format(Instant.ofEpochMilli(ServiceTest.NOW));
        List<String[]> events = new ArrayList<>();
        List<Object> answered = new ArrayList<>();
        for (Object item : (List<?>) request.get("events")) {
            @SuppressWarnings("unchecked")
            Map<String, Object> event = (Map<String, Object>) item;
            String outcome = result.apply(event);
            events.add(new String[] {(String) event.get("id"), outcome});
            answered.add(Map.of("id", event.get("id"), "result", outcome, "duplicate", false));
        }
        UsageReport.Balance meter = new UsageReport.Balance("exports", used, java.util.Optional.of(1000L), java.util.Optional.of(0L),
            java.util.Optional.of(1000 - used), java.util.Optional.of("2026-12-01T00:00:00.000Z"), 0);
        byte[] message = UsageQueue.receiptMessage(lid, status, (String) request.get("nonce"), checked, "2026-01-05T09:30:12.345Z",
            Fingerprint.digest((String) request.get("fingerprint")), events, List.of(meter));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("lid", lid);
        body.put("status", status);
        body.put("nonce", request.get("nonce"));
        body.put("checkedAt", checked);
        body.put("boundAt", "2026-01-05T09:30:12.345Z");
        body.put("events", answered);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("key", "exports");
        m.put("label", "Exports");
        m.put("used", used);
        m.put("limit", 1000L);
        m.put("overage", 0L);
        m.put("remaining", 1000 - used);
        m.put("resetsAt", "2026-12-01T00:00:00.000Z");
        body.put("meters", List.of(m));
        try {
            body.put("receipt", Base64Url.encode(Vectors.sign(key, message)));
        } catch (Exception impossible) {
            throw new IllegalStateException(impossible);
        }
        return new Reply(200, Json.write(body));
    }

    synchronized int count(String endpoint) {
        return (int) requests.stream().filter(r -> endpoint.equals(r.get("endpoint"))).count();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
