package dev.licensor.sdk;

import java.nio.charset.StandardCharsets;

/**
 * The signed fields of a check answer (DESIGN.md 2 and 13): {@code SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest}
 * for a {@code v} 3 or 4 term, {@code SVCR2…␟leaseEndsAt} for a floating ({@code v} 5) one; absent fields are
 * empty strings, ␟ is 0x1F. Immutable.
 */
record Receipt(String tag, String lid, String status, String nonce, String checkedAt, String boundAt, String fpDigest, String leaseEndsAt) {
    static final String NODE_LOCKED = "SVCR1";
    static final String FLOATING = "SVCR2";
    private static final char SEPARATOR = '\u001f';

    /** The tag a term's receipts carry: it follows the presented term alone. */
    static String tagFor(LicenceClaims claims) {
        return claims.version() == 5 ? FLOATING : NODE_LOCKED;
    }

    /**
     * The UTF-8 message, or null when a field holds the separator (two field sets would then sign
     * alike) or an SVCR1 receipt would carry a lease end it cannot vouch for.
     */
    byte[] message() {
        if (NODE_LOCKED.equals(tag) && !leaseEndsAt.isEmpty()) return null;
        String[] fields = FLOATING.equals(tag)
            ? new String[] {lid, status, nonce, checkedAt, boundAt, fpDigest, leaseEndsAt}
            : new String[] {lid, status, nonce, checkedAt, boundAt, fpDigest};
        StringBuilder text = new StringBuilder(tag);
        for (String field : fields) {
            if (field.indexOf(SEPARATOR) >= 0) return null;
            text.append(SEPARATOR).append(field);
        }
        return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** True when one of the keys signed exactly these fields; false for anything malformed. */
    boolean verify(String receipt, PublicKeys keys) {
        if (!NODE_LOCKED.equals(tag) && !FLOATING.equals(tag)) return false;
        byte[] message = message();
        byte[] signature = Base64Url.decode(receipt);
        return message != null && signature != null && keys.verify(message, signature);
    }

    /**
     * Licensed on this machine by the signed fields alone: status ACTIVE or GRACE and a seat bound;
     * under SVCR2 a lease end signed too (the lease counts only until then: the client judges that).
     */
    boolean grants() {
        return (status.equals("ACTIVE") || status.equals("GRACE")) && !boundAt.isEmpty() && (NODE_LOCKED.equals(tag) || !leaseEndsAt.isEmpty());
    }
}
