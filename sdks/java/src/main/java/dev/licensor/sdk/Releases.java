package dev.licensor.sdk;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/** Release manifests (SVCM1), SemVer precedence and this machine's platform (DESIGN.md 20). */
final class Releases {
    private Releases() {}

    static final Pattern SEMVER = Pattern.compile(
        "(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?");
    static final Set<String> CHANNELS = Set.of("stable", "rc", "beta", "alpha", "dev");
    static final Set<String> PLATFORMS = Set.of("linux", "darwin", "windows", "any");
    static final Set<String> ARCHES = Set.of("x86_64", "aarch64", "i686", "armv7", "riscv64", "universal", "any");

    /** A manifest's size and SHA-256 of one file. */
    record SignedFile(long size, String sha256) {}

    /** This machine's platform as the service names it. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) return "linux";
        if (os.startsWith("mac")) return "darwin";
        if (os.startsWith("windows")) return "windows";
        return "any";
    }

    /** This machine's arch as the service names it. */
    static String arch() {
        return switch (System.getProperty("os.arch", "").toLowerCase(Locale.ROOT)) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            case "x86", "i386", "i686" -> "i686";
            case "arm" -> "armv7";
            case "riscv64" -> "riscv64";
            default -> "any";
        };
    }

    /**
     * The signed files by filename when one of the update's signatures verifies with the keys and
     * the manifest is this organisation's and product's, of the update's version and channel.
     */
    static Map<String, SignedFile> verify(Update update, PublicKeys keys, String slug, String productKey) throws LicensorException {
        byte[] text = update.manifest().getBytes(StandardCharsets.UTF_8);
        boolean signed = false;
        for (Update.Signature s : update.manifestSignatures()) {
            byte[] signature = Base64Url.decode(s.signature());
            if (signature != null && keys.verify(text, signature)) {
                signed = true;
                break;
            }
        }
        if (!signed) throw new LicensorException(LicensorException.Reason.BAD_MANIFEST, "no signature of the manifest verifies with the product's keys");
        List<String> parts = List.of(update.manifest().split("\u001f", -1));
        if (parts.size() < 7 || !parts.get(0).equals("SVCM1") || !parts.get(1).equals(slug) || !parts.get(2).equals(productKey)
            || !parts.get(3).equals(update.version()) || !parts.get(4).equals(update.channel())) {
            throw new LicensorException(LicensorException.Reason.BAD_MANIFEST, "the manifest is not this product's release " + update.version() + " (" + update.channel() + ")");
        }
        try {
            int n = Integer.parseInt(parts.get(6));
            if (parts.size() != 7 + 5 * n) throw new NumberFormatException();
            Map<String, SignedFile> files = new HashMap<>();
            for (int i = 7; i < parts.size(); i += 5) files.put(parts.get(i), new SignedFile(Long.parseLong(parts.get(i + 3)), parts.get(i + 4)));
            return files;
        } catch (NumberFormatException unreadable) {
            throw new LicensorException(LicensorException.Reason.BAD_MANIFEST, "the manifest's files cannot be read");
        }
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
