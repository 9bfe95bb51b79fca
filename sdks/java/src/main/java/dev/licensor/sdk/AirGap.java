package dev.licensor.sdk;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.spec.EdECPrivateKeySpec;
import java.security.spec.NamedParameterSpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * The texts of air-gapped activation (DESIGN.md 14, docs/protocol.md 11): the request
 * {@code SVCA1} and the deactivation code {@code SVCD1} signed by the installation's Ed25519
 * device key, the response {@code SVCX1} signed by the product key. Each is
 * {@code TAG.<B64U(payload JSON)>.<B64U(signature)>}, read strictly.
 */
final class AirGap {
    static final String REQUEST = "SVCA1";
    static final String RESPONSE = "SVCX1";
    static final String DEACTIVATION = "SVCD1";
    private static final int MAX_TEXT = 4096;
    private static final Pattern NONCE = Pattern.compile("[A-Za-z0-9_-]{16,128}");
    private static final Pattern AID = Pattern.compile("[0-9]{1,20}");
    /** The DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
    private static final byte[] ED25519_SPKI = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

    private AirGap() {}

    /** A text read: its signed part, signature and fields (in the signed order). */
    record Signed(String text, byte[] signedPart, byte[] signature, Map<String, Object> fields) {
        String string(String name) {
            return (String) fields.get(name);
        }

        long seconds(String name) {
            return (Long) fields.get(name);
        }
    }

    /** A text that is not the exact wire form. */
    static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    private static final Predicate<Object> LID = v -> v instanceof String && !((String) v).isEmpty() && ((String) v).length() <= 128;
    private static final Predicate<Object> SECONDS = v -> v instanceof Long && (Long) v >= 0;
    private static final Predicate<Object> FP = v -> {
        try {
            Fingerprint.parse((String) v);
            return true;
        } catch (Fingerprint.MalformedFingerprintException | ClassCastException bad) {
            return false;
        }
    };
    private static final Predicate<Object> DPK = v -> v instanceof String && Base64Url.decode((String) v) != null && Base64Url.decode((String) v).length == 32;
    private static final Predicate<Object> NONCE_RULE = v -> v instanceof String && NONCE.matcher((String) v).matches();
    private static final Predicate<Object> AID_RULE = v -> v instanceof String && AID.matcher((String) v).matches();
    private static final Predicate<Object> STATUS = v -> "ACTIVE".equals(v) || "GRACE".equals(v);

    private static Map<String, Predicate<Object>> format(String tag) {
        Map<String, Predicate<Object>> fields = new LinkedHashMap<>();
        fields.put("lid", LID);
        switch (tag) {
            case REQUEST -> {
                fields.put("fp", FP);
                fields.put("dpk", DPK);
                fields.put("nonce", NONCE_RULE);
            }
            case RESPONSE -> {
                fields.put("aid", AID_RULE);
                fields.put("fp", FP);
                fields.put("dpk", DPK);
                fields.put("nonce", NONCE_RULE);
                fields.put("status", STATUS);
            }
            default -> fields.put("aid", AID_RULE);
        }
        fields.put("iat", SECONDS);
        if (tag.equals(RESPONSE)) {
            fields.put("boundAt", SECONDS);
            fields.put("until", SECONDS);
        }
        return fields;
    }

    /** Every whitespace character removed, so a text typed back from its groups reads alike. */
    static String compact(String text) {
        return text.replaceAll("\\s+", "");
    }

