"""Updates (DESIGN 20): updates_until() (the newest verified term's upd, else its grace end, else
None), and check_for_update(), download() and feed_urls() against the fake service."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key

from client_fixtures import MY_FP
from conftest import b64u, sign
from fake_service import KEY, OTHER_KEY, T0, FakeService, genuine, lid_of, online_licence
from licensor import BlockedUpdate, Download, FeedUrls, LicensorError, UpdateCheck, verify_licence

DAY = 86_400
IAT = int(T0) - 30 * DAY
UPD = IAT + 730 * DAY


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def test_the_signed_upd_and_it_is_not_a_parameter(make: Any) -> None:
    licence = online_licence(upd=UPD, seats=5)
    assert make(licence).updates_until() == at(UPD)
    assert verify_licence(licence, KEY["publicKeyPem"]).params == {"seats": 5}


def test_the_grace_end_without_upd_and_none_when_perpetual(make: Any) -> None:
    assert make(online_licence()).updates_until() == at(IAT + 365 * DAY + 7 * DAY)
    assert make(online_licence(exp=None)).updates_until() is None


def test_a_products_own_parameter_named_upd_stays_one(make: Any) -> None:
    licence = online_licence(exp=None, upd="nightly")
    assert verify_licence(licence, KEY["publicKeyPem"]).params == {"upd": "nightly"}
    assert make(licence).updates_until() is None


def test_follows_the_newest_verified_term(service: FakeService, make: Any) -> None:
    old = online_licence(upd=UPD)
    renewed = online_licence(lid=lid_of(old), iat=IAT + DAY, upd=UPD + 365 * DAY)
    service.respond = lambda endpoint, body: (200, {"license": renewed})
    client = make(old)
    assert client.updates_until() == at(UPD)
    client.fetch()
    assert client.updates_until() == at(UPD + 365 * DAY)


def test_none_for_a_licence_that_does_not_verify(make: Any) -> None:
    assert make(online_licence(OTHER_KEY["privateKeyPem"], upd=UPD)).updates_until() is None


# --- check_for_update, download and feed_urls against the fake service (DESIGN 20) -------------

BYTES = b"the linux build of 2.0.0\n" * 100
FEED = "/o/acme/api/public/feeds"
QUERY = {"current_version": "1.0.0", "platform": "linux", "arch": "x86_64"}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint_of(public_pem: str) -> str:
    key = load_pem_public_key(public_pem.encode())
    return sha256(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo))


def feed_update(service_url: str, token: str, *, version: str = "2.0.0", channel: str = "stable", product: str = "cad", signers: tuple[dict[str, Any], ...] = (KEY,), file: dict[str, Any] | None = None) -> dict[str, Any]:
    """latest.json's update as the service answers it, its manifest signed by ``signers``."""
    artifact = {"filename": "App-2.0.0.AppImage", "platform": "linux", "arch": "x86_64", "size": len(BYTES), "sha256": sha256(BYTES)}
    files = [artifact, {"filename": "App Setup.exe", "platform": "windows", "arch": "x86_64", "size": 3, "sha256": "a" * 64}]
    fields = ["SVCM1", "acme", product, version, channel, str(int(T0)), str(len(files))]
    for f in sorted(files, key=lambda f: f["filename"].encode()):
        fields += [f["filename"], f["platform"], f["arch"], str(f["size"]), f["sha256"]]
    manifest = "\x1f".join(fields)
    signatures = [{"keyFingerprint": fingerprint_of(k["publicKeyPem"]), "signature": b64u(sign(k["privateKeyPem"], manifest.encode()))} for k in signers]
    listed = {"id": 7, **artifact, **(file or {}), "sha512": "b" * 128, "contentType": "application/octet-stream"}
    listed["url"] = f"{service_url}{FEED}/{token}/files/{version}/{quote(listed['filename'])}"
    return {
        "version": version,
        "channel": channel,
        "publishedAt": "2026-11-22T07:00:00.000Z",
        "notes": "Faster start-up",
        "manifest": manifest,
        "manifestSignatures": signatures,
        "manifestSignature": signatures[0]["signature"] if signatures else None,
        "manifestKeyFingerprint": signatures[0]["keyFingerprint"] if signatures else None,
        "artifacts": [listed],
    }


