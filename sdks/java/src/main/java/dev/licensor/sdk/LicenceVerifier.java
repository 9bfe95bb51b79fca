package dev.licensor.sdk;

import java.nio.charset.StandardCharsets;
import java.security.PublicKey;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Verifies licence strings offline with a product's public key or key history: the form, the
 * signature, the calendar ({@code nbf}, {@code exp} plus exact grace), the machine ({@code fp}
 * by {@code fpn}) and, when configured, the product and organisation. Never touches the network.
 * Immutable and thread-safe; build one with {@link #builder()}.
 *
 * <pre>{@code
 * LicenceVerifier verifier = LicenceVerifier.builder().publicKeys(currentPem, previousPem).productKey("acme-cad").build();
 * LicenceVerification result = verifier.verify(licenceString);
 * }</pre>
 */
public final class LicenceVerifier {
    /** The service's default fingerprintNeed, used when a licence signs {@code fp} without {@code fpn}. */
    private static final int DEFAULT_FINGERPRINT_NEED = 3;
    private static final long DAY_SECONDS = 86_400;

    private final PublicKeys keys;
    private final String productKey;
    private final String organisation;
    private final String fingerprint;
    private final String stableId;
    private final Clock clock;

    private LicenceVerifier(Builder builder) throws LicensorException {
        this.keys = PublicKeys.read(builder.keys);
        this.productKey = builder.productKey;
        this.organisation = builder.organisation;
        this.fingerprint = builder.fingerprint;
        this.stableId = builder.stableId;
        this.clock = builder.clock;
    }

    /** A new builder; {@link Builder#publicKeys} is required. */
    public static Builder builder() {
        return new Builder();
    }

    /** Options of a {@link LicenceVerifier}. */
    public static final class Builder {
        private final List<Object> keys = new ArrayList<>();
        private String productKey;
        private String organisation;
        private String fingerprint;
        private String stableId;
        private Clock clock = Clock.systemUTC();

        private Builder() {}

        /** The product's public key(s) as SPKI PEM text, current first; any of them may have signed. */
        public Builder publicKeys(String... pems) {
            keys.addAll(Arrays.asList(pems));
            return this;
        }

        /** The product's public key(s) as JDK keys. */
        public Builder publicKeys(PublicKey... publicKeys) {
            keys.addAll(Arrays.asList(publicKeys));
            return this;
        }

        Builder publicKeys(List<Object> given) {
            keys.addAll(given);
            return this;
        }

        /** The product key this application is (the {@code prd} claim); a licence for another is {@code WRONG_PRODUCT}. */
        public Builder productKey(String productKey) {
            this.productKey = productKey;
            return this;
        }

        /** The organisation slug that issues this application's licences (the {@code org} claim). */
        public Builder organisation(String slug) {
            this.organisation = slug;
            return this;
        }

        /** This machine's fingerprint, when the application collected it itself (else collected when a licence signs one in). */
        public Builder fingerprint(String fingerprint) {
            this.fingerprint = fingerprint;
            return this;
        }

        /** Replaces the operating system's machine id when the fingerprint is collected (containers, cloned VMs). */
        public Builder stableId(String stableId) {
            this.stableId = stableId;
            return this;
        }

        /** The clock the calendar is judged by (default the system clock). */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        /** @throws LicensorException {@code INVALID_KEY} when a key cannot be read or none was given */
        public LicenceVerifier build() throws LicensorException {
            return new LicenceVerifier(this);
        }
    }

    PublicKeys keys() {
        return keys;
    }

    /** Verifies at the clock's current time. */
    public LicenceVerification verify(String licence) {
        return verify(licence, clock.instant());
    }

    /** Verifies with the calendar judged at {@code now}. */
    public LicenceVerification verify(String licence, Instant now) {
        return verify(licence, now, fingerprint);
    }

    LicenceVerification verify(String licence, Instant now, String machineFingerprint) {
        Parsed parsed;
        try {
            parsed = parse(licence);
        } catch (LicenceClaims.Malformed malformed) {
            return LicenceVerification.refused(LicenceVerification.Refusal.MALFORMED, malformed.getMessage());
        }
        if (!keys.verify(parsed.payloadPart.getBytes(StandardCharsets.ISO_8859_1), parsed.signature)) {
            return LicenceVerification.refused(LicenceVerification.Refusal.BAD_SIGNATURE, "licence signature does not verify");
        }
        LicenceClaims claims = parsed.claims;
        LicenceVerification.CalendarStatus status = calendarStatus(claims, Math.floorDiv(now.toEpochMilli(), 1000));
        List<LicenceVerification.Refusal> reasons = new ArrayList<>();
        if ((productKey != null && !productKey.equals(claims.product())) || (organisation != null && !organisation.equals(claims.organisation()))) {
            reasons.add(LicenceVerification.Refusal.WRONG_PRODUCT);
        }
        if (status == LicenceVerification.CalendarStatus.PENDING) reasons.add(LicenceVerification.Refusal.NOT_YET_VALID);
        if (status == LicenceVerification.CalendarStatus.EXPIRED) reasons.add(LicenceVerification.Refusal.EXPIRED);
        Boolean fingerprintMatch = null;
        if (!claims.fingerprints().isEmpty()) {
            Fingerprint mine = mine(machineFingerprint);
            int need = (int) claims.fingerprintNeed().orElse(DEFAULT_FINGERPRINT_NEED);
            fingerprintMatch = mine != null && claims.fingerprints().stream().anyMatch(signed -> matches(signed, mine, need));
            if (!fingerprintMatch) reasons.add(LicenceVerification.Refusal.FINGERPRINT_MISMATCH);
        }
        return new LicenceVerification(reasons, null, parsed.payloadPart, claims, status, fingerprintMatch);
    }

    /** The given fingerprint, else this machine's; a given one that is not a fingerprint matches nothing. */
    private Fingerprint mine(String given) {
        if (given == null) return Fingerprint.collect(stableId);
        try {
            return Fingerprint.parse(given);
        } catch (Fingerprint.MalformedFingerprintException malformed) {
            return null;
        }
    }

    private static boolean matches(String signed, Fingerprint mine, int need) {
        try {
            return Fingerprint.parse(signed).matches(mine, need);
        } catch (Fingerprint.MalformedFingerprintException malformed) {
            // A signed-in fingerprint the service should never have accepted matches nothing.
            return false;
        }
    }

    /** The calendar status of a term at {@code nowSeconds} (DESIGN.md 3). */
    static LicenceVerification.CalendarStatus calendarStatus(LicenceClaims claims, long nowSeconds) {
        if (claims.notBefore().isPresent() && nowSeconds < claims.notBefore().getAsLong()) return LicenceVerification.CalendarStatus.PENDING;
        if (claims.expiresAt().isEmpty()) return LicenceVerification.CalendarStatus.ACTIVE;
        long exp = claims.expiresAt().getAsLong();
        if (nowSeconds < exp) return LicenceVerification.CalendarStatus.ACTIVE;
        if (nowSeconds < graceEndsAt(exp, claims.graceDays())) return LicenceVerification.CalendarStatus.GRACE;
        return LicenceVerification.CalendarStatus.EXPIRED;
    }

    static long graceEndsAt(long exp, long graceDays) {
        return exp + graceDays * DAY_SECONDS;
    }

    /** A licence string taken apart, its signature not yet checked. */
    static final class Parsed {
        final String payloadPart;
        final LicenceClaims claims;
        final byte[] signature;

        private Parsed(String payloadPart, LicenceClaims claims, byte[] signature) {
            this.payloadPart = payloadPart;
            this.claims = claims;
            this.signature = signature;
        }
    }

    /** Strict structural parse: {@code B64U(payload) + "." + B64U(signature)}. */
    static Parsed parse(String licence) throws LicenceClaims.Malformed {
        if (licence == null) throw new LicenceClaims.Malformed("licence is not a string");
        int dot = licence.indexOf('.');
        if (dot < 0 || licence.indexOf('.', dot + 1) >= 0) throw new LicenceClaims.Malformed("licence must have exactly two parts separated by \".\"");
        byte[] signature = Base64Url.decode(licence.substring(dot + 1));
        if (signature == null) throw new LicenceClaims.Malformed("licence signature is not canonical unpadded base64url");
        String payloadPart = licence.substring(0, dot);
        return new Parsed(payloadPart, LicenceClaims.decode(payloadPart), signature);
    }
}
