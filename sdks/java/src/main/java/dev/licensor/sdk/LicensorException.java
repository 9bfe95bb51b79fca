package dev.licensor.sdk;

import java.util.List;

/**
 * The SDK's one checked exception. {@link LicenceClient#check()} never throws it for what the
 * service answers (that is data in the {@link CheckResult}); it signals programming errors and
 * the failures of {@link LicenceClient#fetch()} and {@link LicenceClient#release()}.
 */
public final class LicensorException extends Exception {
    private static final long serialVersionUID = 1L;

    /** What went wrong, as a constant an application can switch on. */
    public enum Reason {
        /** A public key could not be read, or none was given. */
        INVALID_KEY,
        /** A client option is missing or malformed. */
        INVALID_OPTIONS,
        /** The licence is OFFLINE, so it has no check path: use {@link LicenceVerifier}. */
        NOT_CHECKABLE,
        /** The service did not answer in time. */
        TIMEOUT,
        /** The service could not be reached. */
        NETWORK,
        /** The service answered with something other than 200 ({@link #status()} says which). */
        HTTP_STATUS,
        /** A 200 whose body is not the documented JSON. */
        BAD_RESPONSE,
        /** A check answer whose receipt does not verify for this licence, nonce and machine. */
        BAD_RECEIPT,
        /** A licence (the one in use, or a fetched one) does not verify with the product's key(s). */
        BAD_LICENCE,
        /** A fetched licence verifies but is another licence than the one presented. */
        LID_MISMATCH,
        /** A fetched term is older ({@code iat}) than one this machine has already seen. */
        OLDER_TERM,
        /** An air-gapped activation response (or deactivation) that this installation cannot accept (DESIGN.md 14). */
        BAD_ACTIVATION,
        /** A trial start was refused: the product offers no trials now (DESIGN.md 18). */
        TRIALS_OFF,
        /** A trial start was refused: a machine like this one already had a trial ({@link #matched()} says what matched). */
        TRIAL_USED,
        /** {@link LicenceClient#recordUsage} found 1,000 events of this licence still waiting to be sent. */
        QUEUE_FULL,
        /** An update's manifest is not signed by the product's keys, or is not this product's release above the current version (DESIGN.md 20). */
        BAD_MANIFEST,
        /** A downloaded file's size or SHA-256 is not the manifest's; it was deleted. */
        DIGEST_MISMATCH
    }

    private final Reason reason;
    private final Integer status;
    private final List<String> matched;
    private final Integer retryAfterSeconds;
    private final String serviceReason;

    public LicensorException(Reason reason, String message) {
        this(reason, message, null);
    }

    public LicensorException(Reason reason, String message, Integer status) {
        this(reason, message, status, List.of(), null);
    }

    LicensorException(Reason reason, String message, Integer status, List<String> matched, Integer retryAfterSeconds) {
        this(reason, message, status, matched, retryAfterSeconds, null);
    }

    LicensorException(Reason reason, String message, Integer status, List<String> matched, Integer retryAfterSeconds, String serviceReason) {
        super(message);
        this.serviceReason = serviceReason;
        this.reason = reason;
        this.status = status;
        this.matched = List.copyOf(matched);
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /** For {@link Reason#TRIAL_USED}: the equal fingerprint components (machine, host, mac, cpu, disk order); else empty. */
    public List<String> matched() {
        return matched;
    }

    /** An HTTP 429's {@code Retry-After} in seconds (a trial limit, a usage rate), else null. */
    public Integer retryAfterSeconds() {
        return retryAfterSeconds;
    }

    /** For {@link Reason#HTTP_STATUS}: the service's reason when its answer named one (REVOKED, NO_SEAT, UPDATES_EXPIRED, …), else null. */
    public String serviceReason() {
        return serviceReason;
    }

    /** Why it was thrown. */
    public Reason reason() {
        return reason;
    }

    /** The HTTP status for {@link Reason#HTTP_STATUS}, else null. */
    public Integer status() {
        return status;
    }
}