def urls_of(service_url: str, token: str) -> dict[str, str]:
    base = f"{service_url}{FEED}/{token}/"
    return {"electron": f"{base}electron/", "tauri": base + "tauri/{{target}}/{{arch}}/{{current_version}}", "sparkle": f"{base}sparkle/appcast.xml", "json": f"{base}latest.json"}


class Feeds:
    """The feed side of the fake service: feed-token answers SVCF1.<n> (counting up); latest.json
    answers ``latest(token)`` for the newest token (403 for an older one: a reset); files ``file()``."""

    def __init__(self, service: FakeService, latest: Any = None, file: Any = None) -> None:
        self.service = service
        self.issued = 0
        self.current = ""
        self.latest = latest or (lambda token: {"update": feed_update(service.url, token), "blocked": None})
        self.file = file or (lambda: (200, BYTES))
        service.respond = self.respond

    def respond(self, endpoint: str, body: dict[str, Any]) -> tuple[Any, ...]:
        if endpoint == "feed-token":
            self.issued += 1
            self.current = f"SVCF1.{self.issued}"
            return 200, {"token": self.current, "urls": urls_of(self.service.url, self.current)}
        if endpoint.startswith(FEED):
            token = endpoint[len(FEED) + 1 :].split("/")[0]
            if token != self.current:
                return 403, {"error": "this feed URL was reset: the application asks for a new one"}
            if "/latest.json?" in endpoint:
                return 200, self.latest(token)
            return tuple(self.file())
        return 200, genuine(body)


def asked(service: FakeService) -> list[str]:
    return [f"{r['method']} {r['path'].rsplit('/', 1)[1].split('?')[0] if r['method'] == 'POST' else r['path']}" for r in service.requests]


def test_check_for_update_asks_for_a_token_once_keeps_it_and_reads_latest_json_without_a_credential(service: FakeService, make: Any, tmp_path: Any) -> None:
    Feeds(service)
    licence = online_licence()
    checked = make(licence).check_for_update(channel="beta", **QUERY)
    assert checked.blocked is None and checked.update is not None
    assert checked.update.version == "2.0.0"
    assert checked.update.artifacts[0].sha256 == sha256(BYTES)
    assert asked(service) == ["POST feed-token", f"GET {FEED}/SVCF1.1/latest.json?platform=linux&arch=x86_64&version=1.0.0&channel=beta"]
    assert service.requests[0]["body"] == {"license": licence, "fingerprint": MY_FP}
    assert "authorization" not in {name.lower() for name in service.requests[1]["headers"]}
    kept = tmp_path / "state" / "acme" / "cad" / f"{lid_of(licence)}.feed.json"
    assert json.loads(kept.read_text()) == {"format": 1, "lid": lid_of(licence), "token": "SVCF1.1", "urls": urls_of(service.url, "SVCF1.1")}
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    # Another client of the same state directory (a restart) uses the kept token.
    make(licence).check_for_update(**QUERY)
    assert [r["method"] for r in service.requests[2:]] == ["GET"]


def test_a_403_forgets_the_kept_token_and_asks_again_once(service: FakeService, make: Any) -> None:
    feeds = Feeds(service)
    client = make(online_licence())
    client.check_for_update(**QUERY)
    feeds.current = "SVCF1.reset"
    checked = client.check_for_update(**QUERY)
    assert checked.update is not None and checked.update.artifacts[0].url.endswith("/SVCF1.2/files/2.0.0/App-2.0.0.AppImage")
    assert [r["method"] for r in service.requests[2:]] == ["GET", "POST", "GET"]


def test_a_refused_token_is_http_status_with_its_reason(service: FakeService, make: Any) -> None:
    service.respond = lambda endpoint, body: (403, {"error": "this machine holds no seat", "reason": "NO_SEAT"})
    with pytest.raises(LicensorError) as raised:
        make(online_licence()).check_for_update(**QUERY)
    assert (raised.value.code, raised.value.status, raised.value.reason) == ("HTTP_STATUS", 403, "NO_SEAT")
    assert len(service.requests) == 1


