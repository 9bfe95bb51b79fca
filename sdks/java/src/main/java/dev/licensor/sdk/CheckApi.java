package dev.licensor.sdk;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
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

    CheckApi(String url, String checkToken, Duration timeout, HttpClient http) {
        this.url = url;
        this.checkToken = checkToken;
        this.timeout = timeout;
        this.http = http;
    }

    /** POSTs JSON and returns the 200 answer's object; everything else is a LicensorException. */
    Map<String, Object> post(String endpoint, Map<String, Object> body) throws LicensorException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url + "/" + endpoint))
            .timeout(timeout)
            .header("Authorization", "Bearer " + checkToken)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(Json.write(body), StandardCharsets.UTF_8))
            .build();
        HttpResponse<String> response;
        CompletableFuture<HttpResponse<String>> pending = http.sendAsync(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        try {
            // Bounded as a whole, so that a body trickling in slowly times out too.
            response = pending.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
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
        if (response.statusCode() != 200) {
            LicensorException refused = new LicensorException(LicensorException.Reason.HTTP_STATUS, "the service answered " + response.statusCode(), response.statusCode());
            String retryAfter = response.headers().firstValue("Retry-After").orElse("").trim();
            if (response.statusCode() == 429 && retryAfter.matches("[0-9]{1,9}")) refused.retryAfter(Long.parseLong(retryAfter));
            throw refused;
        }
        try {
            return Json.parseObject(response.body());
        } catch (Json.JsonException notJson) {
            throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the answer is not a JSON object: " + notJson.getMessage());
        }
    }
}
