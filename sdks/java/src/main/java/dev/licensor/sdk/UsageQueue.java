package dev.licensor.sdk;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * One licence's queued usage events, {@code <stateDir>/usage/<lid>/<id>.json} (DESIGN.md 19): each
 * written (temporary name, fsync, rename) before any send and removed only once a verified answer
 * gives it a final result, so a crash loses nothing and a resend counts nothing twice.
 */
final class UsageQueue {
    static final long MAX_AMOUNT = 1_000_000_000L;
    static final int LIMIT = 1000;
    static final int BATCH = 100;
    static final Pattern METER_KEY = Pattern.compile("[A-Za-z][A-Za-z0-9_.-]{0,63}");
    private static final Pattern EVENT_ID = Pattern.compile("[A-Za-z0-9_-]{1,128}");
    private static final Pattern AT = Pattern.compile("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{3})?Z");
    private static final SecureRandom RANDOM = new SecureRandom();

    /** An event as stored and sent, exactly {@code {id, meter, amount, at}}. */
    record Event(String id, String meter, long amount, String at, long atMs) {
        Map<String, Object> json() {
            Map<String, Object> json = new LinkedHashMap<>();
            json.put("id", id);
            json.put("meter", meter);
            json.put("amount", amount);
            json.put("at", at);
            return json;
        }
    }

    final Path directory;

    UsageQueue(Path directory) {
        this.directory = directory;
    }

    private List<Path> files() {
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory, "*.json")) {
            for (Path file : entries) {
                String name = file.getFileName().toString();
                if (EVENT_ID.matcher(name.substring(0, name.length() - 5)).matches()) files.add(file);
            }
        } catch (IOException | RuntimeException none) {
            // a folder that does not exist holds none
        }
        return files;
    }

    /** Queues a new event, or fails QUEUE_FULL with LIMIT events here. */
    void add(String meter, long amount, String at) throws IOException, LicensorException {
        if (files().size() >= LIMIT) throw new LicensorException(LicensorException.Reason.QUEUE_FULL, LIMIT + " usage events are waiting to be sent for this licence");
        byte[] bytes = new byte[16];
        RANDOM.nextBytes(bytes);
        String id = Base64Url.encode(bytes);
        StateStore.createDirectories(directory);
        StateStore.replace(directory.resolve(id + ".json"), Json.write(new Event(id, meter, amount, at, 0).json()) + "\n");
    }

    /** The readable events, oldest first (by {@code at}, then {@code id}); a file that does not read as one is never sent. */
    List<Event> events() {
        List<Event> events = new ArrayList<>();
        for (Path file : files()) {
            String text = StateStore.read(file);
            Map<String, Object> json;
            try {
                json = text == null ? null : Json.parseObject(text);
            } catch (Json.JsonException notJson) {
                json = null;
            }
            if (json == null || json.size() != 4) continue;
            Object id = json.get("id"), meter = json.get("meter"), amount = json.get("amount"), at = json.get("at");
            String name = file.getFileName().toString();
            if (!(id instanceof String) || !name.equals(id + ".json") || !(meter instanceof String) || !METER_KEY.matcher((String) meter).matches()) continue;
            if (!(amount instanceof Long) || (Long) amount < 1 || (Long) amount > MAX_AMOUNT || !(at instanceof String) || !AT.matcher((String) at).matches()) continue;
            long atMs;
            try {
                atMs = Instant.parse((String) at).toEpochMilli();
            } catch (DateTimeParseException notATime) {
                continue;
            }
            events.add(new Event((String) id, (String) meter, (Long) amount, (String) at, atMs));
        }
        events.sort(Comparator.comparingLong(Event::atMs).thenComparing(Event::id));
        return events;
    }

    void remove(String id) throws IOException {
        Files.deleteIfExists(directory.resolve(id + ".json"));
    }

    /** How many events wait in the other licences' folders of {@code <stateDir>/usage/}. */
    static int pendingElsewhere(Path root, String lid) {
        int count = 0;
        try (DirectoryStream<Path> folders = Files.newDirectoryStream(root, Files::isDirectory)) {
            for (Path folder : folders) if (!folder.getFileName().toString().equals(lid)) count += new UsageQueue(folder).events().size();
        } catch (NoSuchFileException none) {
            return 0;
        } catch (IOException | RuntimeException unreadable) {
            return count;
        }
        return count;
    }

    /**
     * UTF-8 of SVCU1 (DESIGN.md 19): {@code SVCU1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest␟E␟(id␟result)…␟M␟
     * (key␟used␟limit␟overage␟remaining␟resetsAt)…}, empty for none, integers as their decimal digits;
     * null when a field is not printable ASCII.
     */
    static byte[] receiptMessage(String lid, String status, String nonce, String checkedAt, String boundAt, String fpDigest,
                                 List<String[]> events, List<UsageReport.Balance> meters) {
        List<String> fields = new ArrayList<>(List.of("SVCU1", lid, status, nonce, checkedAt, boundAt, fpDigest, Integer.toString(events.size())));
        for (String[] event : events) {
            fields.add(event[0]);
            fields.add(event[1]);
        }
        fields.add(Integer.toString(meters.size()));
        for (UsageReport.Balance m : meters) {
            fields.add(m.key());
            fields.add(Long.toString(m.used()));
            fields.add(m.limit().map(String::valueOf).orElse(""));
            fields.add(m.overage().map(String::valueOf).orElse(""));
            fields.add(m.remaining().map(String::valueOf).orElse(""));
            fields.add(m.resetsAt().orElse(""));
        }
        for (String field : fields) if (!field.matches("[\\x20-\\x7e]*")) return null;
        return String.join("\u001f", fields).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
}
