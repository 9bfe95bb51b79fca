package dev.licensor.sdk;

import java.nio.charset.StandardCharsets;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

/**
 * The claims of a licence payload (DESIGN.md 2), in signed order: the issuer's claims, then the
 * product's parameters. Immutable; only a {@link LicenceVerification} whose signature verified hands them out.
 */
public final class LicenceClaims {
    /** The issuer's claim names, in wire order; a product parameter never uses one of them. */
    public static final List<String> ISSUER_CLAIMS = List.of(
        "v", "lid", "prd", "org", "typ", "act", "lic", "iat", "nbf", "exp", "grace", "fp", "fpn", "mm", "chk", "max");
    /** Claims a floating licence ({@code v} 5) adds after {@code max} (DESIGN.md 13). */
    private static final Set<String> FLOATING_CLAIMS = Set.of("lse", "brw");

    private final Map<String, Object> all;

    private LicenceClaims(Map<String, Object> all) {
        this.all = all;
    }

    /** The payload part's claims, or a {@link Malformed} naming the first problem. */
    static LicenceClaims decode(String payloadPart) throws Malformed {
        byte[] bytes = Base64Url.decode(payloadPart);
        if (bytes == null) throw new Malformed("licence payload is not canonical unpadded base64url");
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException notUtf8) {
            throw new Malformed("licence payload is not UTF-8 JSON");
        }
        Map<String, Object> claims;
        try {
            claims = Json.parseObject(text);
        } catch (Json.JsonException notJson) {
            throw new Malformed("licence payload is not a strict JSON object: " + notJson.getMessage());
        }
        if (!integersOnly(claims)) throw new Malformed("licence payload holds a number that is not an integer within ±(2^53 - 1)");
        String problem = problem(claims);
        if (problem != null) throw new Malformed("licence " + problem);
        return new LicenceClaims(claims);
    }

    /** Raised for a payload that is not exactly the wire form. */
    static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    /** DESIGN.md 16: a payload's numbers are integer literals, claims and parameters alike. */
    private static boolean integersOnly(Object value) {
        if (value instanceof Double) return false;
        if (value instanceof Map) return ((Map<?, ?>) value).values().stream().allMatch(LicenceClaims::integersOnly);
        if (value instanceof List) return ((List<?>) value).stream().allMatch(LicenceClaims::integersOnly);
        return true;
    }

    private static boolean isInt(Object value) {
        return value instanceof Long;
    }

    private static boolean isText(Object value) {
        return value instanceof String && !((String) value).isEmpty();
    }

    private static boolean atLeast(Object value, long min) {
        return value instanceof Long && (Long) value >= min;
    }

    /** Describes the first claim that is missing or of the wrong type, or null when all are right. */
    private static String problem(Map<String, Object> c) {
        Object v = c.get("v");
        boolean floating = Long.valueOf(5).equals(v);
        boolean fpIsList = c.get("fp") instanceof List;
        if (!Long.valueOf(3).equals(v) && !Long.valueOf(4).equals(v) && !floating) return "claim \"v\" must be 3, 4 or 5";
        if (!isText(c.get("lid"))) return "claim \"lid\" must be a non-empty string";
        if (!isText(c.get("prd"))) return "claim \"prd\" must be a non-empty string";
        if (!isText(c.get("org"))) return "claim \"org\" must be a non-empty string";
        Object typ = c.get("typ");
        if (c.containsKey("typ") && !"OFFLINE".equals(typ) && !"ONLINE".equals(typ) && !"HYBRID".equals(typ)) return "claim \"typ\" must be OFFLINE, ONLINE or HYBRID";
        Object act = c.get("act");
        if (c.containsKey("act") && !"ONLINE".equals(act) && !"OFFLINE".equals(act)) return "claim \"act\" must be ONLINE or OFFLINE";
        if (c.containsKey("lic") && !(c.get("lic") instanceof String)) return "claim \"lic\" must be a string";
        if (!isInt(c.get("iat"))) return "claim \"iat\" must be an integer";
        if (c.containsKey("nbf") && !isInt(c.get("nbf"))) return "claim \"nbf\" must be an integer";
        if (c.containsKey("exp") && !isInt(c.get("exp"))) return "claim \"exp\" must be an integer";
        if (!atLeast(c.get("grace"), 0)) return "claim \"grace\" must be an integer of at least 0";
        if (c.containsKey("fp")) {
            Object fp = c.get("fp");
            boolean ok = fpIsList ? ((List<?>) fp).size() > 1 && ((List<?>) fp).stream().allMatch(LicenceClaims::isText) : isText(fp);
            if (!ok) return "claim \"fp\" must be a fingerprint or a list of several fingerprints";
        }
        // A verifier that predates multi-machine binding must refuse a list, hence the version.
        if (Long.valueOf(4).equals(v) != fpIsList && !floating) return "claim \"v\" must be 4 exactly when \"fp\" is a list";
        if (c.containsKey("fpn") && !(atLeast(c.get("fpn"), 1) && (Long) c.get("fpn") <= 5)) return "claim \"fpn\" must be an integer from 1 to 5";
        if (!atLeast(c.get("mm"), 1)) return "claim \"mm\" must be an integer of at least 1";
        if (c.containsKey("chk") && !atLeast(c.get("chk"), 0)) return "claim \"chk\" must be an integer of at least 0";
        if (c.containsKey("max") && !atLeast(c.get("max"), 0)) return "claim \"max\" must be an integer of at least 0";
        if (floating) {
            // DESIGN.md 13: a lease of 60 to 3,600 s, a borrow of at most 30 days, ONLINE only, no at-issue fingerprints.
            Object lse = c.get("lse");
            if (!(atLeast(lse, 60) && (Long) lse <= 3600)) return "claim \"lse\" must be an integer from 60 to 3600 when \"v\" is 5";
            if (c.containsKey("brw") && !(atLeast(c.get("brw"), 1) && (Long) c.get("brw") <= 2_592_000)) return "claim \"brw\" must be an integer from 1 to 2592000";
            if (!"ONLINE".equals(typ)) return "claim \"typ\" must be ONLINE when \"v\" is 5";
            if (c.containsKey("fp")) return "claim \"fp\" is not allowed when \"v\" is 5";
        }
        return null;
    }

    private Optional<String> text(String name) {
        return Optional.ofNullable((String) all.get(name));
    }

    private OptionalLong integer(String name) {
        Object value = all.get(name);
        return value == null ? OptionalLong.empty() : OptionalLong.of((Long) value);
    }

    /** {@code v}: 3, 4 (several fingerprints) or 5 (floating). */
    public int version() {
        return ((Long) all.get("v")).intValue();
    }

    /** {@code lid}: the licence id. */
    public String lid() {
        return (String) all.get("lid");
    }

    /** {@code prd}: the product key. */
    public String product() {
        return (String) all.get("prd");
    }

    /** {@code org}: the organisation's slug. */
    public String organisation() {
        return (String) all.get("org");
    }

    /** {@code typ}: OFFLINE, ONLINE or HYBRID. */
    public Optional<String> type() {
        return text("typ");
    }

    /** {@code act}: how a HYBRID licence was activated (ONLINE or OFFLINE). */
    public Optional<String> activation() {
        return text("act");
    }

    /** {@code lic}: the licensee's name. */
    public Optional<String> licensee() {
        return text("lic");
    }

    /** {@code iat}: when this term was issued (Unix seconds). */
    public long issuedAt() {
        return (Long) all.get("iat");
    }

    /** {@code nbf}: not valid before (Unix seconds). */
    public OptionalLong notBefore() {
        return integer("nbf");
    }

    /** {@code exp}: expiry (Unix seconds); empty for a perpetual licence. */
    public OptionalLong expiresAt() {
        return integer("exp");
    }

    /** {@code grace}: days of grace after {@code exp}. */
    public long graceDays() {
        return (Long) all.get("grace");
    }

    /** {@code fp}: the fingerprints signed in (empty list when none). */
    public List<String> fingerprints() {
        Object fp = all.get("fp");
        if (fp == null) return List.of();
        if (fp instanceof String) return List.of((String) fp);
        @SuppressWarnings("unchecked")
        List<String> list = (List<String>) fp;
        return list;
    }

    /** {@code fpn}: how many fingerprint components must agree (3 when absent). */
    public OptionalLong fingerprintNeed() {
        return integer("fpn");
    }

    /** {@code mm}: the most machines the licence may run on at once. */
    public long maxMachines() {
        return (Long) all.get("mm");
    }

    /** {@code chk}: how often the application should check (seconds). */
    public OptionalLong checkEverySeconds() {
        return integer("chk");
    }

    /** {@code max}: how long a verified answer stays good offline (seconds). */
    public OptionalLong checkMaxSeconds() {
        return integer("max");
    }

    /** {@code lse}: a floating licence's lease length (seconds). */
    public OptionalLong leaseSeconds() {
        return version() == 5 ? integer("lse") : OptionalLong.empty();
    }

    /** {@code brw}: how far ahead a floating licence may be borrowed (seconds). */
    public OptionalLong maxBorrowSeconds() {
        return version() == 5 ? integer("brw") : OptionalLong.empty();
    }

    /**
     * Whether the licence is a trial: its {@code trl} claim is the boolean true, with an end
     * (DESIGN.md 18). For a product whose parameter kept the name {@code trl}, it means nothing.
     */
    public boolean trial() {
        return Boolean.TRUE.equals(all.get("trl")) && expiresAt().isPresent();
    }

    /**
     * A signed meter ({@code mtr}, DESIGN.md 19): {@code period} NONE, DAY, MONTH or YEAR; {@code limit}
     * empty is unlimited, {@code overage} empty no ceiling.
     */
    public record Meter(String key, String period, Optional<Long> limit, Optional<Long> overage) {}

    /** {@code mtr}: the licence's meters in signed order; none when absent or not of that form. */
    public List<Meter> meters() {
        if (!(all.get("mtr") instanceof List)) return List.of();
        List<Meter> meters = new java.util.ArrayList<>();
        for (Object item : (List<?>) all.get("mtr")) {
            if (!(item instanceof Map) || ((Map<?, ?>) item).size() != 4) return List.of();
            Map<?, ?> m = (Map<?, ?>) item;
            Object k = m.get("k"), p = m.get("p"), l = m.get("l"), o = m.get("o");
            boolean counts = m.containsKey("l") && m.containsKey("o") && (l == null || l instanceof Long && (Long) l >= 0) && (o == null || o instanceof Long && (Long) o >= 0);
            if (!(k instanceof String) || !List.of("NONE", "DAY", "MONTH", "YEAR").contains(p) || !counts) return List.of();
            meters.add(new Meter((String) k, (String) p, Optional.ofNullable((Long) l), Optional.ofNullable((Long) o)));
        }
        return List.copyOf(meters);
    }

    /**
     * {@code upd}: the end of the update window (Unix seconds, DESIGN.md 20); empty without one. It is
     * the claim exactly when it is a whole number of seconds: a product's parameter that kept the name
     * {@code upd} otherwise stays one of {@link #params()}.
     */
    public OptionalLong updates() {
        return isUpdatesClaim(all.get("upd")) ? OptionalLong.of((Long) all.get("upd")) : OptionalLong.empty();
    }

    /** The end of the update window (DESIGN.md 20): {@code upd}, else the grace end, else empty (every release). */
    public Optional<java.time.Instant> updatesUntil() {
        if (updates().isPresent()) return Optional.of(java.time.Instant.ofEpochSecond(updates().getAsLong()));
        if (expiresAt().isEmpty()) return Optional.empty();
        return Optional.of(java.time.Instant.ofEpochSecond(expiresAt().getAsLong() + graceDays() * 86_400L));
    }

    private static boolean isUpdatesClaim(Object value) {
        return value instanceof Long n && n >= 0;
    }

    /** The product's parameters in signed order (strings, {@link Long}s, booleans, lists of strings). */
    public Map<String, Object> params() {
        Map<String, Object> params = new LinkedHashMap<>();
        boolean floating = version() == 5;
        // A trial's trl is its claim (DESIGN.md 18); a product whose parameter kept the name has no trials.
        boolean trial = Boolean.TRUE.equals(all.get("trl"));
        for (Map.Entry<String, Object> entry : all.entrySet()) {
            String key = entry.getKey();
            boolean meters = "mtr".equals(key) && isMeterClaim(entry.getValue());
            boolean updates = "upd".equals(key) && isUpdatesClaim(entry.getValue());
            if (!ISSUER_CLAIMS.contains(key) && !(floating && FLOATING_CLAIMS.contains(key)) && !(trial && key.equals("trl")) && !meters && !updates) params.put(key, entry.getValue());
        }
        return Collections.unmodifiableMap(params);
    }

    /**
     * {@code mtr} is the meters claim (DESIGN.md 19) exactly when it is a non-empty list of objects,
     * which no parameter's value is; a product's parameter that kept the name stays a parameter.
     */
    private static boolean isMeterClaim(Object value) {
        return value instanceof List<?> list && !list.isEmpty() && list.stream().allMatch(item -> item instanceof Map);
    }

    /** Every claim in signed order, as parsed from the payload. */
    public Map<String, Object> asMap() {
        return all;
    }

    @Override
    public String toString() {
        return Json.write(all);
    }
}
