package dev.licensor.sdk;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * Online checks of one licence on this machine (DESIGN.md 2 and 6): {@link #check()} with a fresh
 * nonce and the verdict from the receipt's signed fields only, the last verified answer kept in a
 * {@link StateStore}, clock-rollback detection, term anti-rollback, {@link #fetch()} and
 * {@link #release()} on request only. Build one with {@link #builder()}; thread-safe (one call at a time).
 */
public final class LicenceClient {
    private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    /** How far a remembered clock offset is believed: an edited state file cannot stretch an answer's life by more. */
    private static final long MAX_OFFSET_MS = 24 * 3_600_000L;
    /** Latency between the service signing checkedAt and the answer arriving is not a rollback. */
    private static final long ROLLBACK_TOLERANCE_MS = 60_000;
    /** A floating lease's end is judged with the remembered offset believed this far only (DESIGN.md 13). */
    private static final long MAX_LEASE_OFFSET_MS = 60_000;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final java.time.format.DateTimeFormatter ISO =
        java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(java.time.ZoneOffset.UTC);

    private final LicenceVerifier verifier;
    private final PublicKeys keys;
    private final CheckApi api;
    private final StateStore store;
    private final Clock clock;
    private final String machineLabel;
    private final String stableId;
    private final String productKey;
    private final String slug;
    /** {@code {baseUrl}/o/{slug}/api/public/feeds/}: a feed token's paths follow. */
    private final String feedsUrl;
    private String fingerprint;
    private String licence;
    /** The newest term seen by this client, beside the one remembered in the store. */
    private long newestIat;
    /** The feed token a memory-only store cannot keep (DESIGN.md 20). */
    private KeptFeed feed;
    /** This client's last verified usage answer (DESIGN.md 19). */
    private SignedUsage lastUsage;
    /** Nothing is sent to the usage endpoint before this time (ms), after a 429's Retry-After. */
    private long usageRetryAt;

    private LicenceClient(Builder b, boolean trial) throws LicensorException {
        // A trial's client gets its licence from the service, and pins the product instead.
        String[] last = trial ? new String[] {"productKey", b.productKey} : new String[] {"licence", b.licence};
        String[][] required = {{"baseUrl", b.baseUrl}, {"slug", b.slug}, {"checkId", b.checkId}, {"checkToken", b.checkToken}, last};
        for (String[] option : required) {
            if (option[1] == null || option[1].isEmpty()) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, option[0] + " must be a non-empty string");
        }
        if (!b.checkToken.startsWith("svcc_" + b.checkId + "_")) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "checkToken must be the whole svcc_<checkId>_<secret> token for this checkId");
        }
        if (b.machineLabel != null && !b.machineLabel.matches("[\\x20-\\x7e]{1,64}")) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "machineLabel must be 1 to 64 printable characters");
        }
        if (b.timeout.isNegative() || b.timeout.isZero()) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "timeout must be positive");
        if (!trial && "OFFLINE".equals(licenceType(b.licence))) {
            throw new LicensorException(LicensorException.Reason.NOT_CHECKABLE, "an OFFLINE licence has no check path: use LicenceVerifier");
        }
        this.verifier = LicenceVerifier.builder().publicKeys(b.keys).productKey(b.productKey).organisation(b.slug).stableId(b.stableId).clock(b.clock).build();
        this.keys = verifier.keys();
        String url = b.baseUrl.replaceAll("/+$", "") + "/o/" + encode(b.slug) + "/api/public/license/" + encode(b.checkId);
        HttpClient http = b.http != null ? b.http : HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(b.timeout).build();
        this.api = new CheckApi(url, b.checkToken, b.timeout, http);
        this.store = b.store != null ? b.store : StateStore.files();
        this.clock = b.clock;
        this.machineLabel = b.machineLabel;
        this.stableId = b.stableId;
        this.fingerprint = b.fingerprint;
        this.licence = trial ? null : b.licence;
        this.productKey = b.productKey;
        this.slug = b.slug;
        this.feedsUrl = b.baseUrl.replaceAll("/+$", "") + "/o/" + encode(b.slug) + "/api/public/feeds/";
    }

    private static String encode(String segment) {
        return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** A new builder. Required: baseUrl, slug, checkId, checkToken, publicKeys, licence. */
    public static Builder builder() {
        return new Builder();
    }

    /** Options of a {@link LicenceClient}. */
    public static final class Builder {
        private String baseUrl;
        private String slug;
        private String checkId;
        private String checkToken;
        private final List<Object> keys = new ArrayList<>();
        private String licence;
        private String productKey;
        private StateStore store;
        private Clock clock = Clock.systemUTC();
        private Duration timeout = DEFAULT_TIMEOUT;
        private HttpClient http;
        private String fingerprint;
        private String stableId;
        private String machineLabel;

        private Builder() {}

        /** The service's address, e.g. {@code https://licensing.example.com}. */
        public Builder baseUrl(String baseUrl) { this.baseUrl = baseUrl; return this; }

        /** The organisation's slug (also pins licences to this organisation). */
        public Builder slug(String slug) { this.slug = slug; return this; }

        /** The product's check id. */
        public Builder checkId(String checkId) { this.checkId = checkId; return this; }

        /** The whole check token, {@code svcc_<checkId>_<secret>}; it identifies, it is not a secret. */
        public Builder checkToken(String checkToken) { this.checkToken = checkToken; return this; }

        /** The product's public key(s) as SPKI PEM, its key history: any of them may have signed. */
        public Builder publicKeys(String... pems) { keys.addAll(List.of(pems)); return this; }

        /** The product's public key(s) as JDK keys. */
        public Builder publicKeys(java.security.PublicKey... publicKeys) { keys.addAll(List.of(publicKeys)); return this; }

        /** The licence string this installation holds. */
        public Builder licence(String licence) { this.licence = licence; return this; }

        /** The product key this application is: a licence signed for another product is {@code WRONG_PRODUCT}. */
        public Builder productKey(String productKey) { this.productKey = productKey; return this; }

        /** Where the answer, newest term and clock offset are kept (default {@link StateStore#files()}). */
        public Builder store(StateStore store) { this.store = store; return this; }

        /** The local clock (default the system clock). */
        public Builder clock(Clock clock) { this.clock = clock; return this; }

        /** Per request (default 10 s); a slower answer is no answer. */
        public Builder timeout(Duration timeout) { this.timeout = timeout; return this; }

        /** The HTTP client to use (default one speaking HTTP/1.1 with the timeout as connect timeout). */
        public Builder httpClient(HttpClient http) { this.http = http; return this; }

        /** This machine's fingerprint, when the application collected it itself. */
        public Builder fingerprint(String fingerprint) { this.fingerprint = fingerprint; return this; }

        /** Replaces the operating system's machine id when the fingerprint is collected. */
        public Builder stableId(String stableId) { this.stableId = stableId; return this; }

        /** A name for this machine that its user agreed to share (1 to 64 printable characters), shown to the vendor beside the seat. */
        public Builder machineLabel(String machineLabel) { this.machineLabel = machineLabel; return this; }

        /**
         * @throws LicensorException {@code INVALID_OPTIONS} for a missing or malformed option,
         *     {@code NOT_CHECKABLE} for an OFFLINE licence, {@code INVALID_KEY} for unreadable keys
         */
        public LicenceClient build() throws LicensorException {
            return new LicenceClient(this, false);
        }

        /**
         * Starts a trial of the product on this machine (DESIGN.md 18), or gets this machine's own
         * trial back (after a reinstall, or a retry): call it from the application's first run or a
         * "Start trial" button, never from an installer. Takes the options without a licence;
         * {@code productKey} is needed, and a file state store (the installation's device key lives
         * on disk). {@code email} (null for none) needs the user's consent.
         *
         * @throws LicensorException {@code TRIALS_OFF}; {@code TRIAL_USED} with {@link LicensorException#matched()};
         *     {@code HTTP_STATUS} (a 429 with {@link LicensorException#retryAfterSeconds()}), {@code TIMEOUT},
         *     {@code NETWORK}, {@code BAD_RESPONSE}; {@code BAD_LICENCE} when the licence does not verify with
         *     the product's keys, is not a trial, or is for another product or machine; {@code BAD_RECEIPT};
         *     {@code OLDER_TERM}; {@code INVALID_OPTIONS} for the options or a memory-only store
         */
        public TrialStart startTrial(String email) throws LicensorException {
            if (licence != null) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "a trial takes no licence: the service makes it");
            if (email != null && email.isEmpty()) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "email must be a non-empty string when given");
            LicenceClient client = new LicenceClient(this, true);
            synchronized (client) {
                return client.startTrial(email);
            }
        }
    }

    /** The licence string in use: the one given, or the term {@link #fetch()} last returned. */
    public synchronized String licence() {
        return licence;
    }

    /** This machine's fingerprint, collected once. */
    public synchronized String fingerprint() {
        if (fingerprint == null) fingerprint = Fingerprint.collect(stableId).value();
        return fingerprint;
    }

    /**
     * The end of the update window (DESIGN.md 20), offline from the newest verified term: its {@code upd},
     * else its grace end (a trial's end), else empty (every release); empty too when the licence does not
     * verify. It means nothing for a product whose parameter is named {@code upd}.
     */
    public synchronized Optional<Instant> updatesUntil() {
        return verify(licence, clock.millis()).claims().flatMap(LicenceClaims::updatesUntil);
    }

    /** {@link #checkForUpdate(String, String, String, String)} for this machine's platform and arch, on the stable channel. */
    public UpdateCheck checkForUpdate(String currentVersion) throws LicensorException {
        return checkForUpdate(currentVersion, null, null, null);
    }

    /**
     * Asks the licence's latest.json feed for the highest release above {@code currentVersion}
     * that this licence may download (DESIGN.md 20; docs/protocol.md section 16). The feed token is
     * kept per licence ({@code <lid>.feed.json} beside its state) and asked for when none is kept;
     * a 403 forgets it, and a kept one is asked for again, once. The update is kept only when a
     * manifest signature by one of the client's keys verifies and the manifest names this
     * organisation, this product, the update's version and channel, a version above
     * {@code currentVersion} and each of the update's files as the update lists it.
     *
     * @param platform linux, darwin, windows or any; null for this machine's
     * @param arch x86_64, aarch64, i686, armv7, riscv64, universal or any; null for this machine's
     * @param channel stable, rc, beta, alpha or dev (a channel offers the ones before it too); null for stable
     * @throws LicensorException {@code INVALID_OPTIONS} (a version that is not SemVer, another value;
     *     nothing sent), {@code BAD_LICENCE}, {@code HTTP_STATUS} (with {@link LicensorException#serviceReason()}),
     *     {@code TIMEOUT}, {@code NETWORK}, {@code BAD_RESPONSE} or {@code BAD_MANIFEST}
     */
    public synchronized UpdateCheck checkForUpdate(String currentVersion, String platform, String arch, String channel) throws LicensorException {
        String query = Releases.query(currentVersion, platform, arch, channel);
        LicenceClaims claims = signedClaims();
        KeptFeed kept = keptFeed(claims);
        KeptFeed feed = kept != null ? kept : askFeed(claims);
        Map<String, Object> body;
        try {
            body = api.get(feedsUrl + encode(feed.token()) + "/latest.json?" + query);
        } catch (LicensorException refused) {
            if (!Integer.valueOf(403).equals(refused.status())) throw refused;
            // A reset, a new seat or a revocation: the token is worth nothing now.
            forgetFeed(claims);
            if (kept == null) throw refused;
            body = api.get(feedsUrl + encode(askFeed(claims).token()) + "/latest.json?" + query);
        }
        UpdateCheck found = Releases.read(body);
        if (found.update().isEmpty()) return found;
        Update update = found.update().get();
        Map<String, Releases.SignedFile> files = Releases.verify(update, keys, slug, productOf(claims));
        if (Releases.compare(update.version(), currentVersion) <= 0) {
            throw new LicensorException(LicensorException.Reason.BAD_MANIFEST, "the update's version " + update.version() + " is not above " + currentVersion);
        }
        for (Update.Artifact a : update.artifacts()) {
            if (!new Releases.SignedFile(a.platform(), a.arch(), a.size(), a.sha256()).equals(files.get(a.filename()))) {
                throw new LicensorException(LicensorException.Reason.BAD_MANIFEST, "the update's manifest does not list " + a.filename() + " as the update does");
            }
        }
        return found;
    }

    /**
     * Streams one of the update's files (by filename) from its URL (the feed token in it: no
     * credential is sent) to a temporary file in the folder {@code to} (made if missing), renamed
     * to {@code to/filename} only when its size and SHA-256 are the signed manifest's; otherwise
     * it is deleted. The timeout holds between chunks, not for the whole file.
     *
     * @throws LicensorException {@code INVALID_OPTIONS} (a filename the update does not list, a folder
     *     that cannot be written), {@code BAD_MANIFEST}, {@code DIGEST_MISMATCH}, {@code HTTP_STATUS}
     *     (with its reason), {@code TIMEOUT}, {@code NETWORK}
     */
    public DownloadedFile download(Update update, String filename, Path to) throws LicensorException {
        Update.Artifact artifact = update == null || filename == null ? null
            : update.artifacts().stream().filter(a -> a.filename().equals(filename)).findFirst().orElse(null);
        if (artifact == null || !Releases.FILENAME.matcher(filename).matches() || filename.contains("..")) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "the update lists no file \"" + filename + "\"");
        }
        if (to == null) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "to must be the folder to download into");
        String product;
        synchronized (this) {
            product = productOf(signedClaims());
        }
        Releases.SignedFile signed = Releases.verify(update, keys, slug, product).get(filename);
        if (signed == null) throw new LicensorException(LicensorException.Reason.BAD_MANIFEST, "the update's manifest does not list " + filename);
        Path target = to.resolve(filename);
        Path temporary;
        try {
            java.nio.file.Files.createDirectories(to);
            // In the same folder, so the move is atomic; a leading dot keeps it out of ordinary listings.
            temporary = java.nio.file.Files.createTempFile(to, "." + filename + ".", ".part");
        } catch (IOException unwritable) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "the file cannot be written in " + to + ": " + unwritable.getMessage());
        }
        try {
            String sha256 = Releases.keep(api.open(artifact.url()), temporary, signed, api.timeout());
            if (sha256 == null) {
                throw new LicensorException(LicensorException.Reason.DIGEST_MISMATCH, filename + " is not the file the manifest signed (size or SHA-256 differ): it was deleted");
            }
            java.nio.file.Files.move(temporary, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            return new DownloadedFile(target, signed.size(), sha256);
        } catch (IOException unkept) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "the file cannot be kept as " + target + ": " + unkept.getMessage());
        } finally {
            try {
                java.nio.file.Files.deleteIfExists(temporary);
            } catch (IOException undeletable) {
                // A temporary name only, never the file kept.
            }
        }
    }

    /**
     * Asks for the licence's feed token (the same one until the download links are reset or this
     * machine takes a new seat), keeps it and answers its feeds; when no answer comes
     * ({@code TIMEOUT}, {@code NETWORK}) it answers the kept ones.
     *
     * @throws LicensorException {@code BAD_LICENCE}, {@code HTTP_STATUS} (a refusal, with its reason),
     *     {@code TIMEOUT} or {@code NETWORK} with none kept, {@code BAD_RESPONSE}
     */
    public synchronized FeedUrls feedUrls() throws LicensorException {
        LicenceClaims claims = signedClaims();
        try {
            return askFeed(claims).urls();
        } catch (LicensorException none) {
            boolean noAnswer = none.reason() == LicensorException.Reason.TIMEOUT || none.reason() == LicensorException.Reason.NETWORK;
            KeptFeed kept = noAnswer ? keptFeed(claims) : null;
            if (kept == null) throw none;
            return kept.urls();
        }
    }

    /** The licence in use verified offline: a download needs only its signature (an expired licence keeps what its window covers). */
    private LicenceClaims signedClaims() throws LicensorException {
        LicenceVerification verified = verify(licence, clock.millis());
        return verified.claims().orElseThrow(() -> new LicensorException(LicensorException.Reason.BAD_LICENCE,
            "the licence in use does not verify: " + verified.message().orElse("")));
    }

    private String productOf(LicenceClaims claims) {
        return productKey != null ? productKey : claims.product();
    }

    /** A feed token and its URLs, kept per licence (docs/protocol.md section 8). */
    private record KeptFeed(String lid, String token, FeedUrls urls) {}

    /** The file of the licence's kept feed, or null with a memory-only store (or a name that cannot be a path). */
    private Path feedFile(LicenceClaims claims) {
        try {
            return store.feedFile(claims.organisation(), claims.product(), claims.lid());
        } catch (IOException unnamable) {
            return null;
        }
    }

    /** The licence's kept feed, or null (none, unreadable, another licence's). */
    private KeptFeed keptFeed(LicenceClaims claims) {
        Path file = feedFile(claims);
        if (file == null) return feed != null && feed.lid().equals(claims.lid()) ? feed : null;
        String text = StateStore.read(file);
        try {
            Map<String, Object> kept = text == null ? Map.of() : Json.parseObject(text);
            if (!Long.valueOf(1).equals(kept.get("format")) || !claims.lid().equals(kept.get("lid"))) return null;
            return feedOf(claims.lid(), kept);
        } catch (Json.JsonException | LicensorException unreadable) {
            return null;
        }
    }

    /** A {@code {token, urls}} object as a feed, or BAD_RESPONSE. */
    private static KeptFeed feedOf(String lid, Map<String, Object> body) throws LicensorException {
        String[] urls = body.get("urls") instanceof Map<?, ?> u ? Update.texts(u, "electron", "tauri", "sparkle", "json") : null;
        if (!(body.get("token") instanceof String token) || token.isEmpty() || urls == null) {
            throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the feed-token answer lacks its token or URLs");
        }
        return new KeptFeed(lid, token, new FeedUrls(urls[0], urls[1], urls[2], urls[3]));
    }

    /** Asks the service for the licence's feed token and keeps it (unkept, it still serves this call). */
    private KeptFeed askFeed(LicenceClaims claims) throws LicensorException {
        Map<String, Object> sent = new LinkedHashMap<>();
        sent.put("license", licence);
        sent.put("fingerprint", fingerprint());
        KeptFeed asked = feedOf(claims.lid(), api.post("feed-token", sent));
        Path file = feedFile(claims);
        if (file == null) {
            feed = asked;
            return asked;
        }
        Map<String, Object> urls = new LinkedHashMap<>();
        urls.put("electron", asked.urls().electron());
        urls.put("tauri", asked.urls().tauri());
        urls.put("sparkle", asked.urls().sparkle());
        urls.put("json", asked.urls().json());
        Map<String, Object> kept = new LinkedHashMap<>();
        kept.put("format", 1L);
        kept.put("lid", asked.lid());
        kept.put("token", asked.token());
        kept.put("urls", urls);
        try {
            StateStore.createDirectories(file.getParent());
            StateStore.replace(file, Json.write(kept) + "\n");
        } catch (IOException | RuntimeException notKept) {
            // The next call asks for a token again.
        }
        return asked;
    }

    private void forgetFeed(LicenceClaims claims) {
        feed = null;
        Path file = feedFile(claims);
        try {
            if (file != null) java.nio.file.Files.deleteIfExists(file);
        } catch (IOException undeletable) {
            // Refused again, it is forgotten again.
        }
    }

    /** Verifies the licence in use offline, as {@link #check()} does first. */
    public synchronized LicenceVerification verify() {
        return verify(licence, clock.millis());
    }

    private LicenceVerification verify(String text, long nowMs) {
        return verifier.verify(text, Instant.ofEpochMilli(nowMs), fingerprint());
    }

    /**
     * Asks the service about the licence with a fresh nonce and judges its answer by the signed
     * fields only. Never throws for what the service does: a timeout, any status but 200, an
     * unparseable body or a receipt that does not verify is "no answer", and the state rests on
     * the last verified answer.
     */
    public synchronized CheckResult check() {
        return ask("check", null);
    }

    /**
     * Borrows this machine's lease of a floating licence until {@code until} (DESIGN.md 13), for
     * a laptop going offline: the machine must hold a live lease (check first), and {@code until}
     * may be at most the licence's {@code brw} seconds ahead. Answers like {@link #check()}: the
     * service's refusals (403 when borrowing is off, all borrowable seats are borrowed or no lease
     * is held; 400 beyond {@code brw}) are no answer, with their status. The application keeps
     * working offline until the signed lease end.
     *
     * @throws LicensorException {@code INVALID_OPTIONS} when the licence is not a floating one
     */
    public synchronized CheckResult borrow(Instant until) throws LicensorException {
        boolean floating = verify(licence, clock.millis()).claims().map(c -> c.version() == 5).orElse(false);
        if (!floating || until == null) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "borrowing needs a floating licence and a time to borrow until");
        return ask("borrow", until);
    }

    private TrialStart startTrial(String email) throws LicensorException {
        Path directory;
        try {
            directory = store.productDirectory(slug, productKey);
        } catch (IOException unnamable) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, unnamable.getMessage());
        }
        if (directory == null) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS,
            "a trial counts installations by a device key kept on disk: it needs a file state store, not a memory-only one");
        String dpk = new AirGapFiles(directory).devicePublicKey(fingerprint());
        long now = clock.millis();
        String nonce = nonce();
        Map<String, Object> sent = new LinkedHashMap<>();
        sent.put("fingerprint", fingerprint());
        sent.put("nonce", nonce);
        sent.put("devicePublicKey", dpk);
        if (email != null) sent.put("email", email);
        if (machineLabel != null) sent.put("machineLabel", machineLabel);
        CheckApi.Answer answered = api.send("trial", sent);
        Map<String, Object> body = answered.body();
        if (!(body.get("license") instanceof String)) throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the trial answer has no licence string");
        String text = (String) body.get("license");
        LicenceVerification verified = verify(text, now);
        LicenceClaims claims = verified.claims().orElseThrow(() -> new LicensorException(LicensorException.Reason.BAD_LICENCE,
            "the trial licence does not verify: " + verified.message().orElse("")));
        if (!claims.trial()) throw new LicensorException(LicensorException.Reason.BAD_LICENCE, "the licence answered is not a trial");
        if (verified.reasons().contains(LicenceVerification.Refusal.WRONG_PRODUCT)) throw new LicensorException(LicensorException.Reason.BAD_LICENCE, "the trial licence is for another product");
        if (!verified.fingerprintMatch().orElse(false)) throw new LicensorException(LicensorException.Reason.BAD_LICENCE, "the trial licence is for another machine");
        if (!claims.lid().equals(body.get("lid"))) throw new LicensorException(LicensorException.Reason.BAD_LICENCE, "the answer is not the trial licence's");
        StateStore.State state = loadState(claims);
        long newest = Math.max(newestIat, state.newestIat() == null ? 0 : state.newestIat());
        if (claims.issuedAt() < newest) throw new LicensorException(LicensorException.Reason.OLDER_TERM, "the trial term answered is older than one already seen");
        Answer fresh = verifyAnswer(body, claims, nonce, now);
        licence = text;
        // Judged at the service's time, as check() judges a trial: an answered trial may have ended.
        LicenceVerification judged = verify(text, trialNow(fresh, fresh.offsetMs, now));
        CheckResult result = keep(fresh, body, claims, judged, newest, false, now);
        if (!judged.valid()) {
            List<CheckResult.Reason> reasons = new ArrayList<>();
            for (LicenceVerification.Refusal refusal : judged.reasons()) reasons.add(CheckResult.Reason.valueOf(refusal.name()));
            result = new CheckResult(CheckState.INVALID, reasons, result.licence(), result.answer(), result.noAnswer(), result.ageSeconds(),
                result.clockRollback(), result.renewed(), result.serverReason(), result.storeError(), result.leaseEndsAt(), result.airGapped(), result.trial());
        }
        return new TrialStart(this, answered.status() == 201, text, Instant.ofEpochSecond(claims.expiresAt().getAsLong()), result);
    }

    /** A check, or a borrow (a check that asks for a lease until {@code until}). */
    private CheckResult ask(String endpoint, Instant until) {
        long now = clock.millis();
        LicenceVerification verified = verify(licence, now);
        LicenceClaims claims = verified.claims().orElse(null);
        StateStore.State state = claims == null ? StateStore.State.EMPTY : loadState(claims);
        Answer cached = claims == null ? null : remembered(state, claims);
        long keptOffset = state.offsetMs() == null ? 0 : state.offsetMs();
        // A trial ends by the service's time, never by a clock set back (DESIGN.md 18).
        if (claims != null && claims.trial()) verified = verify(licence, trialNow(cached, keptOffset, now));
        // Measured against the answer known before this call: a fresh answer proves itself by its nonce.
        boolean clockRollback = cached != null && serviceNow(cached.offsetMs, now) < cached.checkedAtMs - ROLLBACK_TOLERANCE_MS;
        long newest = Math.max(newestIat, state.newestIat() == null ? 0 : state.newestIat());
        boolean olderTerm = claims != null && claims.issuedAt() < newest;

        // SPEC 4.4 rule 5: a licence that fails locally is never sent.
        if (!verified.valid() || olderTerm) {
            List<CheckResult.Reason> reasons = new ArrayList<>();
            for (LicenceVerification.Refusal refusal : verified.reasons()) reasons.add(CheckResult.Reason.valueOf(refusal.name()));
            if (olderTerm) reasons.add(CheckResult.Reason.OLDER_TERM);
            return judge(cached, keptOffset, now, clockRollback, 0, verified, reasons, null, null, null);
        }

        String nonce = nonce();
        Map<String, Object> sent = new LinkedHashMap<>();
        sent.put("license", licence);
        sent.put("fingerprint", fingerprint());
        sent.put("nonce", nonce);
        if (machineLabel != null) sent.put("machineLabel", machineLabel);
        if (until != null) sent.put("until", ISO.format(until));
        Answer fresh;
        Map<String, Object> body;
        try {
            body = api.post(endpoint, sent);
            fresh = verifyAnswer(body, claims, nonce, now);
        } catch (LicensorException noAnswer) {
            NoAnswer why = new NoAnswer(noAnswer.reason(), Optional.ofNullable(noAnswer.status()), noAnswer.getMessage());
            return orAirGapped(judge(cached, keptOffset, now, clockRollback, maxSeconds(claims), verified, null, why, null, null), claims, now);
        }
        return keep(fresh, body, claims, verified, newest, clockRollback, now);
    }

    /** Keeps a fresh verified answer and judges it (check, borrow and a trial's start). */
    private CheckResult keep(Answer fresh, Map<String, Object> body, LicenceClaims claims, LicenceVerification verified, long newest, boolean clockRollback, long now) {
        // A later verified answer that says not licensed ends an air-gapped activation here (DESIGN.md 14).
        AirGapFiles airGap = fresh.stored.fields().grants() ? null : airGapFilesOrNull(claims);
        if (airGap != null) airGap.end(claims.lid());

        newestIat = Math.max(newest, claims.issuedAt());
        IOException storeError = null;
        long iat = newestIat;
        try {
            store.update(claims.organisation(), claims.product(), claims.lid(), previous -> new StateStore.State(
                Math.max(iat, previous.newestIat() == null ? 0 : previous.newestIat()), fresh.offsetMs, fresh.stored));
        } catch (IOException | RuntimeException failed) {
            storeError = failed instanceof IOException ? (IOException) failed : new IOException(failed.getMessage(), failed);
        }
        String serverReason = body.get("reason") instanceof String ? (String) body.get("reason") : null;
        return judge(fresh, fresh.offsetMs, now, clockRollback, maxSeconds(claims), verified, null, null, serverReason, storeError);
    }

    /** The time a trial is judged at (ms): the later of the service's time and the newest verified checkedAt. */
    private static long trialNow(Answer answer, long offsetMs, long now) {
        long service = serviceNow(offsetMs, now);
        return answer == null ? service : Math.max(service, answer.checkedAtMs);
    }

    private static Optional<TrialStatus> trialStatus(LicenceVerification licence, Answer answer, long offsetMs, long now) {
        LicenceClaims claims = licence.claims().orElse(null);
        if (claims == null || !claims.trial()) return Optional.empty();
        long end = claims.expiresAt().getAsLong() * 1000;
        long left = Math.max(0, Math.floorDiv(end - trialNow(answer, offsetMs, now), 1000));
        return Optional.of(new TrialStatus(Instant.ofEpochMilli(end), left, answer != null && answer.stored.converted()));
    }

    /**
     * Fetches the current term of this licence (after {@link CheckResult#renewed()}), verifies it
     * offline with the product's key(s), checks that it is the same licence ({@code lid}) and not
     * older than a term already seen; then uses it for later checks and returns it (store it for
     * the next start). Never called by {@link #check()}.
     *
     * @throws LicensorException {@code HTTP_STATUS}, {@code TIMEOUT}, {@code NETWORK}, {@code BAD_RESPONSE},
     *     {@code BAD_LICENCE}, {@code LID_MISMATCH} or {@code OLDER_TERM}
     */
    public synchronized String fetch() throws LicensorException {
        long now = clock.millis();
        LicenceVerification current = verify(licence, now);
        LicenceClaims claims = current.claims().orElseThrow(() -> new LicensorException(LicensorException.Reason.BAD_LICENCE,
            "the licence in use does not verify: " + current.message().orElse("")));
        Map<String, Object> sent = new LinkedHashMap<>();
        sent.put("license", licence);
        sent.put("fingerprint", fingerprint());
        Map<String, Object> body = api.post("fetch", sent);
        if (!(body.get("license") instanceof String)) throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the fetch answer has no licence string");
        String text = (String) body.get("license");
        LicenceVerification next = verify(text, now);
        LicenceClaims nextClaims = next.claims().orElseThrow(() -> new LicensorException(LicensorException.Reason.BAD_LICENCE,
            "the fetched licence does not verify: " + next.message().orElse("")));
        if (!nextClaims.lid().equals(claims.lid())) throw new LicensorException(LicensorException.Reason.LID_MISMATCH, "the fetched licence is another licence");
        if (next.reasons().contains(LicenceVerification.Refusal.WRONG_PRODUCT)) throw new LicensorException(LicensorException.Reason.BAD_LICENCE, "the fetched licence is for another product");
        StateStore.State state = loadState(claims);
        long newest = Math.max(Math.max(newestIat, state.newestIat() == null ? 0 : state.newestIat()), claims.issuedAt());
        if (nextClaims.issuedAt() < newest) throw new LicensorException(LicensorException.Reason.OLDER_TERM, "the fetched term is older than one already seen");
        newestIat = nextClaims.issuedAt();
        try {
            store.update(claims.organisation(), claims.product(), claims.lid(), previous -> new StateStore.State(
                Math.max(nextClaims.issuedAt(), previous.newestIat() == null ? 0 : previous.newestIat()), previous.offsetMs(), previous.answer()));
        } catch (IOException | RuntimeException notKept) {
            // The term is verified and in use; this client remembers it, and the caller stores the string.
        }
        licence = text;
        return text;
    }

    /**
     * Frees this machine's seat ("Deactivate this computer", DESIGN.md 12) so the licence can be
     * used on another machine; afterwards the remembered answer is forgotten (never the newest
     * term seen nor the clock offset) and the next {@link #check()} starts fresh.
     *
     * @throws LicensorException {@code BAD_LICENCE} when the licence in use does not verify;
     *     {@code HTTP_STATUS} (403 past the product's self-release limit), {@code TIMEOUT},
     *     {@code NETWORK} or {@code BAD_RESPONSE}
     */
    public synchronized ReleaseResult release() throws LicensorException {
        LicenceVerification verified = verify(licence, clock.millis());
        LicenceClaims claims = verified.claims().orElseThrow(() -> new LicensorException(LicensorException.Reason.BAD_LICENCE,
            "the licence in use does not verify: " + verified.message().orElse("")));
        String nonce = nonce();
        Map<String, Object> sent = new LinkedHashMap<>();
        sent.put("license", licence);
        sent.put("fingerprint", fingerprint());
        sent.put("nonce", nonce);
        Map<String, Object> body = api.post("release", sent);
        if (!nonce.equals(body.get("nonce")) || !claims.lid().equals(body.get("lid")) || !(body.get("released") instanceof Boolean)) {
            throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the release answer is not for this licence and request");
        }
        if ((Boolean) body.get("released")) {
            try {
                forget(claims);
            } catch (IOException | RuntimeException notCleared) {
                // The seat is free either way; the next fresh answer replaces the remembered one.
            }
            return new ReleaseResult(true, Optional.of(String.valueOf(body.get("releasedAt"))), Optional.empty());
        }
        return new ReleaseResult(false, Optional.empty(), Optional.of(String.valueOf(body.get("reason"))));
    }

    /**
     * Starts an air-gapped activation (DESIGN.md 14) on a machine that never reaches the service:
     * a request signed by this installation's device key (made once per product and machine, kept
     * beside the licences' state), replacing any pending one. The vendor's portal or console
     * answers it with a response for {@link #activateAirGapped(String)}.
     *
     * @throws LicensorException {@code BAD_LICENCE} when the licence in use does not verify;
     *     {@code INVALID_OPTIONS} with a memory-only store (the device key lives on disk) or when the state cannot be written
     */
    public synchronized AirGapText createAirGapRequest() throws LicensorException {
        LicenceClaims claims = airGapClaims();
        String request = airGapFiles(claims).request(claims.lid(), fingerprint(), nonce(), Math.floorDiv(clock.millis(), 1000));
        return new AirGapText(request, AirGap.groupsOfFive(request));
    }

    /**
     * Accepts the response to the pending request (pasted or typed: whitespace is ignored). From
     * then until {@link AirGapActivation#until()}, {@link #check()} is VALID on this machine with
     * no network ({@link CheckResult#airGapped()}).
     *
     * @throws LicensorException {@code BAD_ACTIVATION} for a response that does not verify with the
     *     product's keys, or is not for the pending request, this installation, machine and licence,
     *     or is for an activation deactivated here (nothing changes then)
     */
    public synchronized AirGapActivation activateAirGapped(String response) throws LicensorException {
        LicenceClaims claims = airGapClaims();
        AirGap.Signed accepted = airGapFiles(claims).accept(response, claims.lid(), fingerprint(), keys);
        return new AirGapActivation(Instant.ofEpochSecond(accepted.seconds("until")), accepted.string("aid"));
    }

    /**
     * Ends this machine's air-gapped activation: forgets it here first (it is never accepted again),
     * then answers the code this installation's device key signs, for the vendor's portal or
     * console to free the seat.
     *
     * @throws LicensorException {@code BAD_ACTIVATION} when this installation holds no activation of the licence
     */
    public synchronized AirGapText deactivateAirGapped() throws LicensorException {
        LicenceClaims claims = airGapClaims();
        String code = airGapFiles(claims).deactivate(claims.lid(), fingerprint(), Math.floorDiv(clock.millis(), 1000));
        return new AirGapText(code, AirGap.groupsOfFive(code));
    }

    /** The licence in use's claims; air-gapped activation needs a licence that verifies. */
    private LicenceClaims airGapClaims() throws LicensorException {
        LicenceVerification verified = verify(licence, clock.millis());
        return verified.claims().orElseThrow(() -> new LicensorException(LicensorException.Reason.BAD_LICENCE,
            "the licence in use does not verify: " + verified.message().orElse("")));
    }

    /** The product's air-gap files; the device key needs a state directory. */
    private AirGapFiles airGapFiles(LicenceClaims claims) throws LicensorException {
        AirGapFiles files = airGapFilesOrNull(claims);
        if (files == null) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS,
            "air-gapped activation keeps a device key on disk: it needs a file state store, not a memory-only one");
        return files;
    }

    /** The product's air-gap files, or null (memory-only store, or a product that cannot name a directory). */
    private AirGapFiles airGapFilesOrNull(LicenceClaims claims) {
        try {
            Path directory = store.productDirectory(claims.organisation(), claims.product());
            return directory == null ? null : new AirGapFiles(directory);
        } catch (IOException unnamable) {
            return null;
        }
    }

    /**
     * Without a verified answer that says licensed, a kept air-gapped activation of this machine
     * makes the state VALID until its {@code until}, unless a verified answer signed after it said
     * not licensed; a local clock more than 60 s before its {@code iat} is a rollback (STALE).
     */
    private CheckResult orAirGapped(CheckResult result, LicenceClaims claims, long now) {
        AirGapFiles files = airGapFilesOrNull(claims);
        if (result.state() == CheckState.VALID || files == null) return result;
        AirGap.Signed activation = files.usableActivation(claims.lid(), fingerprint(), keys);
        if (activation == null) return result;
        long iatMs = activation.seconds("iat") * 1000;
        Optional<VerifiedAnswer> answer = result.answer();
        if (answer.isPresent() && !answer.get().grants() && answer.get().checkedAt().toEpochMilli() >= iatMs) return result;
        boolean rollback = now < iatMs - ROLLBACK_TOLERANCE_MS;
        if (!rollback && now >= activation.seconds("until") * 1000) return result;
        return new CheckResult(rollback ? CheckState.STALE : CheckState.VALID, List.of(), result.licence(), result.answer(), result.noAnswer(),
            result.ageSeconds(), rollback || result.clockRollback(), result.renewed(), result.serverReason(), result.storeError(), result.leaseEndsAt(), !rollback,
            result.trial());
    }

    /**
     * Counts {@code amount} (1 to 10^9) of {@code meter} for this licence (DESIGN.md 19): the event
     * is written to this machine's queue ({@code <stateDir>/usage/<lid>/}) before anything is sent,
     * then the queue is sent oldest first, and an event leaves it only when a verified receipt
     * gives it a final result, so a crash or an unreachable service loses nothing and a resend
     * counts nothing twice. The service's failures are {@link UsageReport#noAnswer()}, never thrown.
     *
     * @throws LicensorException, adding nothing: {@code INVALID_OPTIONS} (a meter that is not a key, an
     *     amount out of range, a memory-only store), {@code NOT_CHECKABLE} (OFFLINE), {@code BAD_LICENCE},
     *     {@code QUEUE_FULL} (1,000 queued events)
     */
    public synchronized UsageReport recordUsage(String meter, long amount) throws LicensorException {
        if (meter == null || !UsageQueue.METER_KEY.matcher(meter).matches()) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "meter must be a meter key: a letter, then up to 63 letters, digits, \"_\", \".\" or \"-\"");
        }
        if (amount < 1 || amount > UsageQueue.MAX_AMOUNT) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "amount must be an integer from 1 to " + UsageQueue.MAX_AMOUNT);
        LicenceClaims claims = usageClaims();
        UsageQueue queue = usageQueue(claims);
        if (queue == null) throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, "usage events are queued on disk before they are sent: recordUsage needs a file state store");
        StateStore.State state = loadState(claims);
        String at = ISO.format(Instant.ofEpochMilli(serviceNow(state.offsetMs() == null ? 0 : state.offsetMs(), clock.millis())));
        try {
            queue.add(meter, amount, at);
        } catch (IOException failed) {
            throw new UncheckedIOException(failed);
        }
        return sendUsage(claims, queue);
    }

    /** {@link #recordUsage(String, long)} with amount 1. */
    public synchronized UsageReport recordUsage(String meter) throws LicensorException {
        return recordUsage(meter, 1);
    }

    /**
     * Sends this licence's queued events (or none, to read the balances) and reports as {@link #recordUsage} does.
     *
     * @throws LicensorException {@code NOT_CHECKABLE} or {@code BAD_LICENCE}
     */
    public synchronized UsageReport usage() throws LicensorException {
        LicenceClaims claims = usageClaims();
        return sendUsage(claims, usageQueue(claims));
    }

    private LicenceClaims usageClaims() throws LicensorException {
        LicenceVerification verified = verify(licence, clock.millis());
        LicenceClaims claims = verified.claims().orElseThrow(() -> new LicensorException(LicensorException.Reason.BAD_LICENCE,
            "the licence in use does not verify: " + verified.message().orElse("")));
        if (claims.type().map("OFFLINE"::equals).orElse(false)) throw new LicensorException(LicensorException.Reason.NOT_CHECKABLE, "an OFFLINE licence has no meters and no check path");
        return claims;
    }

    /** The licence's usage queue, or null with a memory-only store. */
    private UsageQueue usageQueue(LicenceClaims claims) throws LicensorException {
        try {
            Path directory = store.usageDirectory(claims.lid());
            return directory == null ? null : new UsageQueue(directory);
        } catch (IOException unnamable) {
            throw new LicensorException(LicensorException.Reason.INVALID_OPTIONS, unnamable.getMessage());
        }
    }

    /** The signed part of a verified usage answer. */
    private record SignedUsage(String lid, String status, String boundAt, List<String[]> events, List<UsageReport.Balance> meters) {}

    /** Sends the queue in batches until it is empty, an answer is missing or an event is NOT_LICENSED. */
    private UsageReport sendUsage(LicenceClaims claims, UsageQueue queue) {
        List<UsageQueue.Event> queued = queue == null ? List.of() : queue.events();
        Map<String, String> results = new java.util.HashMap<>();
        NoAnswer noAnswer = null;
        IOException storeError = null;
        boolean fresh = false;
        if (clock.millis() < usageRetryAt) {
            noAnswer = new NoAnswer(LicensorException.Reason.HTTP_STATUS, Optional.of(429), "the service asked to wait before sending usage again");
        } else {
            for (int offset = 0; offset == 0 || offset < queued.size(); offset += UsageQueue.BATCH) {
                SignedUsage answer;
                try {
                    answer = postUsage(claims, queued.subList(offset, Math.min(queued.size(), offset + UsageQueue.BATCH)));
                } catch (LicensorException refused) {
                    noAnswer = new NoAnswer(refused.reason(), Optional.ofNullable(refused.status()), refused.getMessage());
                    if (Integer.valueOf(429).equals(refused.status())) {
                        usageRetryAt = clock.millis() + (refused.retryAfterSeconds() == null ? 60 : refused.retryAfterSeconds()) * 1000L;
                    }
                    break;
                }
                fresh = true;
                lastUsage = answer;
                boolean notLicensed = false;
                for (String[] event : answer.events()) {
                    results.put(event[0], event[1]);
                    // Every verified result is final but NOT_LICENSED (DESIGN.md 19).
                    if ("NOT_LICENSED".equals(event[1])) notLicensed = true;
                    else {
                        try {
                            queue.remove(event[0]);
                        } catch (IOException failed) {
                            storeError = failed;
                        }
                    }
                }
                if (notLicensed) break;
            }
        }
        List<UsageReport.Event> events = new ArrayList<>();
        Map<String, Long> waiting = new java.util.HashMap<>();
        for (UsageQueue.Event e : queued) {
            String result = results.getOrDefault(e.id(), UsageReport.QUEUED);
            if (result.equals(UsageReport.QUEUED) || result.equals("NOT_LICENSED")) waiting.merge(e.meter(), e.amount(), Long::sum);
            events.add(new UsageReport.Event(e.id(), e.meter(), e.amount(), result));
        }
        SignedUsage kept = lastUsage != null && lastUsage.lid().equals(claims.lid()) ? lastUsage : null;
        Optional<Boolean> licensed = Optional.empty();
        Optional<CheckResult.Reason> reason = Optional.empty();
        Optional<List<UsageReport.Balance>> meters = Optional.empty();
        if (kept != null) {
            boolean grants = (kept.status().equals("ACTIVE") || kept.status().equals("GRACE")) && !kept.boundAt().isEmpty();
            licensed = Optional.of(grants);
            if (!grants) reason = Optional.of(signedReason(kept.status()));
            List<UsageReport.Balance> balances = new ArrayList<>();
            for (UsageReport.Balance m : kept.meters()) {
                balances.add(new UsageReport.Balance(m.key(), m.used(), m.limit(), m.overage(), m.remaining(), m.resetsAt(), waiting.getOrDefault(m.key(), 0L)));
            }
            meters = Optional.of(List.copyOf(balances));
        }
        int pending = queue == null ? 0 : UsageQueue.pendingElsewhere(queue.directory.getParent(), claims.lid());
        return new UsageReport(licensed, reason, List.copyOf(events), meters, kept == null ? Optional.empty() : Optional.of(fresh), pending,
            Optional.ofNullable(noAnswer), Optional.ofNullable(storeError));
    }

    /**
     * One usage request with a fresh nonce; its signed part once the SVCU1 receipt verifies,
     * rebuilt from the licence's lid, the nonce sent, this machine's fpDigest and the ids sent in
     * order, so an answer to another licence, request, machine or batch cannot verify.
     */
    private SignedUsage postUsage(LicenceClaims claims, List<UsageQueue.Event> batch) throws LicensorException {
        String nonce = nonce();
        Map<String, Object> sent = new LinkedHashMap<>();
        sent.put("license", licence);
        sent.put("fingerprint", fingerprint());
        sent.put("nonce", nonce);
        List<Object> events = new ArrayList<>();
        for (UsageQueue.Event e : batch) events.add(e.json());
        sent.put("events", events);
        Map<String, Object> body = api.post("usage", sent);
        Object status = body.containsKey("status") ? body.get("status") : "";
        Object boundAt = body.containsKey("boundAt") ? body.get("boundAt") : "";
        Object checkedAt = body.get("checkedAt");
        Object receipt = body.get("receipt");
        List<String[]> answered = new ArrayList<>();
        List<UsageReport.Balance> meters = new ArrayList<>();
        boolean listed = readUsageLists(body, answered, meters);
        if (!(status instanceof String && boundAt instanceof String && checkedAt instanceof String && receipt instanceof String) || !listed) {
            throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the usage answer lacks the receipt fields");
        }
        boolean sameIds = answered.size() == batch.size();
        for (int i = 0; sameIds && i < batch.size(); i++) sameIds = answered.get(i)[0].equals(batch.get(i).id());
        byte[] message = UsageQueue.receiptMessage(claims.lid(), (String) status, nonce, (String) checkedAt, (String) boundAt, Fingerprint.digest(fingerprint()), answered, meters);
        byte[] signature = Base64Url.decode((String) receipt);
        if (!sameIds || message == null || signature == null || parseTime((String) checkedAt) == null || !keys.verify(message, signature)) {
            throw new LicensorException(LicensorException.Reason.BAD_RECEIPT, "the usage receipt does not verify for this licence, nonce, machine and events");
        }
        return new SignedUsage(claims.lid(), (String) status, (String) boundAt, List.copyOf(answered), List.copyOf(meters));
    }

    /** Reads the answer's events as {id, result} and meters as their signed fields; false when either is not of that form. */
    private static boolean readUsageLists(Map<String, Object> body, List<String[]> events, List<UsageReport.Balance> meters) {
        if (!(body.get("events") instanceof List) || !(body.get("meters") instanceof List)) return false;
        for (Object item : (List<?>) body.get("events")) {
            if (!(item instanceof Map)) return false;
            Object id = ((Map<?, ?>) item).get("id"), result = ((Map<?, ?>) item).get("result");
            if (!(id instanceof String) || !(result instanceof String)) return false;
            events.add(new String[] {(String) id, (String) result});
        }
        for (Object item : (List<?>) body.get("meters")) {
            if (!(item instanceof Map)) return false;
            Map<?, ?> m = (Map<?, ?>) item;
            Object key = m.get("key"), used = m.get("used"), resetsAt = m.get("resetsAt");
            if (!(key instanceof String) || !(used instanceof Long) || (Long) used < 0 || !(resetsAt == null || resetsAt instanceof String)) return false;
            List<Optional<Long>> counts = countsOf(m);
            if (counts == null) return false;
            meters.add(new UsageReport.Balance((String) key, (Long) used, counts.get(0), counts.get(1), counts.get(2), Optional.ofNullable((String) resetsAt), 0));
        }
        return true;
    }

    /** limit, overage and remaining: each null or an integer of at least 0; null when one is neither. */
    private static List<Optional<Long>> countsOf(Map<?, ?> meter) {
        List<Optional<Long>> counts = new ArrayList<>();
        for (String name : new String[] {"limit", "overage", "remaining"}) {
            Object value = meter.get(name);
            if (value != null && (!(value instanceof Long) || (Long) value < 0)) return null;
            counts.add(Optional.ofNullable((Long) value));
        }
        return counts;
    }

    /**
     * Forgets the remembered answer for the licence in use (never the newest term seen nor the
     * clock offset), so that the state rests on the next verified answer alone.
     *
     * @throws UncheckedIOException when the state cannot be written
     */
    public synchronized void clearCache() {
        verify(licence, clock.millis()).claims().ifPresent(claims -> {
            try {
                forget(claims);
            } catch (IOException failed) {
                throw new UncheckedIOException(failed);
            }
        });
    }

    private void forget(LicenceClaims claims) throws IOException {
        store.update(claims.organisation(), claims.product(), claims.lid(), previous -> new StateStore.State(previous.newestIat(), previous.offsetMs(), null));
    }


    /** The licence's state, kept under its own signed organisation and product; unreadable state is empty. */
    private StateStore.State loadState(LicenceClaims claims) {
        try {
            return store.load(claims.organisation(), claims.product(), claims.lid());
        } catch (IOException | RuntimeException unreadable) {
            return StateStore.State.EMPTY;
        }
    }

    private static String nonce() {
        byte[] bytes = new byte[24];
        RANDOM.nextBytes(bytes);
        return Base64Url.encode(bytes);
    }

    private static String licenceType(String text) {
        try {
            return LicenceVerifier.parse(text).claims.type().orElse(null);
        } catch (LicenceClaims.Malformed malformed) {
            return null;
        }
    }

    /** A verified answer with what the state judgement needs. */
    private static final class Answer {
        final StateStore.StoredAnswer stored;
        final long checkedAtMs;
        final long offsetMs;
        final boolean fresh;

        Answer(StateStore.StoredAnswer stored, long checkedAtMs, long offsetMs, boolean fresh) {
            this.stored = stored;
            this.checkedAtMs = checkedAtMs;
            this.offsetMs = offsetMs;
            this.fresh = fresh;
        }

        VerifiedAnswer view() {
            Receipt f = stored.fields();
            return new VerifiedAnswer(f.status(), Instant.ofEpochMilli(checkedAtMs), instant(f.boundAt()), instant(f.leaseEndsAt()),
                f.grants(), stored.renewed(), fresh, offsetMs);
        }
    }

    private static Optional<Instant> instant(String text) {
        Long ms = parseTime(text);
        return ms == null ? Optional.empty() : Optional.of(Instant.ofEpochMilli(ms));
    }

    /** Milliseconds of an ISO 8601 time with offset, or null. */
    private static Long parseTime(String text) {
        try {
            return OffsetDateTime.parse(text).toInstant().toEpochMilli();
        } catch (DateTimeParseException | ArithmeticException notATime) {
            return null;
        }
    }

    /**
     * Rebuilds the receipt from the answer's status, checkedAt and boundAt and from what this
     * client knows itself (the licence's lid, the nonce it sent, this machine's fpDigest), so a
     * receipt for another licence, nonce or machine cannot verify. The unsigned {@code valid}
     * and {@code reason} are never read for the verdict.
     */
    private Answer verifyAnswer(Map<String, Object> body, LicenceClaims claims, String nonce, long now) throws LicensorException {
        Object status = body.containsKey("status") ? body.get("status") : "";
        Object boundAt = body.containsKey("boundAt") ? body.get("boundAt") : "";
        String tag = Receipt.tagFor(claims);
        // Only SVCR2 signs a lease end; a node-locked answer's is never read.
        Object leaseEndsAt = Receipt.FLOATING.equals(tag) && body.containsKey("leaseEndsAt") ? body.get("leaseEndsAt") : "";
        Object checkedAt = body.get("checkedAt");
        Object receipt = body.get("receipt");
        if (!(status instanceof String && boundAt instanceof String && checkedAt instanceof String && receipt instanceof String && leaseEndsAt instanceof String)) {
            throw new LicensorException(LicensorException.Reason.BAD_RESPONSE, "the answer lacks the receipt fields");
        }
        Receipt fields = new Receipt(tag, claims.lid(), (String) status, nonce, (String) checkedAt, (String) boundAt,
            Fingerprint.digest(fingerprint()), (String) leaseEndsAt);
        StateStore.StoredAnswer stored = new StateStore.StoredAnswer(fields, (String) receipt, Boolean.TRUE.equals(body.get("renewed")),
            Boolean.TRUE.equals(body.get("converted")));
        Long checkedAtMs = parseTime((String) checkedAt);
        Answer answer = checkedAtMs == null ? null : verified(stored, checkedAtMs - now, true);
        if (answer == null) throw new LicensorException(LicensorException.Reason.BAD_RECEIPT, "the receipt does not verify for this licence, nonce and machine");
        return answer;
    }

    private Answer verified(StateStore.StoredAnswer stored, long offsetMs, boolean fresh) {
        Long checkedAtMs = parseTime(stored.fields().checkedAt());
        if (checkedAtMs == null || !stored.fields().verify(stored.receipt(), keys)) return null;
        return new Answer(stored, checkedAtMs, offsetMs, fresh);
    }

    /** The remembered answer if it still verifies for this licence (its tag) and machine; anything else is none. */
    private Answer remembered(StateStore.State state, LicenceClaims claims) {
        StateStore.StoredAnswer stored = state.answer();
        if (stored == null) return null;
        Receipt f = stored.fields();
        if (!f.lid().equals(claims.lid()) || !f.fpDigest().equals(Fingerprint.digest(fingerprint()))) return null;
        // A node-locked term's answers sign no lease end; a floating term's carry the SVCR2 tag.
        if (!f.tag().equals(Receipt.tagFor(claims)) || Receipt.NODE_LOCKED.equals(f.tag()) && !f.leaseEndsAt().isEmpty()) return null;
        return verified(stored, state.offsetMs() == null ? 0 : state.offsetMs(), false);
    }

    /** The signed offline window; a licence without {@code max} gets none, so only a fresh answer is VALID. */
    private static long maxSeconds(LicenceClaims claims) {
        return claims.checkMaxSeconds().orElse(0);
    }

    /** The service's time now, as this machine's clock and the offset seen with the answer tell it. */
    private static long serviceNow(long offsetMs, long now) {
        return now + Math.max(-MAX_OFFSET_MS, Math.min(MAX_OFFSET_MS, offsetMs));
    }

    /**
     * The result from the latest verified answer (the licence already verified offline), or
     * INVALID with {@code offline} when the licence was refused before sending.
     */
    private static CheckResult judge(Answer answer, long keptOffset, long now, boolean clockRollback, long max, LicenceVerification licence,
                                     List<CheckResult.Reason> offline, NoAnswer noAnswer, String serverReason, IOException storeError) {
        Double ageSeconds = answer == null ? null : (serviceNow(answer.offsetMs, now) - answer.checkedAtMs) / 1000.0;
        boolean floating = answer != null && Receipt.FLOATING.equals(answer.stored.fields().tag());
        CheckState state;
        List<CheckResult.Reason> reasons = List.of();
        if (offline != null) {
            state = CheckState.INVALID;
            reasons = offline;
        } else if (answer == null) state = CheckState.STALE;
        else if (!answer.stored.fields().grants()) {
            state = CheckState.INVALID;
            reasons = List.of(signedReason(answer.stored.fields().status()));
        } else if (floating && leaseLapsed(answer, now)) state = CheckState.STALE;
        else if (answer.fresh) state = CheckState.VALID;
        // A floating answer is licensed until its signed lease end, whatever max says (a borrow outlives max).
        else if (clockRollback || !floating && ageSeconds > max) state = CheckState.STALE;
        else state = CheckState.VALID;
        return new CheckResult(state, reasons, licence, Optional.ofNullable(answer).map(Answer::view), Optional.ofNullable(noAnswer),
            ageSeconds == null ? OptionalDouble.empty() : OptionalDouble.of(ageSeconds), clockRollback,
            answer != null && answer.fresh && answer.stored.renewed(), Optional.ofNullable(serverReason), Optional.ofNullable(storeError),
            answer == null ? Optional.empty() : instant(answer.stored.fields().leaseEndsAt()), false,
            trialStatus(licence, answer, answer == null ? keptOffset : answer.offsetMs, now));
    }

    /** The signed lease end has passed, judged with the remembered offset clamped to ±60 s (DESIGN.md 13). */
    private static boolean leaseLapsed(Answer answer, long now) {
        return untilLeaseEnd(answer.stored.fields().leaseEndsAt(), answer.offsetMs, now) <= 0;
    }

    private static long untilLeaseEnd(String leaseEndsAt, long offsetMs, long now) {
        Long end = parseTime(leaseEndsAt);
        return end == null ? 0 : end - (now + Math.max(-MAX_LEASE_OFFSET_MS, Math.min(MAX_LEASE_OFFSET_MS, offsetMs)));
    }

    /** Milliseconds by this client's clock until a floating answer's lease lapses (0 when it has). */
    long untilLeaseLapses(VerifiedAnswer answer) {
        long left = answer.leaseEndsAt().map(end -> untilLeaseEnd(ISO.format(end), answer.offsetMs(), clock.millis())).orElse(0L);
        return Math.max(0, left);
    }

    private static CheckResult.Reason signedReason(String status) {
        switch (status) {
            case "": return CheckResult.Reason.UNKNOWN_LICENCE;
            case "REVOKED": return CheckResult.Reason.REVOKED;
            case "PENDING": return CheckResult.Reason.NOT_YET_VALID;
            case "EXPIRED": return CheckResult.Reason.EXPIRED;
            case "ACTIVE":
            case "GRACE": return CheckResult.Reason.NO_SEAT;
            default: return CheckResult.Reason.NOT_LICENSED;
        }
    }
}