def test_blocked_as_the_feed_answers_it(service: FakeService, make: Any) -> None:
    blocked = {"version": "3.0.0", "publishedAt": "2026-11-22T07:00:00.000Z", "reason": "UPDATES_EXPIRED"}
    Feeds(service, latest=lambda token: {"update": None, "blocked": blocked})
    assert make(online_licence()).check_for_update(**QUERY) == UpdateCheck(None, BlockedUpdate("3.0.0", "2026-11-22T07:00:00.000Z", "UPDATES_EXPIRED"))


def test_an_update_signed_by_any_known_key_is_kept_so_one_shipped_before_a_rotation_verifies(service: FakeService, make: Any) -> None:
    Feeds(service, latest=lambda token: {"update": feed_update(service.url, token, signers=(OTHER_KEY, KEY)), "blocked": None})
    checked = make(online_licence()).check_for_update(**QUERY)
    assert checked.update is not None and checked.update.version == "2.0.0"


def changed_text(url: str, token: str) -> dict[str, Any]:
    update = feed_update(url, token)
    return {**update, "manifest": update["manifest"].replace("x86_64", "aarch64")}


@pytest.mark.parametrize(
    ("shipped", "message"),
    [
        (lambda url, token: feed_update(url, token, signers=(OTHER_KEY,)), "not signed"),
        (lambda url, token: feed_update(url, token, signers=()), "not signed"),
        (lambda url, token: feed_update(url, token, product="other"), "another organisation's or product's"),
        (changed_text, "not signed"),
        (lambda url, token: {**feed_update(url, token, version="1.5.0"), "version": "2.0.0"}, "another version or channel"),
        (lambda url, token: feed_update(url, token, version="1.0.0"), "not above"),
        (lambda url, token: feed_update(url, token, file={"sha256": "c" * 64}), "does not list"),
    ],
    ids=["unknown key", "unsigned", "other product", "changed text", "other version", "not above", "file unlike the update"],
)
def test_bad_manifest(service: FakeService, make: Any, shipped: Any, message: str) -> None:
    Feeds(service, latest=lambda token: {"update": shipped(service.url, token), "blocked": None})
    with pytest.raises(LicensorError) as raised:
        make(online_licence()).check_for_update(**QUERY)
    assert raised.value.code == "BAD_MANIFEST"
    assert message in raised.value.message


def test_versions_compare_by_semver_precedence(service: FakeService, make: Any) -> None:
    Feeds(service, latest=lambda token: {"update": feed_update(service.url, token, version="2.0.0-rc.10", channel="rc"), "blocked": None})
    client = make(online_licence())
    checked = client.check_for_update(**{**QUERY, "current_version": "2.0.0-rc.9"})
    assert checked.update is not None and checked.update.version == "2.0.0-rc.10"
    with pytest.raises(LicensorError, match="not above"):
        client.check_for_update(**{**QUERY, "current_version": "2.0.0"})


@pytest.mark.parametrize(
    "bad",
    [
        {"current_version": "v1.0.0"},
        {"current_version": "1.0"},
        {"current_version": "1.0.0+build.1"},
        {"current_version": "01.0.0"},
        {"platform": "beos"},
        {"arch": "sparc"},
        {"channel": "nightly"},
    ],
)
def test_what_the_feed_would_refuse_is_invalid_options_and_nothing_is_sent(service: FakeService, make: Any, bad: dict[str, str]) -> None:
    with pytest.raises(LicensorError) as raised:
        make(online_licence()).check_for_update(**{**QUERY, **bad})
    assert raised.value.code == "INVALID_OPTIONS"
    assert service.requests == []


def held(service: FakeService, make: Any, file: Any = None) -> tuple[Any, Any]:
    Feeds(service, file=file)
    client = make(online_licence())
    checked = client.check_for_update(**QUERY)
    assert checked.update is not None
    return client, checked.update