    /** The text cut into pieces of five characters joined by single spaces. */
    static String groupsOfFive(String text) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < text.length(); i += 5) out.append(i == 0 ? "" : " ").append(text, i, Math.min(text.length(), i + 5));
        return out.toString();
    }

    /** Reads a text of this tag: the form only, not its signature. */
    static Signed parse(String tag, String text) throws Malformed {
        if (text == null || text.length() > MAX_TEXT) throw new Malformed("the text is missing or longer than " + MAX_TEXT + " characters");
        String[] pieces = text.split("\\.", -1);
        if (!pieces[0].equals(tag)) throw new Malformed("the text must start with \"" + tag + ".\"");
        if (pieces.length != 3) throw new Malformed("the text must have three parts: " + tag + ".<payload>.<signature>");
        byte[] payload = Base64Url.decode(pieces[1]);
        byte[] signature = Base64Url.decode(pieces[2]);
        if (payload == null || signature == null) throw new Malformed("the text is not canonical base64url");
        Map<String, Object> object;
        try {
            String json = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(payload)).toString();
            object = Json.parseObject(json);
        } catch (CharacterCodingException | Json.JsonException notJson) {
            throw new Malformed("the payload is not a strict UTF-8 JSON object");
        }
        Map<String, Predicate<Object>> rules = format(tag);
        if (!object.keySet().equals(rules.keySet())) throw new Malformed("the payload must have exactly the fields " + rules.keySet());
        for (Map.Entry<String, Predicate<Object>> rule : rules.entrySet()) {
            if (!rule.getValue().test(object.get(rule.getKey()))) throw new Malformed("the payload field \"" + rule.getKey() + "\" is malformed");
        }
        return new Signed(text, (pieces[0] + "." + pieces[1]).getBytes(StandardCharsets.US_ASCII), signature, object);
    }

    /** Signs these fields (in the format's order) with the device key. */
    static String sign(String tag, Map<String, Object> fields, PrivateKey deviceKey) {
        Map<String, Object> ordered = new LinkedHashMap<>();
        for (String name : format(tag).keySet()) ordered.put(name, fields.get(name));
        String signedPart = tag + "." + Base64Url.encode(Json.write(ordered).getBytes(StandardCharsets.UTF_8));
        try {
            Signature signer = Signature.getInstance("Ed25519");
            signer.initSign(deviceKey);
            signer.update(signedPart.getBytes(StandardCharsets.US_ASCII));
            return signedPart + "." + Base64Url.encode(signer.sign());
        } catch (GeneralSecurityException impossible) {
            throw new IllegalStateException("Ed25519 is part of every Java 17", impossible);
        }
    }

    /** True when the device key {@code dpk} (B64U of 32 bytes) signed the text. */
    static boolean verifiedByDevice(Signed signed, String dpk) {
        byte[] raw = Base64Url.decode(dpk);
        if (raw == null || raw.length != 32) return false;
        byte[] spki = Arrays.copyOf(ED25519_SPKI, ED25519_SPKI.length + 32);
        System.arraycopy(raw, 0, spki, ED25519_SPKI.length, 32);
        try {
            PublicKey key = KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(spki));
            Signature verifier = Signature.getInstance("Ed25519");
            verifier.initVerify(key);
            verifier.update(signed.signedPart());
            return verifier.verify(signed.signature());
        } catch (GeneralSecurityException | RuntimeException unverifiable) {
            return false;
        }
    }

    /** True when one of the product keys signed the response. */
    static boolean verifiedByProduct(Signed signed, PublicKeys keys) {
        return keys.verify(signed.signedPart(), signed.signature());
    }

    /** A device key: its 32-byte seed, the private key and the public key as B64U. */
    record DeviceKey(byte[] seed, PrivateKey key, String dpk) {
        /** A new random key. */
        static DeviceKey generate() {
            byte[] seed = new byte[32];
            new SecureRandom().nextBytes(seed);
            return of(seed);
        }

        /** The key of this seed; the JDK derives the public key only while generating, so it is fed the seed. */
        static DeviceKey of(byte[] seed) {
            if (seed == null || seed.length != 32) throw new IllegalArgumentException("a device key seed is 32 bytes");
            try {
                KeyPairGenerator generator = KeyPairGenerator.getInstance("Ed25519");
                generator.initialize(NamedParameterSpec.ED25519, new SecureRandom() {
                    private static final long serialVersionUID = 1L;

                    @Override
                    public void nextBytes(byte[] bytes) {
                        System.arraycopy(seed, 0, bytes, 0, bytes.length);
                    }
                });
                KeyPair pair = generator.generateKeyPair();
                byte[] spki = pair.getPublic().getEncoded();
                PrivateKey key = KeyFactory.getInstance("Ed25519").generatePrivate(new EdECPrivateKeySpec(NamedParameterSpec.ED25519, seed));
                return new DeviceKey(seed.clone(), key, Base64Url.encode(Arrays.copyOfRange(spki, spki.length - 32, spki.length)));
            } catch (GeneralSecurityException impossible) {
                throw new IllegalStateException("Ed25519 is part of every Java 17", impossible);
            }
        }
    }

    /** Same machine: both fingerprints read, and all five components equal. */
    static boolean sameMachine(String a, String b) {
        try {
            return Fingerprint.parse(a).parts().equals(Fingerprint.parse(b).parts());
        } catch (Fingerprint.MalformedFingerprintException | RuntimeException unreadable) {
            return false;
        }
    }

    /** The kept state of one product's installation (docs/protocol.md 8), each field read alone. */
    static final class State {
        static final int DEACTIVATED_KEPT = 1000;
        /** The one pending request text, or null. */
        String pending;
        /** The accepted response text per lid. */
        final Map<String, String> activations;
        /** The aid and nonce of every activation deactivated here, oldest first. */
        final List<Map<String, String>> deactivated;

        private State(String pending, Map<String, String> activations, List<Map<String, String>> deactivated) {
            this.pending = pending;
            this.activations = activations;
            this.deactivated = deactivated;
        }

        static State decode(String text) {
            Map<String, Object> object;
            try {
                object = text == null ? Map.of() : Json.parseObject(text);
            } catch (Json.JsonException | RuntimeException notJson) {
                object = Map.of();
            }
            if (!Long.valueOf(1).equals(object.get("format"))) object = Map.of();
            Map<String, String> activations = new LinkedHashMap<>();
            if (object.get("activations") instanceof Map<?, ?> kept) {
                kept.forEach((lid, response) -> {
                    if (response instanceof String) activations.put((String) lid, (String) response);
                });
            }
            List<Map<String, String>> deactivated = new java.util.ArrayList<>();
            if (object.get("deactivated") instanceof List<?> list) {
                for (Object d : list) {
                    if (d instanceof Map<?, ?> m && m.get("aid") instanceof String aid && m.get("nonce") instanceof String nonce) deactivated.add(Map.of("aid", aid, "nonce", nonce));
                }
            }
            return new State(object.get("pending") instanceof String p ? p : null, activations, deactivated);
        }

        String encode() {
            Map<String, Object> object = new LinkedHashMap<>();
            object.put("format", 1L);
            object.put("pending", pending);
            object.put("activations", activations);
            List<Map<String, String>> newest = deactivated.subList(Math.max(0, deactivated.size() - DEACTIVATED_KEPT), deactivated.size());
            List<Object> list = new java.util.ArrayList<>();
            for (Map<String, String> d : newest) {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("aid", d.get("aid"));
                entry.put("nonce", d.get("nonce"));
                list.add(entry);
            }
            object.put("deactivated", list);
            return Json.write(object) + "\n";
        }
    }
}
