package dev.licensor.sdk;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** The check API's calls ({@code /o/{slug}/api/public/license/{checkId}/…}) with the check token and a timeout. */
final class CheckApi {
    private final String url;
    private final String checkToken;
    private final Duration timeout;
    private final HttpClient http;
    /** How many redirects a download follows at most. */
    private static final int MAX_REDIRECTS = 5;

    CheckApi(String url, String checkToken, Duration timeout, HttpClient http) {
        this.url = url;
        this.checkToken = checkToken;
        this.timeout = timeout;
        this.http = http;
    }

    /** Bounds each request, and a download between chunks. */
    Duration timeout() {
        return timeout;
    }

    /** A 200 (or a trial's 201) answer: its status and object. */
    record Answer(int status, Map<String, Object> body) {}

    /** POSTs JSON and returns the 200 answer's object; everything else is a LicensorException. */
    Map<String, Object> post(String endpoint, Map<String, Object> body) throws LicensorException {
        return send(endpoint, body).body();
    }

    /**
     * {@link #post} with the status; {@code trial} (DESIGN.md 18) also takes a 201, and its
     * refusals are their own codes: TRIALS_OFF, TRIAL_USED with {@code matched}, else HTTP_STATUS
     * (a 429 with {@code retryAfterSeconds}).
     */
    Answer send(String endpoint, Map<String, Object> body) throws LicensorException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url + "/" + endpoint))
            .timeout(timeout)
            .header("Authorization", "Bearer " + checkToken)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(Json.write(body), StandardCharsets.UTF_8))
            .build();
        // Bounded as a whole, so that a body trickling in slowly times out too.
        HttpResponse<String> response = await(http.sendAsync(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8)), timeout.toMillis());
        boolean trial = "trial".equals(endpoint);
        if (response.statusCode() != 200 && !(trial && response.statusCode() == 201)) {
            if (trial) throw trialRefusal(response);
            throw refusal(response.statusCode(), response.body(), response);
        }
        return new Answer(response.statusCode(), object(response.body()));
    }

    /** GETs a feed's JSON (a path token in the URL: no credential header) and returns the 200 answer's object. */
    Map<String, Object> get(String address) throws LicensorException {
        HttpRequest request = HttpRequest.newBuilder(uri(address)).timeout(timeout).header("Accept", "application/json").GET().build();
        HttpResponse<String> response = await(http.sendAsync(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8)), timeout.toMillis());
        if (response.statusCode() != 200) throw refusal(response.statusCode(), response.body(), response);
        return object(response.body());
    }

    /**
     * GETs a file for streaming, following up to 5 redirects: the timeout bounds waiting for each
     * answer to begin, the bytes take as long as they take. A status other than 200 in the end is HTTP_STATUS.
     */
    java.io.InputStream open(String address) throws LicensorException {
        URI location = uri(address);
        HttpResponse<java.io.InputStream> response;
        // Followed here, whatever the HttpClient does: on S3 the file's URL answers 303 to a presigned URL of the store.
        for (int redirects = 0; ; redirects++) {
            HttpRequest request = HttpRequest.newBuilder(location).timeout(timeout).GET().build();
            response = await(http.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream()), Long.MAX_VALUE);
            java.util.Optional<String> next = response.headers().firstValue("location");
            if (!List.of(301, 302, 303, 307, 308).contains(response.statusCode()) || next.isEmpty()) break;
            try {
                response.body().close();
            } catch (java.io.IOException unread) {
                // Its body was never wanted.
            }
            if (redirects == MAX_REDIRECTS) throw new LicensorException(LicensorException.Reason.NETWORK, "more than " + MAX_REDIRECTS + " redirects");
            try {
                location = location.resolve(next.get());
            } catch (IllegalArgumentException unusable) {
                throw new LicensorException(LicensorException.Reason.NETWORK, "the redirect cannot be followed: " + unusable.getMessage());
            }
        }
        if (response.statusCode() == 200) return response.body();
        String text;
        try (java.io.InputStream body = response.body()) {
            text = new String(body.readNBytes(1 << 20), StandardCharsets.UTF_8);
        } catch (java.io.IOException cut) {
            text = "";
        }
        throw refusal(response.statusCode(), text, response);
    }

    private static URI uri(String address) throws LicensorException {
        try {
            return URI.create(address);
        } catch (IllegalArgumentException bad) {
            throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "not a URL: " + address);
        }
    }

    private <T> HttpResponse<T> await(CompletableFuture<HttpResponse<T>> pending, long waitMs) throws LicensorException {
        try {
            return pending.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException slow) {
            pending.cancel(true);
            throw new LicensorException(LicensorException.Reason.TIMEOUT, "no answer within " + timeout.toMillis() + " ms");
        } catch (ExecutionException failed) {
            Throwable cause = failed.getCause();
            if (cause instanceof HttpTimeoutException) throw new LicensorException(LicensorException.Reason.TIMEOUT, "no answer within " + timeout.toMillis() + " ms");
            throw new LicensorException(LicensorException.Reason.NETWORK, "the service cannot be reached: " + cause);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            pending.cancel(true);
            throw new LicensorException(LicensorException.Reason.NETWORK, "interrupted while waiting for the service");
        }
    }

    private static Map<String, Object> object(String text) throws LicensorException {
        try {
            return Json.parseObject(text);
        } catch (Json.JsonException notJson) {
            throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the answer is not a JSON object: " + notJson.getMessage());
        }
    }

    /** A refusal: HTTP_STATUS with the body's error and reason when it has them (a 429 with its Retry-After). */
    private static LicensorException refusal(int status, String text, HttpResponse<?> response) {
        Map<String, Object> body;
        try {
            body = Json.parseObject(text);
        } catch (Json.JsonException | RuntimeException notJson) {
            body = Map.of();
        }
        String message = body.get("error") instanceof String error ? error : "the service answered " + status;
        String reason = body.get("reason") instanceof String r ? r : null;
        return new LicensorException(LicensorException.Reason.HTTP_STATUS, message, status, List.of(), retryAfterSeconds(response), reason);
    }

    private static LicensorException trialRefusal(HttpResponse<String> response) {
        int status = response.statusCode();
        Map<String, Object> body;
        try {
            body = Json.parseObject(response.body());
        } catch (Json.JsonException | RuntimeException notJson) {
            body = Map.of();
        }
        String message = body.get("error") instanceof String ? (String) body.get("error") : "the service answered " + status;
        Object reason = body.get("reason");
        if (status == 403 && "TRIAL_USED".equals(reason)) {
            List<String> matched = new ArrayList<>();
            if (body.get("matched") instanceof List) {
                for (Object name : (List<?>) body.get("matched")) if (name instanceof String) matched.add((String) name);
            }
            return new LicensorException(LicensorException.Reason.TRIAL_USED, message, null, matched, null);
        }
        if (status == 403 && "TRIALS_OFF".equals(reason)) return new LicensorException(LicensorException.Reason.TRIALS_OFF, message);
        return new LicensorException(LicensorException.Reason.HTTP_STATUS, message, status, List.of(), retryAfterSeconds(response), reason instanceof String r ? r : null);
    }

    /** A 429's Retry-After (a trial limit, a usage rate): whole seconds only; an absent or other header says nothing. */
    private static Integer retryAfterSeconds(HttpResponse<?> response) {
        String header = response.headers().firstValue("retry-after").orElse("").trim();
        return response.statusCode() == 429 && header.matches("[0-9]{1,9}") ? Integer.valueOf(header) : null;
    }
}
