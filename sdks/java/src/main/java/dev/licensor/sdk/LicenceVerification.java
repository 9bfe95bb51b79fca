package dev.licensor.sdk;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The offline verdict on a licence string. When {@link #signed()} is false ({@code MALFORMED} or
 * {@code BAD_SIGNATURE}) there are no claims: nothing in the string can be trusted. Immutable.
 */
public final class LicenceVerification {
    /** Why a licence is refused offline. */
    public enum Refusal {
        /** Not exactly the wire form (strict base64url, a strict JSON object, claim types). */
        MALFORMED,
        /** No given key signed it. */
        BAD_SIGNATURE,
        /** Signed, but for another product ({@code prd}) or organisation ({@code org}) than the application's. */
        WRONG_PRODUCT,
        /** Before {@code nbf}. */
        NOT_YET_VALID,
        /** At or after {@code exp} + {@code grace} days. */
        EXPIRED,
        /** {@code fp} is signed in and this machine matches none of its fingerprints by {@code fpn}. */
        FINGERPRINT_MISMATCH
    }

    /** A term's calendar status (DESIGN.md 3); revocation is known only online. */
    public enum CalendarStatus { PENDING, ACTIVE, GRACE, EXPIRED }

    private final List<Refusal> reasons;
    private final String message;
    private final String payloadPart;
    private final LicenceClaims claims;
    private final CalendarStatus status;
    private final Boolean fingerprintMatch;

    LicenceVerification(List<Refusal> reasons, String message, String payloadPart, LicenceClaims claims, CalendarStatus status, Boolean fingerprintMatch) {
        this.reasons = List.copyOf(reasons);
        this.message = message;
        this.payloadPart = payloadPart;
        this.claims = claims;
        this.status = status;
        this.fingerprintMatch = fingerprintMatch;
    }

    static LicenceVerification refused(Refusal reason, String message) {
        return new LicenceVerification(List.of(reason), message, null, null, null, null);
    }

    /** True exactly when {@link #reasons()} is empty. */
    public boolean valid() {
        return reasons.isEmpty();
    }

    /** True when one of the keys signed the licence: the claims are trustworthy, whatever the verdict. */
    public boolean signed() {
        return claims != null;
    }

    /** Every refusal that applies, empty when valid. */
    public List<Refusal> reasons() {
        return reasons;
    }

    /** What is wrong with an unsigned string, for a log line; empty when signed. */
    public Optional<String> message() {
        return Optional.ofNullable(message);
    }

    /** The signed claims; empty when not {@link #signed()}. */
    public Optional<LicenceClaims> claims() {
        return Optional.ofNullable(claims);
    }

    /** The payload's base64url text: the identity of this term; empty when not signed. */
    Optional<String> payloadPart() {
        return Optional.ofNullable(payloadPart);
    }

    /** The term's calendar status at the moment judged; empty when not signed. */
    public Optional<CalendarStatus> status() {
        return Optional.ofNullable(status);
    }

    /** {@code nbf} as an instant. */
    public Optional<Instant> startsAt() {
        return claims().flatMap(c -> c.notBefore().isPresent() ? Optional.of(Instant.ofEpochSecond(c.notBefore().getAsLong())) : Optional.empty());
    }

    /** {@code exp} as an instant; empty for a perpetual licence. */
    public Optional<Instant> expiresAt() {
        return claims().flatMap(c -> c.expiresAt().isPresent() ? Optional.of(Instant.ofEpochSecond(c.expiresAt().getAsLong())) : Optional.empty());
    }

    /** {@code exp + grace × 86,400 s} exactly; empty for a perpetual licence. */
    public Optional<Instant> graceEndsAt() {
        return claims().flatMap(c -> c.expiresAt().isPresent()
            ? Optional.of(Instant.ofEpochSecond(LicenceVerifier.graceEndsAt(c.expiresAt().getAsLong(), c.graceDays())))
            : Optional.empty());
    }

    /** Whether this machine matches a signed {@code fp}; empty when none is signed in (or not signed). */
    public Optional<Boolean> fingerprintMatch() {
        return Optional.ofNullable(fingerprintMatch);
    }

    @Override
    public String toString() {
        return "LicenceVerification{valid=" + valid() + ", reasons=" + reasons + (claims == null ? "" : ", lid=" + claims.lid()) + "}";
    }
}