def test_download_keeps_the_file_when_it_is_the_manifests(service: FakeService, make: Any, tmp_path: Any) -> None:
    client, update = held(service, make)
    kept = client.download(update, "App-2.0.0.AppImage", tmp_path / "new")
    assert kept == Download(str(tmp_path / "new" / "App-2.0.0.AppImage"), len(BYTES), sha256(BYTES))
    assert (tmp_path / "new" / "App-2.0.0.AppImage").read_bytes() == BYTES
    assert os.listdir(tmp_path / "new") == ["App-2.0.0.AppImage"]
    assert service.requests[-1]["path"] == f"{FEED}/SVCF1.1/files/2.0.0/App-2.0.0.AppImage"


@pytest.mark.parametrize("bytes_", [b"A" + BYTES[1:], BYTES[1:], BYTES + b"!"], ids=["other bytes", "fewer bytes", "more bytes"])
def test_download_deletes_what_is_not_the_manifests_file(service: FakeService, make: Any, tmp_path: Any, bytes_: bytes) -> None:
    client, update = held(service, make, file=lambda: (200, bytes_))
    with pytest.raises(LicensorError) as raised:
        client.download(update, "App-2.0.0.AppImage", tmp_path / "tampered")
    assert raised.value.code == "DIGEST_MISMATCH"
    assert os.listdir(tmp_path / "tampered") == []


def test_download_refuses_a_file_the_update_does_not_list_and_a_manifest_changed_since(service: FakeService, make: Any, tmp_path: Any) -> None:
    client, update = held(service, make)
    sent = len(service.requests)
    for filename in ("App Setup.exe", "../App-2.0.0.AppImage", ""):
        with pytest.raises(LicensorError) as raised:
            client.download(update, filename, tmp_path)
        assert raised.value.code == "INVALID_OPTIONS"
    forged = dataclasses.replace(update, manifest=update.manifest.replace(str(len(BYTES)), "1"))
    with pytest.raises(LicensorError) as raised:
        client.download(forged, "App-2.0.0.AppImage", tmp_path)
    assert raised.value.code == "BAD_MANIFEST"
    assert len(service.requests) == sent


def test_a_refused_file_is_http_status_with_its_reason(service: FakeService, make: Any, tmp_path: Any) -> None:
    client, update = held(service, make, file=lambda: (403, {"error": "updates ended before this release", "reason": "UPDATES_EXPIRED"}))
    with pytest.raises(LicensorError) as raised:
        client.download(update, "App-2.0.0.AppImage", tmp_path / "refused")
    assert (raised.value.code, raised.value.status, raised.value.reason) == ("HTTP_STATUS", 403, "UPDATES_EXPIRED")
    assert os.listdir(tmp_path / "refused") == []


def test_feed_urls_asks_each_call_and_answers_the_kept_ones_when_no_answer_comes(service: FakeService, make: Any) -> None:
    Feeds(service)
    licence = online_licence()
    client = make(licence)
    assert client.feed_urls() == FeedUrls(**urls_of(service.url, "SVCF1.1"))
    assert client.feed_urls() == FeedUrls(**urls_of(service.url, "SVCF1.2"))
    unreachable = make(licence, base_url="http://127.0.0.1:9")
    assert unreachable.feed_urls() == FeedUrls(**urls_of(service.url, "SVCF1.2"))
    with pytest.raises(LicensorError) as raised:
        make(online_licence(), base_url="http://127.0.0.1:9").feed_urls()
    assert raised.value.code == "NETWORK"


def test_download_follows_the_stores_redirect(service: FakeService, make: Any, tmp_path: Any) -> None:
    # On S3 the file URL answers 303 to a presigned URL of the store.
    client, update = held(service, make, file=lambda: (303, b"", {"location": "/store/App-2.0.0.AppImage?X-Amz-Signature=abc"}))
    feeds = service.respond
    service.respond = lambda endpoint, body: (200, BYTES) if endpoint.startswith("/store/") else feeds(endpoint, body)
    kept = client.download(update, "App-2.0.0.AppImage", tmp_path)
    assert (kept.size, kept.sha256) == (len(BYTES), sha256(BYTES))
    assert service.requests[-1]["path"] == "/store/App-2.0.0.AppImage?X-Amz-Signature=abc"
