package dev.licensor.sdk;

import java.util.Optional;

/**
 * Why a check got no verified answer: a timeout, a network error, any status but 200, a body that
 * is not the documented JSON, or a receipt that does not verify. Never a verdict.
 *
 * @param code {@code TIMEOUT}, {@code NETWORK}, {@code HTTP_STATUS}, {@code BAD_RESPONSE} or {@code BAD_RECEIPT}
 * @param status the HTTP status for {@code HTTP_STATUS}
 * @param message what happened, for a log line
 */
public record NoAnswer(LicensorException.Reason code, Optional<Integer> status, String message) {}
