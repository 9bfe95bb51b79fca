package dev.licensor.sdk;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A published release this licence may download, as {@code latest.json} answers it (DESIGN.md
 * 20), its manifest verified by {@link LicenceClient#checkForUpdate}.
 *
 * @param publishedAt ISO 8601 UTC with milliseconds
 * @param manifest the SVCM1 text the signatures cover
 * @param manifestSignature the first signature, null only in a draft
 * @param artifacts the release's files for the platform and arch asked, by filename
 */
public record Update(String version, String channel, String publishedAt, String notes, String manifest, List<Signature> manifestSignatures,
                     String manifestSignature, String manifestKeyFingerprint, List<Artifact> artifacts) {

    /** One key's signature of the manifest: the key's SPKI SHA-256 (hex) and the signature (base64url). */
    public record Signature(String keyFingerprint, String signature) {}

    /** One file of an update; {@code url} downloads it with the feed token alone. */
    public record Artifact(long id, String filename, String platform, String arch, long size, String sha256, String sha512, String contentType, String url) {}

    /** The update as latest.json writes it, fields in its order. */
    public Map<String, Object> asMap() {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("version", version);
        map.put("channel", channel);
        map.put("publishedAt", publishedAt);
        map.put("notes", notes);
        map.put("manifest", manifest);
        List<Object> signatures = new ArrayList<>();
        for (Signature s : manifestSignatures) signatures.add(Map.of("keyFingerprint", s.keyFingerprint(), "signature", s.signature()));
        map.put("manifestSignatures", signatures);
        map.put("manifestSignature", manifestSignature);
        map.put("manifestKeyFingerprint", manifestKeyFingerprint);
        List<Object> files = new ArrayList<>();
        for (Artifact a : artifacts) {
            Map<String, Object> file = new LinkedHashMap<>();
            file.put("id", a.id());
            file.put("filename", a.filename());
            file.put("platform", a.platform());
            file.put("arch", a.arch());
            file.put("size", a.size());
            file.put("sha256", a.sha256());
            file.put("sha512", a.sha512());
            file.put("contentType", a.contentType());
            file.put("url", a.url());
            files.add(file);
        }
        map.put("artifacts", files);
        return map;
    }

    /** latest.json's update object, or null when a field is missing or of the wrong type. */
    static Update read(Map<?, ?> o) {
        String[] texts = texts(o, "version", "channel", "publishedAt", "notes", "manifest");
        if (texts == null || !(o.get("manifestSignatures") instanceof List<?> signed) || !(o.get("artifacts") instanceof List<?> files)) return null;
        // Null in a draft; a published release has both.
        for (String name : new String[] {"manifestSignature", "manifestKeyFingerprint"}) {
            if (!o.containsKey(name) || (o.get(name) != null && !(o.get(name) instanceof String))) return null;
        }
        List<Signature> signatures = new ArrayList<>();
        for (Object item : signed) {
            String[] s = item instanceof Map<?, ?> entry ? texts(entry, "keyFingerprint", "signature") : null;
            if (s == null) return null;
            signatures.add(new Signature(s[0], s[1]));
        }
        List<Artifact> artifacts = new ArrayList<>();
        for (Object item : files) {
            if (!(item instanceof Map<?, ?> entry) || !(entry.get("id") instanceof Long id) || !(entry.get("size") instanceof Long size)) return null;
            String[] a = texts(entry, "filename", "platform", "arch", "sha256", "sha512", "contentType", "url");
            if (a == null) return null;
            artifacts.add(new Artifact(id, a[0], a[1], a[2], size, a[3], a[4], a[5], a[6]));
        }
        return new Update(texts[0], texts[1], texts[2], texts[3], texts[4], List.copyOf(signatures), (String) o.get("manifestSignature"),
            (String) o.get("manifestKeyFingerprint"), List.copyOf(artifacts));
    }

    /** The named string fields, or null when one is not a string. */
    static String[] texts(Map<?, ?> o, String... names) {
        String[] values = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            if (!(o.get(names[i]) instanceof String text)) return null;
            values[i] = text;
        }
        return values;
    }
}
