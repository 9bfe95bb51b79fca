package dev.licensor.sdk;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the five raw fingerprint components from the same sources as the TypeScript SDK
 * ({@code packages/sdk/src/fingerprint.ts}, which reads them through Node.js and libuv), so that
 * both SDKs produce the same fingerprint on one computer. A component that cannot be read is null.
 */
final class MachineSources {
    private MachineSources() {}

    private enum Os { LINUX, MAC, WINDOWS }

    static Map<String, String> read() {
        String name = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        Os os = name.startsWith("mac") || name.startsWith("darwin") ? Os.MAC : name.startsWith("windows") ? Os.WINDOWS : Os.LINUX;
        Map<String, String> raw = new HashMap<>();
        raw.put("machine", machineId(os));
        raw.put("host", hostName(os));
        raw.put("mac", primaryMac(os));
        raw.put("cpu", cpuModel(os));
        raw.put("disk", systemDiskId(os));
        return raw;
    }

    /** Runs a reader; anything it cannot read (missing file, no permission, no command) is null; values are trimmed. */
    private static String attempt(Supplier<String> read) {
        try {
            String value = read.get();
            if (value == null) return null;
            value = value.strip();
            return value.isEmpty() ? null : value;
        } catch (RuntimeException unreadable) {
            return null;
        }
    }

    private static String readText(String file) {
        try {
            return Files.readString(Paths.get(file), StandardCharsets.UTF_8);
        } catch (IOException unreadable) {
            return null;
        }
    }

