package dev.licensor.driver;

import dev.licensor.sdk.AirGapText;
import dev.licensor.sdk.CheckResult;
import dev.licensor.sdk.DownloadedFile;
import dev.licensor.sdk.FeedUrls;
import dev.licensor.sdk.Fingerprint;
import dev.licensor.sdk.Json;
import dev.licensor.sdk.LicenceClient;
import dev.licensor.sdk.LicenceVerifier;
import dev.licensor.sdk.LicensorException;
import dev.licensor.sdk.ReleaseResult;
import dev.licensor.sdk.StateStore;
import dev.licensor.sdk.LicenceVerification;
import dev.licensor.sdk.NoAnswer;
import dev.licensor.sdk.UsageReport;
import dev.licensor.sdk.TrialStart;
import dev.licensor.sdk.Update;
import dev.licensor.sdk.UpdateCheck;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Java SDK's driver (DESIGN.md 16): one JSON request a line on stdin, one JSON answer a line
 * on stdout, in order; logs go to stderr. A test program, never part of the library jar.
 */
public final class Driver {
    private static final DateTimeFormatter ISO = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    /** Real time plus an offset the harness sets with {@code setClock}. */
    private static final class OffsetClock extends Clock {
        volatile long offsetMs;

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            throw new UnsupportedOperationException("the driver's clock is UTC");
        }

