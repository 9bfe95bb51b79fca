"""The driver of DESIGN 16 for the Python SDK: a test program, never part of the package."""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any

from licensor import LicenceClient, LicensorError, NoAnswer, Update, UsageReport, collect_fingerprint, file_store, verify_licence
from licensor.client import CheckResult
from licensor.keys import read_public_keys


class Failure(Exception):
    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.error: dict[str, Any] = {"code": code, "message": message, **({"status": status} if status is not None else {})}


def bad_request(message: str) -> Failure:
    return Failure("INVALID_OPTIONS", message)


def text(request: dict[str, Any], name: str, optional: bool = False) -> Any:
    value = request.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or value == "":
        raise bad_request(f"{name} must be a non-empty string")
    return value


class Driver:
    def __init__(self) -> None:
        self.config: dict[str, Any] | None = None
        self.client: LicenceClient | None = None
        self.offset_ms = 0.0
        self.fingerprint: str | None = None
        #: The update the last checkForUpdate answered; none after one that failed, or a new configure.
        self.update: Update | None = None

    def clock(self) -> float:
        return time.time() + self.offset_ms / 1000

    def handle(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if handler is None:
            raise bad_request(f"unknown op {op!r}")
        return handler(request)

    def op_configure(self, request: dict[str, Any]) -> Any:
        keys = request.get("publicKeys")
        if not isinstance(keys, list) or not keys or not all(isinstance(key, str) for key in keys):
            raise bad_request("publicKeys must be a non-empty list of PEM strings")
        timeout = request.get("timeoutMs", 10_000)
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1:
            raise bad_request("timeoutMs must be a positive integer")
        config = {name: text(request, name) for name in ("baseUrl", "slug", "checkId", "checkToken", "stateDir")}
        # Without a licence, until one is held, only startTrial and the overrides work (DESIGN 18).
        config.update(licence=text(request, "licence", optional=True), productKey=text(request, "productKey", optional=True), publicKeys=keys, timeout=timeout / 1000)
        self.config = config
        self.client = None
        self.update = None
        if config["licence"] is not None:
            self.current()
        return {}

    def options(self) -> dict[str, Any]:
        """The client options of the configuration, without the licence."""
        config = self.configured()
        return {
            "base_url": config["baseUrl"],
            "slug": config["slug"],
            "check_id": config["checkId"],
            "check_token": config["checkToken"],
            "public_keys": config["publicKeys"],
            "store": file_store(config["stateDir"]),
            "clock": self.clock,
            "timeout": config["timeout"],
            "fingerprint": self.fingerprint,
            "product_key": config["productKey"],
        }

    def held_licence(self) -> str:
        licence = self.configured()["licence"]
        if licence is None:
            raise bad_request("no licence is held: configure one or start a trial")
        return str(licence)

    def configured(self) -> dict[str, Any]:
        if self.config is None:
            raise bad_request("send configure first")
        return self.config

    def current(self) -> LicenceClient:
        """The client for the current configuration, built on first use (a later configure or
        setFingerprint replaces it)."""
        if self.client is None:
            self.client = LicenceClient(licence=self.held_licence(), **self.options())
        return self.client

    def op_startTrial(self, request: dict[str, Any]) -> Any:  # noqa: N802
        start = LicenceClient.start_trial(email=text(request, "email", optional=True), **self.options())
        self.configured()["licence"] = start.licence
        self.client = start.client
        claims = start.result.licence.claims or {}
        return {"licence": start.licence, "lid": claims.get("lid"), "created": start.created, "endsAt": start.ends_at, "state": start.result.state, "reasons": start.result.reasons}

    def op_setClock(self, request: dict[str, Any]) -> Any:  # noqa: N802
        offset = request.get("offsetMs")
        if not isinstance(offset, (int, float)) or isinstance(offset, bool):
            raise bad_request("offsetMs must be a number")
        self.offset_ms = offset
        return {}

    def op_setFingerprint(self, request: dict[str, Any]) -> Any:  # noqa: N802
        fingerprint = request.get("fingerprint")
        if not isinstance(fingerprint, str):
            raise bad_request("fingerprint must be a string")
        self.fingerprint = fingerprint
        self.client = None
        return {}

    def op_verify(self, request: dict[str, Any]) -> Any:
        config = self.configured()
        # A given string goes to verify as it is, the empty one included (DESIGN 16).
        licence = request["licence"] if "licence" in request else self.held_licence()
        if not isinstance(licence, str):
            raise bad_request("licence must be a string")
        result = verify_licence(
            licence,
            read_public_keys(config["publicKeys"]),
            now=self.clock(),
            fingerprint=self.fingerprint,
            product_key=config["productKey"],
            organisation=config["slug"],
        )
        return {"valid": result.valid, "reasons": result.reasons, "claims": result.claims}

    def op_check(self, request: dict[str, Any]) -> Any:
        return check_answer(self.current().check())

    def op_release(self, request: dict[str, Any]) -> Any:
        result = self.current().release()
        return {"released": True} if result.released else {"released": False, "reason": result.reason}

    def op_fetch(self, request: dict[str, Any]) -> Any:
        licence = self.current().fetch()
        self.configured()["licence"] = licence
        return {"licence": licence}

    def op_clearCache(self, request: dict[str, Any]) -> Any:  # noqa: N802
        self.current().clear_cache()
        return {}

    def op_fingerprint(self, request: dict[str, Any]) -> Any:
        return {"fingerprint": collect_fingerprint().fingerprint}

    def op_borrow(self, request: dict[str, Any]) -> Any:
        return check_answer(self.current().borrow(text(request, "until")))

    def op_activationRequest(self, request: dict[str, Any]) -> Any:  # noqa: N802
        made = self.current().create_air_gap_request()
        return {"request": made.request, "groups": made.groups}

    def op_activateAirGap(self, request: dict[str, Any]) -> Any:  # noqa: N802
        return {"until": self.current().activate_air_gapped(text(request, "response")).until}

    def op_deactivateAirGap(self, request: dict[str, Any]) -> Any:  # noqa: N802
        return {"code": self.current().deactivate_air_gapped().code}

    def op_recordUsage(self, request: dict[str, Any]) -> Any:  # noqa: N802
        # Handed over as given, so the SDK itself refuses a bad meter or amount.
        return usage_answer(self.current().record_usage(request.get("meter"), request.get("amount", 1)))

    def op_usage(self, request: dict[str, Any]) -> Any:
        return usage_answer(self.current().usage())

    def op_checkForUpdate(self, request: dict[str, Any]) -> Any:  # noqa: N802
        self.update = None
        # Handed over as given, so the SDK itself refuses a bad version, platform, arch or channel.
        checked = self.current().check_for_update(request.get("currentVersion"), request.get("platform"), request.get("arch"), request.get("channel"))
        self.update = checked.update
        blocked = checked.blocked
        return {
            "update": None if checked.update is None else update_answer(checked.update),
            "blocked": None if blocked is None else {"version": blocked.version, "publishedAt": blocked.published_at, "reason": blocked.reason},
        }

    def op_download(self, request: dict[str, Any]) -> Any:
        if self.update is None:
            raise Failure("NO_UPDATE", "no update is held: checkForUpdate found none")
        kept = self.current().download(self.update, text(request, "filename"), text(request, "to"))
        return {"path": kept.path, "size": kept.size, "sha256": kept.sha256}

    def op_feedUrls(self, request: dict[str, Any]) -> Any:  # noqa: N802
        urls = self.current().feed_urls()
        return {"electron": urls.electron, "tauri": urls.tauri, "sparkle": urls.sparkle, "json": urls.json}


def update_answer(update: Update) -> dict[str, Any]:
    """The update with latest.json's fields and names."""
    return {
        "version": update.version,
        "channel": update.channel,
        "publishedAt": update.published_at,
        "notes": update.notes,
        "manifest": update.manifest,
        "manifestSignatures": [{"keyFingerprint": s.key_fingerprint, "signature": s.signature} for s in update.manifest_signatures],
        "manifestSignature": update.manifest_signature,
        "manifestKeyFingerprint": update.manifest_key_fingerprint,
        "artifacts": [
            {
                "id": a.id,
                "filename": a.filename,
                "platform": a.platform,
                "arch": a.arch,
                "size": a.size,
                "sha256": a.sha256,
                "sha512": a.sha512,
                "contentType": a.content_type,
                "url": a.url,
            }
            for a in update.artifacts
        ],
    }


def no_answer_of(no_answer: NoAnswer | None) -> dict[str, Any] | None:
    if no_answer is None:
        return None
    return {"code": no_answer.code, **({"status": no_answer.status} if no_answer.status is not None else {})}


def usage_answer(report: UsageReport) -> dict[str, Any]:
    """DESIGN 19's {licensed, reason, events, meters, fresh, pending, noAnswer}."""
    meters = None
    if report.meters is not None:
        meters = [
            {"key": m.key, "used": m.used, "limit": m.limit, "overage": m.overage, "remaining": m.remaining, "resetsAt": m.resets_at, "pending": m.pending}
            for m in report.meters
        ]
    return {
        "licensed": report.licensed,
        "reason": report.reason,
        "events": [{"id": e.id, "meter": e.meter, "amount": e.amount, "result": e.result} for e in report.events],
        "meters": meters,
        "fresh": report.fresh,
        "pending": report.pending,
        "noAnswer": no_answer_of(report.no_answer),
    }


def check_answer(result: CheckResult) -> dict[str, Any]:
    no_answer = no_answer_of(result.no_answer)
    return {
        "state": result.state,
        "reasons": result.reasons,
        "fresh": result.fresh,
        "clockRollback": result.clock_rollback,
        "ageSeconds": result.age_seconds,
        "noAnswer": no_answer,
        "renewed": result.renewed,
        "airGapped": result.air_gapped,
        "leaseEndsAt": result.lease_ends_at,
        "trial": None if result.trial is None else {"endsAt": result.trial.ends_at, "secondsLeft": result.trial.seconds_left, "converted": result.trial.converted},
    }


def main() -> None:
    driver = Driver()
    while True:
        line = sys.stdin.readline()
        if line == "":
            return
        if line.strip() == "":
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise bad_request("a request is a JSON object")
            answer: dict[str, Any] = {"ok": True, "result": driver.handle(request)}
        except Failure as failure:
            answer = {"ok": False, "error": failure.error}
        except LicensorError as error:
            failed: dict[str, Any] = {"code": error.code, "message": error.message}
            if error.status is not None:
                failed["status"] = error.status
            if error.reason is not None:
                failed["reason"] = error.reason
            if error.matched is not None:
                failed["matched"] = error.matched
            if error.retry_after_seconds is not None:
                failed["retryAfterSeconds"] = error.retry_after_seconds
            answer = {"ok": False, "error": failed}
        except ValueError as error:
            answer = {"ok": False, "error": {"code": "INVALID_OPTIONS", "message": f"bad request: {error}"}}
        except Exception as error:  # a bug: logged, answered, and the driver keeps going
            traceback.print_exc(file=sys.stderr)
            answer = {"ok": False, "error": {"code": "INVALID_OPTIONS", "message": f"{type(error).__name__}: {error}"}}
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
