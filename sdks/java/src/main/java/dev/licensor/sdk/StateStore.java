package dev.licensor.sdk;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Where a {@link LicenceClient} keeps what it knows per licence: the last verified answer, the
 * newest term seen and the clock offset. {@link #files(Path)} keeps it in the state format shared
 * by every Licensor SDK (one {@code <lid>.json} per licence under {@code <root>/<slug>/<productKey>/}),
 * so two SDKs on one computer agree; {@link #memory()} keeps it for the life of the process only.
 */
public abstract class StateStore {
    StateStore() {}

    /** The per-licence state. {@code answer} is null when there is none; the other two survive its clearing. */
    record State(Long newestIat, Long offsetMs, StoredAnswer answer) {
        static final State EMPTY = new State(null, null, null);
    }

    /**
     * A verified answer's signed fields (the exact strings), its receipt and its unsigned
     * {@code renewed} and {@code converted} (a converted trial, DESIGN.md 18) hints.
     */
    record StoredAnswer(Receipt fields, String receipt, boolean renewed, boolean converted) {}

    abstract State load(String slug, String productKey, String lid) throws IOException;

    /** Loads, changes and saves one licence's state so that no concurrent writer's fields are lost. */
    abstract void update(String slug, String productKey, String lid, UnaryOperator<State> change) throws IOException;

    /** The product's directory, where the air-gap files live (DESIGN.md 14); null for a memory-only store. */
    abstract Path productDirectory(String slug, String productKey) throws IOException;

    /** The licence's queue of usage events, {@code <root>/usage/<lid>} (DESIGN.md 19); null for a memory-only store. */
    abstract Path usageDirectory(String lid) throws IOException;

    /** The licence's kept feed token, {@code <lid>.feed.json} beside its state (DESIGN.md 20); null for a memory-only store. */
    abstract Path feedFile(String slug, String productKey, String lid) throws IOException;

    /** Creates the directory and its missing parents, private (0700) where the file system allows. */
    static void createDirectories(Path directory) throws IOException {
        Files_.createPrivateDirectories(directory);
    }

    /** Work done holding a lock file. */
    interface Locked<T> {
        T run() throws IOException, LicensorException;
    }

    /** Runs {@code body} holding the lock file {@code lockName} of {@code directory} (made private if missing), taken like a licence's. */
    static <T> T locked(Path directory, String lockName, Locked<T> body) throws IOException, LicensorException {
        Files_.createPrivateDirectories(directory);
        Path lock = directory.resolve(lockName);
        Files_.acquire(lock);
        try {
            return body.run();
        } finally {
            Files.deleteIfExists(lock);
        }
    }

    /** A file's text, or null when it cannot be read. */
    static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException unreadable) {
            return null;
        }
    }

    /** Writes a private temporary file beside {@code file} and renames it over it, so a reader never sees half a file. */
    static void replace(Path file, String text) throws IOException {
        Path temporary = file.resolveSibling(file.getFileName() + "." + ProcessHandle.current().pid() + "." + Long.toHexString(Files_.RANDOM.nextLong()) + ".tmp");
        try {
            Files_.write(temporary, text);
            try {
                Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException notAtomic) {
                Files.move(temporary, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(temporary);
        }
    }

    /** Keeps state in memory for the life of the process. */
    public static StateStore memory() {
        return new Memory();
    }

    /** Keeps state in files under {@code root} (the shared format). */
    public static StateStore files(Path root) {
        return new Files_(root);
    }

    /** Keeps state in files under {@link #defaultDirectory()}. */
    public static StateStore files() {
        return files(defaultDirectory());
    }

    /**
     * The user's configuration directory for Licensor: {@code $XDG_CONFIG_HOME/licensor} or
     * {@code ~/.config/licensor} (Linux and others), {@code ~/Library/Application Support/licensor}
     * (macOS), {@code %APPDATA%\licensor} (Windows).
     */
    public static Path defaultDirectory() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String home = System.getProperty("user.home");
        if (os.startsWith("windows")) {
            String appData = System.getenv("APPDATA");
            return appData != null && !appData.isEmpty() ? Paths.get(appData, "licensor") : Paths.get(home, "AppData", "Roaming", "licensor");
        }
        if (os.startsWith("mac")) return Paths.get(home, "Library", "Application Support", "licensor");
        String xdg = System.getenv("XDG_CONFIG_HOME");
        return xdg != null && !xdg.isEmpty() ? Paths.get(xdg, "licensor") : Paths.get(home, ".config", "licensor");
    }

    private static final class Memory extends StateStore {
        private final Map<String, State> states = new HashMap<>();

        @Override
        synchronized State load(String slug, String productKey, String lid) {
            return states.getOrDefault(slug + '\n' + productKey + '\n' + lid, State.EMPTY);
        }

        @Override
        synchronized void update(String slug, String productKey, String lid, UnaryOperator<State> change) {
            states.put(slug + '\n' + productKey + '\n' + lid, change.apply(load(slug, productKey, lid)));
        }

        @Override
        Path productDirectory(String slug, String productKey) {
            return null;
        }

        @Override
        Path usageDirectory(String lid) {
            return null;
        }

        @Override
        Path feedFile(String slug, String productKey, String lid) {
            return null;
        }
    }

    private static final class Files_ extends StateStore {
        private static final long STALE_LOCK_MS = 10_000;
        private static final long LOCK_WAIT_MS = 5_000;
        private static final SecureRandom RANDOM = new SecureRandom();
        private final Path root;

        Files_(Path root) {
            this.root = root;
        }

        /** Slugs, product keys and lids are this alphabet on the service; anything else never becomes a path. */
        private static final java.util.regex.Pattern PATH_PART = java.util.regex.Pattern.compile("[A-Za-z0-9._-]{1,128}");

        /** {@code <root>/<slug>/<productKey>}; a name that could leave it is refused. */
        private Path directory(String slug, String productKey, String lid) throws IOException {
            for (String name : new String[] {slug, productKey, lid}) {
                if (!PATH_PART.matcher(name).matches() || name.matches("\\.+")) throw new IOException("\"" + name + "\" cannot name a state file");
            }
            return root.resolve(slug).resolve(productKey);
        }

        @Override
        State load(String slug, String productKey, String lid) throws IOException {
            Path file = directory(slug, productKey, lid).resolve(lid + ".json");
            String text;
            try {
                text = Files.readString(file, StandardCharsets.UTF_8);
            } catch (NoSuchFileException none) {
                return State.EMPTY;
            } catch (IOException unreadable) {
                return State.EMPTY;
            }
            return decode(text);
        }

        /** A file that is not this shape counts as empty, but the readable parts of an object are kept. */
        private static State decode(String text) {
            Map<String, Object> object;
            try {
                object = Json.parseObject(text);
            } catch (Json.JsonException | RuntimeException notJson) {
                return State.EMPTY;
            }
            if (!Long.valueOf(1).equals(object.get("format"))) return State.EMPTY;
            Long newestIat = object.get("newestIat") instanceof Long && (Long) object.get("newestIat") >= 0 ? (Long) object.get("newestIat") : null;
            Long offsetMs = object.get("offsetMs") instanceof Long ? (Long) object.get("offsetMs") : null;
            StoredAnswer answer = null;
            if (object.get("answer") instanceof Map) {
                Map<?, ?> a = (Map<?, ?>) object.get("answer");
                String[] names = {"tag", "lid", "status", "nonce", "checkedAt", "boundAt", "fpDigest", "leaseEndsAt", "receipt"};
                String[] values = new String[names.length];
                boolean ok = a.get("renewed") instanceof Boolean && (Receipt.NODE_LOCKED.equals(a.get("tag")) || Receipt.FLOATING.equals(a.get("tag")));
                for (int i = 0; i < names.length && ok; i++) {
                    ok = a.get(names[i]) instanceof String;
                    values[i] = ok ? (String) a.get(names[i]) : null;
                }
                if (ok) {
                    Receipt fields = new Receipt(values[0], values[1], values[2], values[3], values[4], values[5], values[6], values[7]);
                    // converted is optional: files written before trials have none.
                    answer = new StoredAnswer(fields, values[8], (Boolean) a.get("renewed"), Boolean.TRUE.equals(a.get("converted")));
                }
            }
            return new State(newestIat, offsetMs, answer);
        }

        private static String encode(String lid, State state) {
            Map<String, Object> object = new LinkedHashMap<>();
            object.put("format", 1L);
            object.put("lid", lid);
            object.put("newestIat", state.newestIat());
            object.put("offsetMs", state.offsetMs());
            Map<String, Object> answer = null;
            if (state.answer() != null) {
                Receipt f = state.answer().fields();
                answer = new LinkedHashMap<>();
                answer.put("tag", f.tag());
                answer.put("lid", f.lid());
                answer.put("status", f.status());
                answer.put("nonce", f.nonce());
                answer.put("checkedAt", f.checkedAt());
                answer.put("boundAt", f.boundAt());
                answer.put("fpDigest", f.fpDigest());
                answer.put("leaseEndsAt", f.leaseEndsAt());
                answer.put("receipt", state.answer().receipt());
                answer.put("renewed", state.answer().renewed());
                answer.put("converted", state.answer().converted());
            }
            object.put("answer", answer);
            return Json.write(object) + "\n";
        }

        @Override
        void update(String slug, String productKey, String lid, UnaryOperator<State> change) throws IOException {
            Path directory = directory(slug, productKey, lid);
            try {
                locked(directory, lid + ".lock", () -> {
                    replace(directory.resolve(lid + ".json"), encode(lid, change.apply(load(slug, productKey, lid))));
                    return null;
                });
            } catch (LicensorException impossible) {
                throw new IllegalStateException(impossible);
            }
        }

        @Override
        Path productDirectory(String slug, String productKey) throws IOException {
            return directory(slug, productKey, "air-gap");
        }

        @Override
        Path feedFile(String slug, String productKey, String lid) throws IOException {
            return directory(slug, productKey, lid).resolve(lid + ".feed.json");
        }

        @Override
        Path usageDirectory(String lid) throws IOException {
            directory("usage", "usage", lid);
            return root.resolve("usage").resolve(lid);
        }

        /** A new file, private from the start where the file system has POSIX permissions, flushed to disk. */
        private static void write(Path file, String text) throws IOException {
            java.util.Set<java.nio.file.OpenOption> options = java.util.Set.of(java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE);
            boolean posix = file.getFileSystem().supportedFileAttributeViews().contains("posix");
            java.nio.file.attribute.FileAttribute<?>[] attributes = posix
                ? new java.nio.file.attribute.FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))}
                : new java.nio.file.attribute.FileAttribute<?>[0];
            try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(file, options, attributes)) {
                java.nio.ByteBuffer bytes = StandardCharsets.UTF_8.encode(text);
                while (bytes.hasRemaining()) channel.write(bytes);
                channel.force(true);
            }
            // The umask may have narrowed the mode further, never widened it; make it exact.
            restrict(file, "rw-------");
        }

        /** Takes the lock file (O_CREAT|O_EXCL), removing one older than 10 s, waiting up to 5 s. */
        private static void acquire(Path lock) throws IOException {
            long deadline = System.currentTimeMillis() + LOCK_WAIT_MS;
            while (true) {
                try {
                    Files.createFile(lock);
                    return;
                } catch (FileAlreadyExistsException held) {
                    try {
                        if (System.currentTimeMillis() - Files.getLastModifiedTime(lock).toMillis() > STALE_LOCK_MS) {
                            Files.deleteIfExists(lock);
                            continue;
                        }
                    } catch (NoSuchFileException released) {
                        continue;
                    }
                    if (System.currentTimeMillis() > deadline) throw new IOException("the state file is locked by another process: " + lock);
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        throw new IOException("interrupted while waiting for " + lock);
                    }
                }
            }
        }

        private static void createPrivateDirectories(Path directory) throws IOException {
            if (Files.isDirectory(directory)) return;
            Path parent = directory.getParent();
            if (parent != null) createPrivateDirectories(parent);
            try {
                Files.createDirectory(directory);
                restrict(directory, "rwx------");
            } catch (FileAlreadyExistsException raced) {
                // another process made it first
            }
        }

        /** POSIX permissions where the file system has them (not on Windows, where the profile is private already). */
        private static void restrict(Path path, String permissions) throws IOException {
            try {
                Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(permissions));
            } catch (UnsupportedOperationException notPosix) {
                // Windows: the user's profile directory is private to the user
            }
        }
    }
}
