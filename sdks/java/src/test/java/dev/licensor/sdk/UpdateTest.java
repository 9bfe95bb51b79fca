package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** checkForUpdate, download and feedUrls (DESIGN.md 20) against stand-in feeds: one release 2.0.0 with one file, its manifest signed by the Ed25519 vector key. */
class UpdateTest extends ServiceTest {
    private static final byte[] FILE = "the 2.0.0 installer".getBytes(StandardCharsets.UTF_8);
    private int gen = 1;
    private byte[] served = FILE;
    private String product = "acme-cad";
    private Map<String, Object> signer = ED25519;
    private String refuse;
    private String listed = "App.AppImage";
    /** Answer the file with a 303 to the store, as S3 does. */
    private boolean redirect;
    private int feedTokens;

    private String token() {
        return "SVCF1.gen" + gen + ".mac";
    }

    private LicenceClient client() throws Exception {
        return client(StateStore.files(stateDir));
    }

    private LicenceClient client(StateStore store) throws Exception {
        return builder(Vectors.licence(ED25519, "{\"v\":3,\"lid\":\"" + lid + "\",\"prd\":\"acme-cad\",\"org\":\"acme\",\"typ\":\"ONLINE\",\"iat\":" + (NOW / 1000 - 86_400)
            + ",\"exp\":" + (NOW / 1000 + 365 * 86_400) + ",\"grace\":7,\"mm\":1,\"chk\":60,\"max\":3600}")).store(store).build();
    }

    @BeforeEach
    void answer() {
        service.handler = request -> {
            feedTokens++;
            if (refuse != null) return new FakeService.Reply(403, "{\"error\":\"refused\",\"reason\":\"" + refuse + "\"}");
            String base = service.baseUrl() + "/o/acme/api/public/feeds/" + token() + "/";
            return new FakeService.Reply(200, Json.write(Map.of("token", token(), "urls", Map.of("electron", base + "electron/",
                "tauri", base + "tauri/{{target}}/{{arch}}/{{current_version}}", "sparkle", base + "sparkle/appcast.xml", "json", base + "latest.json"))));
        };
        service.feeds = path -> {
            if (path.equals("store/App.AppImage")) return new FakeService.Reply(200, new String(FILE, StandardCharsets.UTF_8));
            if (!path.startsWith(token() + "/")) return new FakeService.Reply(403, "{\"error\":\"this feed URL is no longer valid\"}");
            if (path.endsWith("/latest.json")) {
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("update", update());
                body.put("blocked", Map.of("version", "3.0.0", "publishedAt", "2026-11-22T07:00:00.000Z", "reason", "UPDATES_EXPIRED"));
                return new FakeService.Reply(200, Json.write(body));
            }
            if (path.endsWith("/files/2.0.0/App.AppImage") && redirect) return new FakeService.Reply(303, "", Map.of("Location", "../../../store/App.AppImage"));
            if (path.endsWith("/files/2.0.0/App.AppImage")) return new FakeService.Reply(200, new String(served, StandardCharsets.UTF_8));
            return new FakeService.Reply(404, "{}");
        };
    }

