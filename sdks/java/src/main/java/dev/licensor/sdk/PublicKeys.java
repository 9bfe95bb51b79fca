package dev.licensor.sdk;

import java.math.BigInteger;
import java.security.AlgorithmParameters;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.interfaces.ECPublicKey;
import java.security.interfaces.EdECPublicKey;
import java.security.interfaces.RSAPublicKey;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.ECParameterSpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A product's public key history (any of them may have signed), each bound to the JDK signature
 * algorithm DESIGN.md 2 names for it: {@code Ed25519}, {@code SHA256withRSA} (2048, 3072 and
 * 4096 bits), {@code SHA256withECDSA} (P-256) or {@code SHA384withECDSA} (P-384), DER signatures.
 */
final class PublicKeys {
    private static final Pattern PEM = Pattern.compile("-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\\s]+)-----END PUBLIC KEY-----");

    private final List<PublicKey> keys;
    private final List<String> algorithms;

    private PublicKeys(List<PublicKey> keys, List<String> algorithms) {
        this.keys = List.copyOf(keys);
        this.algorithms = List.copyOf(algorithms);
    }

    /** Reads SPKI PEM texts or {@link PublicKey} objects; anything else is {@code INVALID_KEY}. */
    static PublicKeys read(Collection<?> given) throws LicensorException {
        if (given == null || given.isEmpty()) throw new LicensorException(LicensorException.Reason.INVALID_KEY, "at least one public key is needed");
        List<PublicKey> keys = new ArrayList<>();
        List<String> algorithms = new ArrayList<>();
        int index = 0;
        for (Object item : given) {
            index++;
            PublicKey key = item instanceof PublicKey ? (PublicKey) item : item instanceof String ? fromPem((String) item) : null;
            String algorithm = key == null ? null : signatureAlgorithm(key);
            if (algorithm == null) {
                throw new LicensorException(LicensorException.Reason.INVALID_KEY,
                    "public key " + index + " cannot be read: an Ed25519, RSA 2048/3072/4096, P-256 or P-384 public key (SPKI PEM) is needed");
            }
            keys.add(key);
            algorithms.add(algorithm);
        }
        return new PublicKeys(keys, algorithms);
    }

    private static PublicKey fromPem(String pem) {
        Matcher matcher = PEM.matcher(pem.trim());
        if (!matcher.matches()) return null;
        byte[] der;
        try {
            der = Base64.getMimeDecoder().decode(matcher.group(1));
        } catch (IllegalArgumentException bad) {
            return null;
        }
        for (String type : new String[] {"Ed25519", "RSA", "EC"}) {
            try {
                return KeyFactory.getInstance(type).generatePublic(new X509EncodedKeySpec(der));
            } catch (GeneralSecurityException notThisType) {
                // try the next key type
            }
        }
        return null;
    }

    /** The JDK name of the key's signature algorithm, or null when it is none of the six. */
    private static String signatureAlgorithm(PublicKey key) {
        if (key instanceof RSAPublicKey) {
            int bits = ((RSAPublicKey) key).getModulus().bitLength();
            return bits == 2048 || bits == 3072 || bits == 4096 ? "SHA256withRSA" : null;
        }
        if (key instanceof ECPublicKey) {
            ECParameterSpec params = ((ECPublicKey) key).getParams();
            if (isCurve(params, "secp256r1")) return "SHA256withECDSA";
            if (isCurve(params, "secp384r1")) return "SHA384withECDSA";
            return null;
        }
        if (key instanceof EdECPublicKey) return "Ed25519".equals(((EdECPublicKey) key).getParams().getName()) ? "Ed25519" : null;
        return null;
    }

    private static boolean isCurve(ECParameterSpec params, String name) {
        try {
            AlgorithmParameters parameters = AlgorithmParameters.getInstance("EC");
            parameters.init(new ECGenParameterSpec(name));
            ECParameterSpec named = parameters.getParameterSpec(ECParameterSpec.class);
            BigInteger order = named.getOrder();
            return order.equals(params.getOrder()) && named.getCurve().equals(params.getCurve()) && named.getGenerator().equals(params.getGenerator());
        } catch (GeneralSecurityException unknownCurve) {
            return false;
        }
    }

    /** True when one of the keys signed {@code data}; false for garbage signatures too. */
    boolean verify(byte[] data, byte[] signature) {
        for (int i = 0; i < keys.size(); i++) if (verifies(i, data, signature)) return true;
        return false;
    }

    /**
     * True when the key whose SPKI SHA-256 (lowercase hex) is {@code keyFingerprint} signed
     * {@code data}: how a release manifest's signatures name their key (DESIGN.md 20).
     */
    boolean verify(String keyFingerprint, byte[] data, byte[] signature) {
        for (int i = 0; i < keys.size(); i++) {
            if (fingerprint(keys.get(i)).equals(keyFingerprint) && verifies(i, data, signature)) return true;
        }
        return false;
    }

    private static String fingerprint(PublicKey key) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(key.getEncoded()));
        } catch (GeneralSecurityException impossible) {
            throw new IllegalStateException(impossible);
        }
    }

    private boolean verifies(int i, byte[] data, byte[] signature) {
        try {
            Signature verifier = Signature.getInstance(algorithms.get(i));
            verifier.initVerify(keys.get(i));
            verifier.update(data);
            return verifier.verify(signature);
        } catch (GeneralSecurityException | RuntimeException undecodable) {
            // A signature that is not even well-formed DER, or of the wrong length, verifies nothing.
            return false;
        }
    }
}