    /** A command's standard output (UTF-8), or null when it cannot run, fails or takes over 5 s. */
    private static String run(String... command) {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(false).redirectInput(ProcessBuilder.Redirect.PIPE).start();
            process.getOutputStream().close();
            process.getErrorStream().close();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (InputStream in = process.getInputStream()) {
                in.transferTo(out);
            }
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return null;
            }
            return process.exitValue() == 0 ? out.toString(StandardCharsets.UTF_8) : null;
        } catch (IOException | InterruptedException failed) {
            if (failed instanceof InterruptedException) Thread.currentThread().interrupt();
            return null;
        }
    }

    /** First capture of {@code pattern} in a command's output. */
    private static String capture(Pattern pattern, String... command) {
        return attempt(() -> {
            String output = run(command);
            if (output == null) return null;
            Matcher matcher = pattern.matcher(output);
            return matcher.find() ? matcher.group(1) : null;
        });
    }

    private static String machineId(Os os) {
        switch (os) {
            case MAC:
                return capture(Pattern.compile("\"IOPlatformUUID\"\\s*=\\s*\"([^\"]+)\""), "ioreg", "-rd1", "-c", "IOPlatformExpertDevice");
            case WINDOWS:
                return capture(Pattern.compile("MachineGuid\\s+REG_SZ\\s+(\\S+)"), "reg", "query", "HKLM\\SOFTWARE\\Microsoft\\Cryptography", "/v", "MachineGuid");
            default: {
                String id = attempt(() -> readText("/etc/machine-id"));
                return id != null ? id : attempt(() -> readText("/var/lib/dbus/machine-id"));
            }
        }
    }

    /** gethostname(), as Node's os.hostname() returns it: the kernel's node name on Linux, the hostname command elsewhere. */
    private static String hostName(Os os) {
        if (os == Os.LINUX) return attempt(() -> readText("/proc/sys/kernel/hostname"));
        return attempt(() -> run("hostname"));
    }

    /** The first CPU's model: {@code model name} in /proc/cpuinfo (none on ARM), the sysctl brand string, the registry's ProcessorNameString. */
    private static String cpuModel(Os os) {
        switch (os) {
            case MAC:
                return attempt(() -> run("sysctl", "-n", "machdep.cpu.brand_string"));
            case WINDOWS:
                return capture(Pattern.compile("ProcessorNameString\\s+REG_SZ\\s+([^\\r\\n]+)"),
                    "reg", "query", "HKLM\\HARDWARE\\DESCRIPTION\\System\\CentralProcessor\\0", "/v", "ProcessorNameString");
            default:
                return attempt(() -> {
                    String info = readText("/proc/cpuinfo");
                    if (info == null) return null;
                    Matcher matcher = Pattern.compile("^model name[ \\t]*:(.*)$", Pattern.MULTILINE).matcher(info);
                    return matcher.find() ? matcher.group(1) : null;
                });
        }
    }

    /**
     * The MAC of the interface carrying the default route (Linux), else of the first usable
     * interface by name, so the choice does not depend on the order the OS lists them in. Usable,
     * as Node lists interfaces: up and running, not loopback, with an address and a non-zero MAC.
     */
    private static String primaryMac(Os os) {
        if (os == Os.WINDOWS) return windowsMac();
        return attempt(() -> {
            Map<String, String> macs = new HashMap<>();
            try {
                for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                    if (!nif.isUp() || nif.isLoopback() || !nif.getInetAddresses().hasMoreElements()) continue;
                    String mac = formatMac(nif.getHardwareAddress(), ":");
                    if (mac != null) macs.put(nif.getName(), mac);
                }
            } catch (IOException unreadable) {
                return null;
            }
            if (os == Os.LINUX) {
                String routed = attempt(MachineSources::defaultRouteInterface);
                if (routed != null && macs.containsKey(routed)) return macs.get(routed);
            }
            List<String> names = new ArrayList<>(macs.keySet());
            Collections.sort(names);
            return names.isEmpty() ? null : macs.get(names.get(0));
        });
    }

    private static String formatMac(byte[] address, String separator) {
        if (address == null || address.length != 6) return null;
        StringBuilder mac = new StringBuilder();
        boolean zero = true;
        for (byte b : address) {
            if (mac.length() > 0) mac.append(separator);
            mac.append(String.format("%02x", b & 0xff));
            zero &= b == 0;
        }
        return zero ? null : mac.toString();
    }

    /** /proc/net/route: the interface whose destination is 0.0.0.0. */
    private static String defaultRouteInterface() {
        String table = readText("/proc/net/route");
        if (table == null) return null;
        String[] lines = table.split("\n");
        for (int i = 1; i < lines.length; i++) {
            String[] fields = lines[i].trim().split("\\s+");
            if (fields.length > 1 && !fields[0].isEmpty() && fields[1].equals("00000000")) return fields[0];
        }
        return null;
    }

    /**
     * Windows: Node names adapters by their connection ("friendly") name, which Java's
     * NetworkInterface does not expose; {@code getmac /v} lists exactly that name, the MAC and,
     * for a connected adapter, its transport ({@code \Device\...}).
     */
    private static String windowsMac() {
        return attempt(() -> {
            String output = run("getmac", "/fo", "csv", "/nh", "/v");
            if (output == null) return null;
            Map<String, String> macs = new HashMap<>();
            Pattern row = Pattern.compile("^\"([^\"]*)\",\"[^\"]*\",\"([0-9A-Fa-f]{2}(?:-[0-9A-Fa-f]{2}){5})\",\"(\\\\Device\\\\[^\"]*)\"", Pattern.MULTILINE);
            Matcher matcher = row.matcher(output);
            while (matcher.find()) {
                String mac = matcher.group(2).toLowerCase(Locale.ROOT).replace('-', ':');
                if (!mac.equals("00:00:00:00:00:00")) macs.putIfAbsent(matcher.group(1), mac);
            }
            List<String> names = new ArrayList<>(macs.keySet());
            Collections.sort(names);
            return names.isEmpty() ? null : macs.get(names.get(0));
        });
    }

    private static String systemDiskId(Os os) {
        switch (os) {
            case MAC:
                return capture(Pattern.compile("Volume UUID:\\s*(\\S+)"), "diskutil", "info", "/");
            case WINDOWS: {
                String drive = System.getenv("SystemDrive");
                return capture(Pattern.compile("([0-9A-F]{4}-[0-9A-F]{4})\\s*$", Pattern.MULTILINE | Pattern.CASE_INSENSITIVE),
                    "cmd", "/d", "/c", "vol " + (drive == null ? "C:" : drive));
            }
            default:
                return attempt(MachineSources::linuxRootDiskId);
        }
    }

    /**
     * The root filesystem's UUID (/dev/disk/by-uuid), else the serial number sysfs gives for its
     * block device (VMs without udev links). Overlay roots (containers) have neither: use a stable id.
     */
    private static String linuxRootDiskId() {
        String[] root = rootMount();
        if (root == null) return null;
        String device = root[0];
        String source = root[1];
        String byUuid = attempt(() -> {
            try (DirectoryStream<Path> uuids = Files.newDirectoryStream(Paths.get("/dev/disk/by-uuid"))) {
                for (Path link : uuids) {
                    Path target = link.toRealPath();
                    String number = attempt(() -> readText("/sys/class/block/" + target.getFileName() + "/dev"));
                    if (target.toString().equals(source) || device.equals(number)) return link.getFileName().toString();
                }
            } catch (IOException unreadable) {
                return null;
            }
            return null;
        });
        if (byUuid != null) return byUuid;
        // A partition's serial lives on its parent disk, one directory up.
        for (String file : new String[] {"serial", "device/serial", "../serial", "../device/serial", "device/wwid"}) {
            String serial = attempt(() -> readText("/sys/dev/block/" + device + "/" + file));
            if (serial != null) return serial;
        }
        return null;
    }

    /** {@code major:minor} and source device of the filesystem mounted at {@code /} (the last mount wins). */
    private static String[] rootMount() {
        String table = readText("/proc/self/mountinfo");
        if (table == null) return null;
        String[] found = null;
        for (String line : table.split("\n")) {
            int dash = line.indexOf(" - ");
            if (dash < 0) continue;
            String[] fields = line.substring(0, dash).split(" ");
            String[] after = line.substring(dash + 3).split(" ");
            if (fields.length > 4 && fields[4].equals("/") && !fields[2].isEmpty()) found = new String[] {fields[2], after.length > 1 ? after[1] : ""};
        }
        return found;
    }
}