        @Override
        public Instant instant() {
            return Instant.now().plusMillis(offsetMs);
        }
    }

    /** A request the driver cannot serve: answered with {@code INVALID_OPTIONS}. */
    private static final class BadRequest extends Exception {
        private static final long serialVersionUID = 1L;
        final String code;

        BadRequest(String message) {
            this("INVALID_OPTIONS", message);
        }

        /** A request the driver answers with a code of its own (NO_UPDATE). */
        BadRequest(String code, String message) {
            super(message);
            this.code = code;
        }
    }

    private final OffsetClock clock = new OffsetClock();
    private Map<String, Object> options;
    private LicenceClient client;
    private String fingerprint;
    /** What the last checkForUpdate returned, for download. */
    private Update update;

    public static void main(String[] args) throws Exception {
        Driver driver = new Driver();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        // Nothing but answers may reach stdout.
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            out.println(Json.write(driver.answer(line)));
            out.flush();
        }
    }

    private Map<String, Object> answer(String line) {
        Map<String, Object> answer = new LinkedHashMap<>();
        try {
            Map<String, Object> request;
            try {
                request = Json.parseObject(line);
            } catch (Json.JsonException bad) {
                throw new BadRequest("the request is not a JSON object: " + bad.getMessage());
            }
            Object result = handle(request);
            answer.put("ok", true);
            answer.put("result", result);
        } catch (LicensorException failed) {
            answer.put("ok", false);
            Map<String, Object> error = error(failed.reason().name(), failed.getMessage(), failed.status());
            if (failed.reason() == LicensorException.Reason.TRIAL_USED) error.put("matched", failed.matched());
            if (failed.retryAfterSeconds() != null) error.put("retryAfterSeconds", (long) failed.retryAfterSeconds());
            if (failed.serviceReason() != null) error.put("reason", failed.serviceReason());
            answer.put("error", error);
        } catch (BadRequest bad) {
            answer.put("ok", false);
            answer.put("error", error(bad.code, bad.getMessage(), null));
        } catch (RuntimeException unexpected) {
            unexpected.printStackTrace();
            answer.put("ok", false);
            answer.put("error", error("INVALID_OPTIONS", String.valueOf(unexpected), null));
        }
        return answer;
    }

    private static Map<String, Object> error(String code, String message, Integer status) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("code", code);
        error.put("message", message);
        if (status != null) error.put("status", (long) status);
        return error;
    }

    private Object handle(Map<String, Object> request) throws LicensorException, BadRequest {
        String op = String.valueOf(request.get("op"));
        switch (op) {
            case "configure":
                // A configure that fails leaves no client, but its keys still serve verify.
                options = request;
                client = null;
                update = null;
                // Without a licence, until one is held, only startTrial and the overrides work (DESIGN.md 18).
                String licence = text(request, "licence", false);
                if (licence != null) client = build(licence);
                return Map.of();
            case "startTrial":
                return startTrial(text(request, "email", false));
            case "setClock":
                clock.offsetMs = integer(request, "offsetMs");
                return Map.of();
            case "setFingerprint":
                fingerprint = text(request, "fingerprint", true);
                if (client != null) client = build(client.licence());
                return Map.of();
            case "fingerprint":
                return Map.of("fingerprint", Fingerprint.collect().value());
            case "verify":
                return verify(request.containsKey("licence") ? text(request, "licence", true) : client().licence());
            case "check":
                return check(client().check());
            case "release":
                return release(client().release());
            case "fetch":
                return Map.of("licence", client().fetch());
            case "clearCache":
                client().clearCache();
                return Map.of();
            case "activationRequest": {
                AirGapText made = client().createAirGapRequest();
                return Map.of("request", made.text(), "groups", made.groups());
            }
            case "activateAirGap":
                return Map.of("until", ISO.format(client().activateAirGapped(text(request, "response", true)).until()));
            case "deactivateAirGap":
                return Map.of("code", client().deactivateAirGapped().text());
            case "borrow":
                return check(client().borrow(instant(request, "until")));
            case "recordUsage":
                // Handed over as given (an integer), so the SDK itself refuses a bad meter or amount.
                return usage(client().recordUsage(text(request, "meter", true), request.containsKey("amount") ? integer(request, "amount") : 1));
            case "usage":
                return usage(client().usage());
            case "checkForUpdate":
                return checkForUpdate(request);
            case "download": {
                LicenceClient held = client();
                if (update == null) throw new BadRequest("NO_UPDATE", "no update is held: checkForUpdate found none");
                DownloadedFile file = held.download(update, text(request, "filename", true), Paths.get(text(request, "to", true)));
                Map<String, Object> result = new LinkedHashMap<>();
                result.put("path", file.path().toString());
                result.put("size", file.size());
                result.put("sha256", file.sha256());
                return result;
            }
            case "feedUrls": {
                FeedUrls urls = client().feedUrls();
                Map<String, Object> result = new LinkedHashMap<>();
                result.put("electron", urls.electron());
                result.put("tauri", urls.tauri());
                result.put("sparkle", urls.sparkle());
                result.put("json", urls.json());
                return result;
            }
            default:
                throw new BadRequest("unknown op \"" + op + "\"");
        }
    }

    private Map<String, Object> options() throws BadRequest {
        if (options == null) throw new BadRequest("configure first");
        return options;
    }

    private LicenceClient client() throws BadRequest {
        if (client == null) throw new BadRequest(options == null ? "configure first" : "no licence is held: configure one or start a trial");
        return client;
    }

    private LicenceClient build(String licence) throws LicensorException, BadRequest {
        return builder().licence(licence).build();
    }

    private Map<String, Object> startTrial(String email) throws LicensorException, BadRequest {
        options();
        TrialStart start = builder().startTrial(email);
        client = start.client();
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("licence", start.licence());
        result.put("lid", start.result().licence().claims().map(claims -> (Object) claims.lid()).orElse(null));
        result.put("created", start.created());
        result.put("endsAt", ISO.format(start.endsAt()));
        result.put("state", start.result().state().name());
        result.put("reasons", start.result().reasons().stream().map(Enum::name).toList());
        return result;
    }

    /** A builder of the configuration, without the licence. */
    private LicenceClient.Builder builder() throws BadRequest {
        LicenceClient.Builder builder = LicenceClient.builder()
            .baseUrl(text(options, "baseUrl", true))
            .slug(text(options, "slug", true))
            .checkId(text(options, "checkId", true))
            .checkToken(text(options, "checkToken", true))
            .productKey(text(options, "productKey", false))
            .publicKeys(keys().toArray(new String[0]))
            .clock(clock)
            .fingerprint(fingerprint);
        String stateDir = text(options, "stateDir", false);
        builder.store(stateDir == null ? StateStore.files() : StateStore.files(Paths.get(stateDir)));
        if (options.get("timeoutMs") != null) builder.timeout(Duration.ofMillis(integer(options, "timeoutMs")));
        return builder;
    }

    private List<String> keys() throws BadRequest {
        Object keys = options.get("publicKeys");
        if (!(keys instanceof List) || !((List<?>) keys).stream().allMatch(k -> k instanceof String)) throw new BadRequest("publicKeys must be a list of PEM strings");
        @SuppressWarnings("unchecked")
        List<String> list = (List<String>) keys;
        return list;
    }

    private Map<String, Object> verify(String licence) throws LicensorException, BadRequest {
        options();
        LicenceVerification verification = LicenceVerifier.builder()
            .publicKeys(keys().toArray(new String[0]))
            .productKey(text(options, "productKey", false))
            .organisation(text(options, "slug", false))
            .fingerprint(client != null ? client.fingerprint() : fingerprint)
            .clock(clock)
            .build()
            .verify(licence);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("valid", verification.valid());
        result.put("reasons", verification.reasons().stream().map(Enum::name).toList());
        result.put("claims", verification.claims().map(claims -> (Object) claims.asMap()).orElse(null));
        return result;
    }

    private static Map<String, Object> check(CheckResult check) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("state", check.state().name());
        result.put("reasons", check.reasons().stream().map(Enum::name).toList());
        result.put("fresh", check.fresh().orElse(null));
        result.put("clockRollback", check.clockRollback());
        result.put("ageSeconds", check.ageSeconds().isPresent() ? (Object) check.ageSeconds().getAsDouble() : null);
        result.put("noAnswer", noAnswer(check.noAnswer()));
        result.put("renewed", check.renewed());
        result.put("airGapped", check.airGapped());
        result.put("leaseEndsAt", check.leaseEndsAt().map(ISO::format).orElse(null));
        result.put("trial", check.trial().map(trial -> {
            Map<String, Object> block = new LinkedHashMap<>();
            block.put("endsAt", ISO.format(trial.endsAt()));
            block.put("secondsLeft", trial.secondsLeft());
            block.put("converted", trial.converted());
            return (Object) block;
        }).orElse(null));
        return result;
    }

    /** {@code {code, status?}}, or null. */
    private static Object noAnswer(Optional<NoAnswer> none) {
        return none.map(n -> {
            Map<String, Object> noAnswer = new LinkedHashMap<>();
            noAnswer.put("code", n.code().name());
            n.status().ifPresent(status -> noAnswer.put("status", (long) status));
            return (Object) noAnswer;
        }).orElse(null);
    }

    /** DESIGN.md 19's {licensed, reason, events, meters, fresh, pending, noAnswer}. */
    private static Map<String, Object> usage(UsageReport report) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("licensed", report.licensed().orElse(null));
        result.put("reason", report.reason().map(Enum::name).orElse(null));
        List<Object> events = new java.util.ArrayList<>();
        for (UsageReport.Event e : report.events()) {
            Map<String, Object> event = new LinkedHashMap<>();
            event.put("id", e.id());
            event.put("meter", e.meter());
            event.put("amount", e.amount());
            event.put("result", e.result());
            events.add(event);
        }
        result.put("events", events);
        result.put("meters", report.meters().map(meters -> {
            List<Object> list = new java.util.ArrayList<>();
            for (UsageReport.Balance m : meters) {
                Map<String, Object> meter = new LinkedHashMap<>();
                meter.put("key", m.key());
                meter.put("used", m.used());
                meter.put("limit", m.limit().orElse(null));
                meter.put("overage", m.overage().orElse(null));
                meter.put("remaining", m.remaining().orElse(null));
                meter.put("resetsAt", m.resetsAt().orElse(null));
                meter.put("pending", m.pending());
                list.add(meter);
            }
            return (Object) list;
        }).orElse(null));
        result.put("fresh", report.fresh().orElse(null));
        result.put("pending", (long) report.pending());
        result.put("noAnswer", noAnswer(report.noAnswer()));
        return result;
    }

    /** {update, blocked}, holding the update for download (none after a check that failed, or a new configure). */
    private Map<String, Object> checkForUpdate(Map<String, Object> request) throws LicensorException, BadRequest {
        LicenceClient held = client();
        update = null;
        // Handed over as given, so the SDK itself refuses a bad version, platform, arch or channel.
        UpdateCheck found = held.checkForUpdate(text(request, "currentVersion", false), text(request, "platform", false), text(request, "arch", false),
            text(request, "channel", false));
        update = found.update().orElse(null);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("update", update == null ? null : update.asMap());
        result.put("blocked", found.blocked().map(b -> {
            Map<String, Object> blocked = new LinkedHashMap<>();
            blocked.put("version", b.version());
            blocked.put("publishedAt", b.publishedAt());
            blocked.put("reason", b.reason());
            return (Object) blocked;
        }).orElse(null));
        return result;
    }

    private static Map<String, Object> release(ReleaseResult release) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("released", release.released());
        release.reason().ifPresent(reason -> result.put("reason", reason));
        return result;
    }

    private static String text(Map<String, Object> map, String name, boolean required) throws BadRequest {
        Object value = map.get(name);
        if (value == null && !required) return null;
        if (!(value instanceof String)) throw new BadRequest(name + " must be a string");
        return (String) value;
    }

    private static Instant instant(Map<String, Object> map, String name) throws BadRequest {
        try {
            return java.time.OffsetDateTime.parse(text(map, name, true)).toInstant();
        } catch (java.time.format.DateTimeParseException bad) {
            throw new BadRequest(name + " must be an ISO 8601 time");
        }
    }

    private static long integer(Map<String, Object> map, String name) throws BadRequest {
        Object value = map.get(name);
        if (!(value instanceof Long)) throw new BadRequest(name + " must be an integer");
        return (Long) value;
    }
}
