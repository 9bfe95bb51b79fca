package dev.licensor.sdk;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A machine fingerprint {@code SVC1.<body>.<checksum>} (DESIGN.md 2): five components (machine
 * id, host name, primary MAC, CPU model, system disk id), each the first 16 hex characters of
 * SHA-256 over the raw value, or {@code -} when it could not be read. Raw values never leave
 * {@link #collect()}. Immutable.
 */
public final class Fingerprint {
    /** The five components, in the order the body lists them. */
    public static final List<String> COMPONENTS = List.of("machine", "host", "mac", "cpu", "disk");
    /** The value of a component that could not be read. */
    public static final String MISSING = "-";

    private static final String PREFIX = "SVC1";
    private static final int MAX_LENGTH = 256;
    private static final Pattern PART = Pattern.compile("[0-9a-f]{16}|-");
    private static final Pattern CHECKSUM = Pattern.compile("[0-9a-f]{8}");

    private final String value;
    private final Map<String, String> parts;

    private Fingerprint(String value, Map<String, String> parts) {
        this.value = value;
        this.parts = Collections.unmodifiableMap(parts);
    }

    /** This machine's fingerprint as the SDK collects it (see the README for each system's sources). */
    public static Fingerprint collect() {
        return collect(null);
    }

    /**
     * This machine's fingerprint, with {@code stableId} (when not null or empty) in place of the
     * operating system's machine id: for containers and cloned VMs, which share or lack one.
     */
    public static Fingerprint collect(String stableId) {
        Map<String, String> raw = MachineSources.read();
        if (stableId != null && !stableId.isEmpty()) raw.put("machine", stableId);
        return fromRaw(raw);
    }

    /** Hashes raw component values; a missing or empty value counts as unreadable. */
    static Fingerprint fromRaw(Map<String, String> raw) {
        Map<String, String> parts = new LinkedHashMap<>();
        for (String name : COMPONENTS) {
            String value = raw.get(name);
            parts.put(name, value == null || value.isEmpty() ? MISSING : sha256Hex(value).substring(0, 16));
        }
        StringBuilder fields = new StringBuilder();
        for (String name : COMPONENTS) fields.append(fields.length() == 0 ? "" : ";").append(name).append('=').append(parts.get(name));
        String body = Base64Url.encode(fields.toString().getBytes(StandardCharsets.UTF_8));
        return new Fingerprint(PREFIX + "." + body + "." + checksum(body), parts);
    }

    /** Reads a fingerprint string; anything but the exact form is refused. */
    public static Fingerprint parse(String text) throws MalformedFingerprintException {
        if (text == null || !text.startsWith(PREFIX + ".")) throw new MalformedFingerprintException("PREFIX", "fingerprint must start with \"SVC1.\"");
        if (text.length() > MAX_LENGTH) throw new MalformedFingerprintException("STRUCTURE", "fingerprint is too long");
        String[] pieces = text.split("\\.", -1);
        if (pieces.length != 3) throw new MalformedFingerprintException("STRUCTURE", "fingerprint must have three dot-separated parts: SVC1.<body>.<checksum>");
        byte[] decoded = Base64Url.decode(pieces[1]);
        if (decoded == null) throw new MalformedFingerprintException("ENCODING", "fingerprint body is not canonical unpadded base64url");
        if (!CHECKSUM.matcher(pieces[2]).matches()) throw new MalformedFingerprintException("STRUCTURE", "fingerprint checksum must be 8 lowercase hex characters");
        String[] fields = new String(decoded, StandardCharsets.ISO_8859_1).split(";", -1);
        if (fields.length != COMPONENTS.size()) throw new MalformedFingerprintException("COMPONENTS", "fingerprint body must list exactly " + String.join(", ", COMPONENTS));
        Map<String, String> parts = new LinkedHashMap<>();
        for (int i = 0; i < fields.length; i++) {
            String name = COMPONENTS.get(i);
            if (!fields[i].startsWith(name + "=")) throw new MalformedFingerprintException("COMPONENTS", "fingerprint body must list exactly " + String.join(", ", COMPONENTS) + ", in that order");
            String value = fields[i].substring(name.length() + 1);
            if (!PART.matcher(value).matches()) throw new MalformedFingerprintException("COMPONENT_VALUE", "fingerprint component \"" + name + "\" must be 16 lowercase hex characters or \"-\"");
            parts.put(name, value);
        }
        if (!checksum(pieces[1]).equals(pieces[2])) throw new MalformedFingerprintException("CHECKSUM", "fingerprint checksum does not match its body");
        return new Fingerprint(text, parts);
    }

    /** The fingerprint string, as the check API receives it. */
    public String value() {
        return value;
    }

    /** The hashed components by name (16 hex characters each, {@code -} when unreadable), in body order. */
    public Map<String, String> parts() {
        return parts;
    }

    /** Whether a component could be read on the machine. */
    public boolean readable(String component) {
        String part = parts.get(component);
        return part != null && !MISSING.equals(part);
    }

    /** How many components are present in both and equal. */
    public int matchScore(Fingerprint other) {
        int score = 0;
        for (String name : COMPONENTS) {
            if (!MISSING.equals(parts.get(name)) && parts.get(name).equals(other.parts.get(name))) score++;
        }
        return score;
    }

    /** Same machine when at least {@code need} (1 to 5) components are present in both and equal. */
    public boolean matches(Fingerprint other, int need) {
        if (need < 1 || need > COMPONENTS.size()) throw new IllegalArgumentException("fingerprint need must be an integer from 1 to 5");
        return matchScore(other) >= need;
    }

    /** First 32 hex characters of SHA-256 over the fingerprint string exactly as sent (the receipt's {@code fpDigest}). */
    public static String digest(String fingerprint) {
        return sha256Hex(fingerprint).substring(0, 32);
    }

    @Override
    public String toString() {
        return value;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Fingerprint && ((Fingerprint) other).value.equals(value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }

    private static String checksum(String body) {
        return sha256Hex(PREFIX + "." + body).substring(0, 8);
    }

    static String sha256Hex(String text) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            StringBuilder hex = new StringBuilder();
            for (byte b : hash) hex.append(String.format("%02x", b));
            return hex.toString();
        } catch (NoSuchAlgorithmException impossible) {
            throw new IllegalStateException("every JDK has SHA-256", impossible);
        }
    }

    /** A string that is not exactly a fingerprint; {@link #problem()} names the first rule it breaks. */
    public static final class MalformedFingerprintException extends Exception {
        private static final long serialVersionUID = 1L;
        private final String problem;

        MalformedFingerprintException(String problem, String message) {
            super(message);
            this.problem = problem;
        }

        /** {@code PREFIX}, {@code STRUCTURE}, {@code ENCODING}, {@code COMPONENTS}, {@code COMPONENT_VALUE} or {@code CHECKSUM}. */
        public String problem() {
            return problem;
        }
    }
}