    private Map<String, Object> update() {
        String sha = sha256(FILE);
        String manifest = String.join("\u001f", "SVCM1", "acme", product, "2.0.0", "stable", "1780000000", "1", listed, "linux", "x86_64", String.valueOf(FILE.length), sha);
        String signature;
        String fingerprint;
        try {
            signature = Base64Url.encode(Vectors.sign(signer, manifest.getBytes(StandardCharsets.UTF_8)));
            java.security.PublicKey key = java.security.KeyFactory.getInstance("Ed25519").generatePublic(new java.security.spec.X509EncodedKeySpec(
                java.util.Base64.getMimeDecoder().decode(PEM.replaceAll("-----[A-Z ]+-----", ""))));
            fingerprint = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(key.getEncoded()));
        } catch (Exception impossible) {
            throw new IllegalStateException(impossible);
        }
        Map<String, Object> artifact = new LinkedHashMap<>();
        artifact.put("id", 7L);
        artifact.put("filename", "App.AppImage");
        artifact.put("platform", "linux");
        artifact.put("arch", "x86_64");
        artifact.put("size", (long) FILE.length);
        artifact.put("sha256", sha);
        artifact.put("sha512", "x");
        artifact.put("contentType", "application/octet-stream");
        artifact.put("url", service.baseUrl() + "/o/acme/api/public/feeds/" + token() + "/files/2.0.0/App.AppImage");
        Map<String, Object> update = new LinkedHashMap<>();
        update.put("version", "2.0.0");
        update.put("channel", "stable");
        update.put("publishedAt", "2026-05-28T20:26:40.000Z");
        update.put("notes", "Faster");
        update.put("manifest", manifest);
        update.put("manifestSignatures", List.of(Map.of("keyFingerprint", fingerprint, "signature", signature)));
        update.put("manifestSignature", signature);
        update.put("manifestKeyFingerprint", fingerprint);
        update.put("artifacts", List.of(artifact));
        return update;
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (Exception impossible) {
            throw new IllegalStateException(impossible);
        }
    }

    private static UpdateCheck look(LicenceClient client) throws LicensorException {
        return client.checkForUpdate("1.9.0", "linux", "x86_64", null);
    }

    @Test
    void findsTheUpdateWithItsVerifiedManifestAndKeepsItsFileWhenItsBytesAreSigned() throws Exception {
        LicenceClient client = client();
        UpdateCheck found = look(client);
        Update update = found.update().orElseThrow();
        assertEquals(update(), update.asMap());
        assertEquals(new UpdateCheck.Blocked("3.0.0", "2026-11-22T07:00:00.000Z", "UPDATES_EXPIRED"), found.blocked().orElseThrow());
        assertEquals(token() + "/latest.json?platform=linux&arch=x86_64&version=1.9.0", service.feedRequests.get(0));
        Path folder = stateDir.resolve("downloads");
        DownloadedFile file = client.download(update, "App.AppImage", folder);
        assertEquals(new DownloadedFile(folder.resolve("App.AppImage"), FILE.length, sha256(FILE)), file);
        assertArrayEquals(FILE, Files.readAllBytes(file.path()));
        try (var kept = Files.list(folder)) {
            assertEquals(List.of(file.path()), kept.toList());
        }
        // The token is kept: the next look asks for none.
        look(client);
        assertEquals(1, feedTokens);
        // A release not above the running version is no update.
        assertEquals(LicensorException.Reason.BAD_MANIFEST, assertThrows(LicensorException.class, () -> client.checkForUpdate("2.0.0", "linux", "x86_64", null)).reason());
    }

    @Test
    void aDownloadFollowsTheStoresRedirect() throws Exception {
        LicenceClient client = client();
        Update update = look(client).update().orElseThrow();
        redirect = true;
        assertEquals(FILE.length, client.download(update, "App.AppImage", stateDir.resolve("redirected")).size());
        assertTrue(service.feedRequests.contains("store/App.AppImage"));
    }

    @Test
    void deletesAFileWhoseBytesAreNotSignedWithDigestMismatch() throws Exception {
        LicenceClient client = client();
        Update update = look(client).update().orElseThrow();
        for (String bytes : List.of("the 2.0.0 installeR", "the 2.0.0 installer and more")) {
            served = bytes.getBytes(StandardCharsets.UTF_8);
            Path dir = Files.createTempDirectory(stateDir, "downloads");
            LicensorException refused = assertThrows(LicensorException.class, () -> client.download(update, "App.AppImage", dir));
            assertEquals(LicensorException.Reason.DIGEST_MISMATCH, refused.reason());
            try (var left = Files.list(dir)) {
                assertEquals(0, left.count());
            }
        }
    }

    @Test
    void aForgedOrForeignManifestIsBadManifest() throws Exception {
        signer = Vectors.algorithm("EC_P256");
        assertEquals(LicensorException.Reason.BAD_MANIFEST, assertThrows(LicensorException.class, () -> look(client())).reason());
        signer = ED25519;
        product = "other";
        assertEquals(LicensorException.Reason.BAD_MANIFEST, assertThrows(LicensorException.class, () -> look(client())).reason());
        product = "acme-cad";
        listed = "App.deb";
        assertEquals(LicensorException.Reason.BAD_MANIFEST, assertThrows(LicensorException.class, () -> look(client())).reason());
    }

    @Test
    void aKeptTokenRefusedIsForgottenAndAskedForAgainOnce() throws Exception {
        LicenceClient client = client();
        look(client);
        gen = 2; // the download links were reset
        assertTrue(look(client).update().isPresent());
        assertEquals(2, feedTokens);
        gen = 3;
        refuse = "REVOKED";
        LicensorException refused = assertThrows(LicensorException.class, () -> look(client));
        assertEquals(LicensorException.Reason.HTTP_STATUS, refused.reason());
        assertEquals(403, refused.status());
        assertEquals("REVOKED", refused.serviceReason());
        assertEquals(3, feedTokens);
    }

    @Test
    void anUnlistedFilenameIsInvalidOptionsAndNothingIsFetched() throws Exception {
        LicenceClient client = client();
        Update update = look(client).update().orElseThrow();
        assertEquals(LicensorException.Reason.INVALID_OPTIONS,
            assertThrows(LicensorException.class, () -> client.download(update, "../App.AppImage", stateDir)).reason());
        assertFalse(service.feedRequests.stream().anyMatch(path -> path.contains("/files/")));
        assertEquals(LicensorException.Reason.INVALID_OPTIONS, assertThrows(LicensorException.class, () -> client.checkForUpdate("v1.0.0")).reason());
    }

    @Test
    void feedUrlsAreAnsweredAndKeptBesideTheStateAndTheKeptOnesWhenNoAnswerComes() throws Exception {
        for (StateStore store : List.of(StateStore.files(stateDir), StateStore.memory())) {
            LicenceClient client = client(store);
            FeedUrls urls = client.feedUrls();
            String base = service.baseUrl() + "/o/acme/api/public/feeds/" + token() + "/";
            assertEquals(new FeedUrls(base + "electron/", base + "tauri/{{target}}/{{arch}}/{{current_version}}", base + "sparkle/appcast.xml", base + "latest.json"), urls);
            service.close();
            assertEquals(urls, client.feedUrls());
            service = new FakeService(ED25519);
            answer();
        }
        Map<String, Object> kept = Json.parseObject(Files.readString(stateDir.resolve("acme/acme-cad/" + lid + ".feed.json")));
        assertEquals(List.of("format", "lid", "token", "urls"), List.copyOf(kept.keySet()));
        assertEquals(token(), kept.get("token"));
    }

    @Test
    void semverPrecedence() {
        List<String> ordered = List.of("1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "10.0.0");
        for (int i = 0; i < ordered.size(); i++) {
            for (int j = 0; j < ordered.size(); j++) assertEquals(Integer.signum(Integer.compare(i, j)), Integer.signum(Releases.compare(ordered.get(i), ordered.get(j))), ordered.get(i) + " vs " + ordered.get(j));
        }
    }
}
