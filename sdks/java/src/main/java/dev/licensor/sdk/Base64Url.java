package dev.licensor.sdk;

import java.util.Base64;

/** Base64url without padding, decoded strictly (DESIGN.md 2): input that does not re-encode to itself is refused. */
final class Base64Url {
    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder DECODER = Base64.getUrlDecoder();

    private Base64Url() {}

    static String encode(byte[] bytes) {
        return ENCODER.encodeToString(bytes);
    }

    /**
     * The bytes of a canonical unpadded base64url text, or null. Java's decoder accepts padding
     * and ignores non-zero trailing bits, so the result must re-encode to the very same text.
     */
    static byte[] decode(String text) {
        if (text == null || text.isEmpty()) return null;
        byte[] bytes;
        try {
            bytes = DECODER.decode(text);
        } catch (IllegalArgumentException malformed) {
            return null;
        }
        return encode(bytes).equals(text) ? bytes : null;
    }
}
