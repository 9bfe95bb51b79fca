package dev.licensor.sdk;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/** The shared protocol vectors (packages/protocol/test-vectors/vectors.json), read with the SDK's own JSON reader. */
final class Vectors {
    static final Map<String, Object> ALL = load();

    private Vectors() {}

    private static Map<String, Object> load() {
        String file = System.getProperty("licensor.vectors", "../../packages/protocol/test-vectors/vectors.json");
        try {
            return Json.parseObject(Files.readString(Paths.get(file), StandardCharsets.UTF_8));
        } catch (Exception unreadable) {
            throw new IllegalStateException("cannot read the vectors at " + file, unreadable);
        }
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> list(Object value) {
        return (List<Map<String, Object>>) value;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object value) {
        return (Map<String, Object>) value;
    }

    static List<Map<String, Object>> list(String name) {
        return list(ALL.get(name));
    }

    static Map<String, Object> algorithm(String id) {
        return list("algorithms").stream().filter(a -> a.get("algorithm").equals(id)).findFirst().orElseThrow();
    }

    /** Signs bytes with a vector's private key in the wire format (DER for ECDSA). */
    static byte[] sign(Map<String, Object> algorithm, byte[] data) throws Exception {
        String pem = (String) algorithm.get("privateKeyPem");
        byte[] der = Base64.getMimeDecoder().decode(pem.replaceAll("-----[A-Z ]+-----", ""));
        String type = ((String) algorithm.get("algorithm")).startsWith("RSA") ? "RSA" : ((String) algorithm.get("algorithm")).startsWith("EC") ? "EC" : "Ed25519";
        PrivateKey key = KeyFactory.getInstance(type).generatePrivate(new PKCS8EncodedKeySpec(der));
        Signature signer = Signature.getInstance((String) algorithm.get("signatureAlgorithm"));
        signer.initSign(key);
        signer.update(data);
        return signer.sign();
    }

    /** A licence string over this exact payload JSON, signed with a vector's key. */
    static String licence(Map<String, Object> algorithm, String payloadJson) throws Exception {
        String payload = Base64Url.encode(payloadJson.getBytes(StandardCharsets.UTF_8));
        return payload + "." + Base64Url.encode(sign(algorithm, payload.getBytes(StandardCharsets.US_ASCII)));
    }
}
