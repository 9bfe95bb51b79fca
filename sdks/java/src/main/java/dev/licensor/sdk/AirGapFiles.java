package dev.licensor.sdk;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The air-gap files of one product directory (docs/protocol.md 8): {@code device.json}, the
 * Ed25519 device key and the fingerprint it was made on, and {@code air-gap.json}, the pending
 * request, the accepted response per licence and the deactivated activations. Every
 * read-modify-write happens under the lock {@code air-gap.lock}.
 */
final class AirGapFiles {
    private final Path directory;

    AirGapFiles(Path directory) {
        this.directory = directory;
    }

    AirGap.State load() {
        return AirGap.State.decode(StateStore.read(directory.resolve("air-gap.json")));
    }

    /** The device key made on this exact fingerprint, or null. */
    AirGap.DeviceKey deviceKey(String fingerprint) {
        try {
            Map<String, Object> device = Json.parseObject(StateStore.read(directory.resolve("device.json")));
            if (!Long.valueOf(1).equals(device.get("format")) || !fingerprint.equals(device.get("fingerprint"))) return null;
            return AirGap.DeviceKey.of(Base64Url.decode((String) device.get("seed")));
        } catch (Json.JsonException | RuntimeException unreadable) {
            return null;
        }
    }

    /** This installation's device public key (B64U) for this fingerprint, made now when there is none. */
    String devicePublicKey(String fingerprint) throws LicensorException {
        return update(state -> deviceKeyMadeIfNeeded(fingerprint).dpk());
    }

    /** A new pending request for {@code lid} from this machine, replacing any other. */
    String request(String lid, String fingerprint, String nonce, long nowSeconds) throws LicensorException {
        return update(state -> {
            AirGap.DeviceKey device = deviceKeyMadeIfNeeded(fingerprint);
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("lid", lid);
            fields.put("fp", fingerprint);
            fields.put("dpk", device.dpk());
            fields.put("nonce", nonce);
            fields.put("iat", nowSeconds);
            state.pending = AirGap.sign(AirGap.REQUEST, fields, device.key());
            return state.pending;
        });
    }

    /**
     * Accepts a response (DESIGN.md 14): it verifies with a product key; its lid, dpk, nonce and fp
     * are the pending request's, its lid the licence's, its dpk the device key's now, its fp this
     * machine's in all five components; neither its aid nor its nonce was deactivated here. That
     * consumes the pending request. Anything else is BAD_ACTIVATION and changes nothing.
     */
    AirGap.Signed accept(String response, String lid, String fingerprint, PublicKeys keys) throws LicensorException {
        AirGap.Signed parsed;
        try {
            parsed = AirGap.parse(AirGap.RESPONSE, response == null ? null : AirGap.compact(response));
        } catch (AirGap.Malformed malformed) {
            throw bad("not an activation response: " + malformed.getMessage());
        }
        if (!AirGap.verifiedByProduct(parsed, keys)) throw bad("the response does not verify with this product's keys");
        String nonce = parsed.string("nonce");
        return update(state -> {
            if (state.pending == null) throw bad("no activation request is pending on this installation");
            AirGap.Signed pending;
            try {
                pending = AirGap.parse(AirGap.REQUEST, state.pending);
            } catch (AirGap.Malformed unreadable) {
                throw bad("the pending request cannot be read: make a new one");
            }
            AirGap.DeviceKey device = deviceKey(fingerprint);
            if (!parsed.string("lid").equals(lid) || !pending.string("lid").equals(lid)) throw bad("the response is for another licence");
            if (!parsed.string("dpk").equals(pending.string("dpk")) || device == null || !device.dpk().equals(parsed.string("dpk"))) {
                throw bad("the response is for another installation");
            }
            if (!nonce.equals(pending.string("nonce"))) throw bad("the response answers another request");
            if (!parsed.string("fp").equals(pending.string("fp")) || !AirGap.sameMachine(parsed.string("fp"), fingerprint)) throw bad("the response is for another machine");
            if (state.deactivated.stream().anyMatch(d -> d.get("aid").equals(parsed.string("aid")) || d.get("nonce").equals(nonce))) {
                throw bad("the response is for an activation deactivated here");
            }
            state.pending = null;
            state.activations.put(lid, parsed.text());
            return parsed;
        });
    }

    /** Forgets this licence's activation first (remembering its aid and nonce), then answers the deactivation code the device key signs. */
    String deactivate(String lid, String fingerprint, long nowSeconds) throws LicensorException {
        return update(state -> {
            AirGap.Signed kept;
            try {
                kept = AirGap.parse(AirGap.RESPONSE, state.activations.remove(lid));
            } catch (AirGap.Malformed none) {
                throw bad("this installation holds no air-gapped activation of this licence");
            }
            state.deactivated.add(Map.of("aid", kept.string("aid"), "nonce", kept.string("nonce")));
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("lid", lid);
            fields.put("aid", kept.string("aid"));
            fields.put("iat", nowSeconds);
            return AirGap.sign(AirGap.DEACTIVATION, fields, deviceKeyMadeIfNeeded(fingerprint).key());
        });
    }

    /** This licence's kept activation when it verifies with a product key, for this device key and this machine's exact fingerprint; else null. */
    AirGap.Signed usableActivation(String lid, String fingerprint, PublicKeys keys) {
        AirGap.Signed activation;
        try {
            activation = AirGap.parse(AirGap.RESPONSE, load().activations.get(lid));
        } catch (AirGap.Malformed none) {
            return null;
        }
        AirGap.DeviceKey device = deviceKey(fingerprint);
        boolean usable = AirGap.verifiedByProduct(activation, keys) && activation.string("lid").equals(lid)
            && device != null && device.dpk().equals(activation.string("dpk")) && AirGap.sameMachine(activation.string("fp"), fingerprint);
        return usable ? activation : null;
    }

    /** Ends this licence's activation here (a later verified answer said not licensed); a failure leaves it, outweighed by that answer. */
    void end(String lid) {
        if (!load().activations.containsKey(lid)) return;
        try {
            update(state -> state.activations.remove(lid));
        } catch (LicensorException | RuntimeException notEnded) {
            // The kept answer that says not licensed, signed after the activation, still outweighs it.
        }
    }

    private interface Change<T> {
        T apply(AirGap.State state) throws IOException, LicensorException;
    }

    /** Loads, changes and saves {@code air-gap.json} under the lock; a change that throws saves nothing. */
    private <T> T update(Change<T> change) throws LicensorException {
        try {
            return StateStore.locked(directory, "air-gap.lock", () -> {
                AirGap.State state = load();
                T result = change.apply(state);
                StateStore.replace(directory.resolve("air-gap.json"), state.encode());
                return result;
            });
        } catch (IOException failed) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "the air-gap state cannot be written: " + failed.getMessage());
        }
    }

    /** The device key for this fingerprint, made and written now when there is none (holding the lock). */
    private AirGap.DeviceKey deviceKeyMadeIfNeeded(String fingerprint) throws IOException {
        AirGap.DeviceKey kept = deviceKey(fingerprint);
        if (kept != null) return kept;
        AirGap.DeviceKey made = AirGap.DeviceKey.generate();
        Map<String, Object> device = new LinkedHashMap<>();
        device.put("format", 1L);
        device.put("seed", Base64Url.encode(made.seed()));
        device.put("dpk", made.dpk());
        device.put("fingerprint", fingerprint);
        StateStore.replace(directory.resolve("device.json"), Json.write(device) + "\n");
        return made;
    }

    private static LicensorException bad(String message) {
        return new LicensorException(LicensorException.Reason.BAD_ACTIVATION, message);
    }
}
