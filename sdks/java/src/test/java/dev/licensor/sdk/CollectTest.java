package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/** Fingerprint collection on the machine running the tests (Linux in CI). */
class CollectTest {
    @Test
    void collectsTheSameWellFormedFingerprintEachTime() throws Exception {
        Fingerprint first = Fingerprint.collect();
        assertEquals(first, Fingerprint.parse(first.value()));
        assertEquals(first, Fingerprint.collect());
    }

    @Test
    void aStableIdReplacesOnlyTheMachineComponent() {
        Fingerprint os = Fingerprint.collect();
        Fingerprint stable = Fingerprint.collect("installation-42");
        assertEquals(Fingerprint.sha256Hex("installation-42").substring(0, 16), stable.parts().get("machine"));
        for (String name : Fingerprint.COMPONENTS) {
            if (!name.equals("machine")) assertEquals(os.parts().get(name), stable.parts().get(name), name);
        }
        assertNotEquals(os, stable);
    }

    @Test
    void readsTheLinuxMachineIdAndHostName() throws Exception {
        assumeTrue(System.getProperty("os.name").equals("Linux"), "the Linux sources");
        Fingerprint fingerprint = Fingerprint.collect();
        if (Files.isReadable(Paths.get("/etc/machine-id"))) {
            String id = Files.readString(Paths.get("/etc/machine-id")).strip();
            assertEquals(id.isEmpty() ? "-" : Fingerprint.sha256Hex(id).substring(0, 16), fingerprint.parts().get("machine"));
        }
        String host = Files.readString(Paths.get("/proc/sys/kernel/hostname")).strip();
        assertEquals(Fingerprint.sha256Hex(host).substring(0, 16), fingerprint.parts().get("host"));
    }
}
