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

    /** What a change of the state does, holding the lock. */
    interface Change<T> {
        T apply(AirGap.State state) throws IOException, LicensorException;
    }

    /** Loads, changes and saves {@code air-gap.json} under the lock; a change that throws saves nothing. */
    <T> T update(Change<T> change) throws IOException, LicensorException {
        return StateStore.locked(directory, "air-gap.lock", () -> {
            AirGap.State state = load();
            T result = change.apply(state);
            StateStore.replace(directory.resolve("air-gap.json"), state.encode());
            return result;
        });
    }

    /** The device key for this fingerprint, made and written now when there is none (call holding the lock). */
    AirGap.DeviceKey deviceKeyMadeIfNeeded(String fingerprint) throws IOException {
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
}
