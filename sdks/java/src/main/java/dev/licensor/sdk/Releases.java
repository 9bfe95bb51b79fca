package dev.licensor.sdk;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.Timer;
import java.util.TimerTask;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

/** Release manifests (SVCM1), SemVer precedence and this machine's platform (DESIGN.md 20). */
final class Releases {
    private Releases() {}

    static final Pattern SEMVER = Pattern.compile(
        "(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?");
    static final Set<String> CHANNELS = Set.of("stable", "rc", "beta", "alpha", "dev");
    static final Set<String> PLATFORMS = Set.of("linux", "darwin", "windows", "any");
    static final Set<String> ARCHES = Set.of("x86_64", "aarch64", "i686", "armv7", "riscv64", "universal", "any");

    /** DESIGN.md 20's filename rule (with no ".." anywhere), so a name never leaves the folder it is written to. */
    static final Pattern FILENAME = Pattern.compile("[A-Za-z0-9](?:[A-Za-z0-9._+ -]{0,253}[A-Za-z0-9._+-])?");
    private static final Pattern DECIMAL = Pattern.compile("0|[1-9][0-9]*");
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");

    /** What a manifest signs of one file. */
    record SignedFile(String platform, String arch, long size, String sha256) {}

    /** latest.json's query, or INVALID_OPTIONS for what the service would refuse (nothing sent). */
    static String query(String currentVersion, String platform, String arch, String channel) throws LicensorException {
        if (currentVersion == null || currentVersion.length() > 64 || !SEMVER.matcher(currentVersion).matches()) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "currentVersion must be a SemVer version such as 1.2.3 (no \"v\", no build metadata)");
        }
        String p = platform != null ? platform : platform();
        String a = arch != null ? arch : arch();
        if (!PLATFORMS.contains(p)) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "platform must be linux, darwin, windows or any (this machine's is not known: give it)");
        if (!ARCHES.contains(a)) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "arch must be x86_64, aarch64, i686, armv7, riscv64, universal or any (this machine's is not known: give it)");
        if (channel != null && !CHANNELS.contains(channel)) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "channel must be stable, rc, beta, alpha or dev");
        String query = "platform=" + encode(p) + "&arch=" + encode(a) + "&version=" + encode(currentVersion);
        return channel == null ? query : query + "&channel=" + encode(channel);
    }

    private static String encode(String value) {
        return java.net.URLEncoder.encode(value, StandardCharsets.UTF_8);
    }

    /** This machine's platform as the service names it, or null. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) return "linux";
        if (os.startsWith("mac")) return "darwin";
        if (os.startsWith("windows")) return "windows";
        return null;
    }

    /** This machine's arch as the service names it, or null. */
    static String arch() {
        return switch (System.getProperty("os.arch", "").toLowerCase(Locale.ROOT)) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            case "x86", "i386", "i686" -> "i686";
            case "arm" -> "armv7";
            case "riscv64" -> "riscv64";
            default -> null;
        };
    }

    /** latest.json's {@code {update, blocked}} as answered, or BAD_RESPONSE. */
    static UpdateCheck read(Map<String, Object> body) throws LicensorException {
        LicensorException bad = new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the latest.json answer is not {update, blocked}");
        if (!body.containsKey("update") || !body.containsKey("blocked")) throw bad;
        UpdateCheck.Blocked blocked = null;
        if (body.get("blocked") instanceof Map<?, ?> b) {
            String[] fields = Update.texts(b, "version", "publishedAt", "reason");
            if (fields == null || !Set.of("UPDATES_EXPIRED", "NOT_ENTITLED").contains(fields[2])) throw bad;
            blocked = new UpdateCheck.Blocked(fields[0], fields[1], fields[2]);
        } else if (body.get("blocked") != null) {
            throw bad;
        }
        Update update = null;
        if (body.get("update") instanceof Map<?, ?> u) {
            update = Update.read(u);
            if (update == null) throw bad;
        } else if (body.get("update") != null) {
            throw bad;
        }
        return new UpdateCheck(Optional.ofNullable(update), Optional.ofNullable(blocked));
    }

    /**
     * The signed files by filename when a signature by the key its keyFingerprint names (one of
     * {@code keys}) verifies, and the manifest is SVCM1 of this organisation and product, of the
     * update's version and channel; else BAD_MANIFEST.
     */
    static Map<String, SignedFile> verify(Update update, PublicKeys keys, String slug, String productKey) throws LicensorException {
        byte[] text = update.manifest().getBytes(StandardCharsets.UTF_8);
        boolean signed = false;
        for (Update.Signature s : update.manifestSignatures()) {
            byte[] signature = Base64Url.decode(s.signature());
            if (signature != null && keys.verify(s.keyFingerprint(), text, signature)) {
                signed = true;
                break;
            }
        }
        if (!signed) throw bad("is not signed by a key this application knows");
        List<String> parts = List.of(update.manifest().split("\u001f", -1));
        if (parts.size() < 7 || !parts.get(0).equals("SVCM1") || !DECIMAL.matcher(parts.get(5)).matches() || !DECIMAL.matcher(parts.get(6)).matches()
            || parts.get(6).length() > 4 || parts.size() != 7 + 5 * Integer.parseInt(parts.get(6))) {
            throw bad("is not SVCM1");
        }
        Map<String, SignedFile> files = new HashMap<>();
        for (int i = 7; i < parts.size(); i += 5) {
            String size = parts.get(i + 3);
            if (!DECIMAL.matcher(size).matches() || size.length() > 16 || Long.parseLong(size) > Json.MAX_SAFE_INTEGER
                || !SHA256.matcher(parts.get(i + 4)).matches() || files.containsKey(parts.get(i))) {
                throw bad("is not SVCM1");
            }
            files.put(parts.get(i), new SignedFile(parts.get(i + 1), parts.get(i + 2), Long.parseLong(size), parts.get(i + 4)));
        }
        if (!parts.get(1).equals(slug) || !parts.get(2).equals(productKey)) throw bad("is another organisation's or product's");
        if (!parts.get(3).equals(update.version()) || !parts.get(4).equals(update.channel())) throw bad("is for another version or channel");
        if (!SEMVER.matcher(update.version()).matches()) throw bad("is not of a SemVer version");
        return files;
    }

    private static LicensorException bad(String why) {
        return new LicensorException(LicensorException.Reason.BAD_MANIFEST, "the update's manifest " + why);
    }

    /**
     * Streams {@code in} to {@code file} while hashing it, fsynced; answers the SHA-256 when its
     * size and SHA-256 are {@code signed}'s, else null (reading stops once the size is passed).
     * No bytes for {@code idle} is TIMEOUT, a broken transfer NETWORK; IOException is the file's.
     */
    static String keep(InputStream in, Path file, SignedFile signed, Duration idle) throws LicensorException, IOException {
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException impossible) {
            throw new IllegalStateException(impossible);
        }
        Timer timer = new Timer("licensor download timeout", true);
        AtomicBoolean timedOut = new AtomicBoolean();
        long size = 0;
        try (in; FileChannel out = FileChannel.open(file, StandardOpenOption.WRITE)) {
            byte[] buffer = new byte[64 * 1024];
            while (size <= signed.size()) {
                TimerTask stall = new TimerTask() {
                    @Override
                    public void run() {
                        timedOut.set(true);
                        try {
                            in.close();
                        } catch (IOException ignored) {
                            // Closing is how the stalled read is ended; nothing else to do.
                        }
                    }
                };
                timer.schedule(stall, idle.toMillis());
                int n;
                try {
                    n = in.read(buffer, 0, (int) Math.min(buffer.length, signed.size() + 1 - size));
                } catch (IOException cut) {
                    if (timedOut.get()) throw new LicensorException(LicensorException.Reason.TIMEOUT, "no bytes within " + idle.toMillis() + " ms");
                    throw new LicensorException(LicensorException.Reason.NETWORK, "the download was cut off: " + cut.getMessage());
                } finally {
                    stall.cancel();
                }
                if (n < 0) break;
                digest.update(buffer, 0, n);
                ByteBuffer bytes = ByteBuffer.wrap(buffer, 0, n);
                while (bytes.hasRemaining()) out.write(bytes);
                size += n;
            }
            out.force(true);
        } finally {
            timer.cancel();
        }
        String sha256 = HexFormat.of().formatHex(digest.digest());
        return size == signed.size() && sha256.equals(signed.sha256()) ? sha256 : null;
    }

    /** SemVer 2.0.0 precedence of two versions matching {@link #SEMVER}: negative, 0 or positive. */
    static int compare(String a, String b) {
        String[] versionA = a.split("-", 2);
        String[] versionB = b.split("-", 2);
        String[] coreA = versionA[0].split("\\.");
        String[] coreB = versionB[0].split("\\.");
        for (int i = 0; i < 3; i++) {
            int order = numeric(coreA[i], coreB[i]);
            if (order != 0) return order;
        }
        if (versionA.length == 1 || versionB.length == 1) return versionB.length - versionA.length;
        String[] idsA = versionA[1].split("\\.");
        String[] idsB = versionB[1].split("\\.");
        for (int i = 0; i < Math.min(idsA.length, idsB.length); i++) {
            boolean numA = idsA[i].matches("[0-9]+");
            boolean numB = idsB[i].matches("[0-9]+");
            int order = numA && numB ? numeric(idsA[i], idsB[i]) : numA ? -1 : numB ? 1 : idsA[i].compareTo(idsB[i]);
            if (order != 0) return order;
        }
        return Integer.compare(idsA.length, idsB.length);
    }

    /** Decimal strings without leading zeros, of any length. */
    private static int numeric(String a, String b) {
        return a.length() != b.length() ? Integer.compare(a.length(), b.length()) : a.compareTo(b);
    }
}
