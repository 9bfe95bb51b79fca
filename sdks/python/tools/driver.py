"""The driver of DESIGN 16 for the Python SDK: a test program, never part of the package."""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any

from licensor import LicenceClient, LicensorError, collect_fingerprint, verify_licence
from licensor.client import CheckResult
from licensor.keys import read_public_keys


class Failure(Exception):
    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.error: dict[str, Any] = {"code": code, "message": message, **({"status": status} if status is not None else {})}


def bad_request(message: str) -> Failure:
    return Failure("INVALID_OPTIONS", message)


class Driver:
    def __init__(self) -> None:
        self.config: dict[str, Any] | None = None
        self.client: LicenceClient | None = None
        self.offset_ms = 0.0
        self.fingerprint: str | None = None

    def clock(self) -> float:
        return time.time() + self.offset_ms / 1000

    def handle(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if handler is None:
            raise bad_request(f"unknown op {op!r}")
        return handler(request)

    def op_configure(self, request: dict[str, Any]) -> Any:
        timeout = request.get("timeoutMs", 10_000)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
            raise bad_request("timeoutMs must be a number")
        self.config = {key: request.get(key) for key in ("baseUrl", "slug", "productKey", "checkId", "checkToken", "publicKeys", "licence", "stateDir")}
        self.config["timeout"] = timeout / 1000
        self.client = None
        self.client = self.build(self.config["licence"])
        return {}

    def build(self, licence: Any) -> LicenceClient:
        config = self.configured()
        return LicenceClient(
            base_url=config["baseUrl"],
            slug=config["slug"],
            check_id=config["checkId"],
            check_token=config["checkToken"],
            public_keys=config["publicKeys"],
            licence=licence,
            state_dir=config["stateDir"],
            clock=self.clock,
            timeout=config["timeout"],
            fingerprint=self.fingerprint,
            product_key=config["productKey"],
        )

    def configured(self) -> dict[str, Any]:
        if self.config is None:
            raise bad_request("configure first")
        return self.config

    def checking(self) -> LicenceClient:
        if self.client is None:
            raise bad_request("configure a checkable licence first")
        return self.client

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
        if self.client is not None:
            self.client = self.build(self.client.licence)
        return {}

    def op_verify(self, request: dict[str, Any]) -> Any:
        config = self.configured()
        licence = request.get("licence", self.client.licence if self.client is not None else config["licence"])
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
        return check_answer(self.checking().check())

    def op_release(self, request: dict[str, Any]) -> Any:
        result = self.checking().release()
        return {"released": True} if result.released else {"released": False, "reason": result.reason}

    def op_fetch(self, request: dict[str, Any]) -> Any:
        return {"licence": self.checking().fetch()}

    def op_clearCache(self, request: dict[str, Any]) -> Any:  # noqa: N802
        self.checking().clear_cache()
        return {}

    def op_fingerprint(self, request: dict[str, Any]) -> Any:
        return {"fingerprint": collect_fingerprint().fingerprint}

    def op_borrow(self, request: dict[str, Any]) -> Any:
        raise bad_request("borrowing is not supported yet")

    def air_gap(self, request: dict[str, Any]) -> Any:
        raise bad_request("air-gapped activation is not supported yet")

    op_activationRequest = op_activateAirGap = op_deactivateAirGap = air_gap  # noqa: N815


def check_answer(result: CheckResult) -> dict[str, Any]:
    no_answer = None
    if result.no_answer is not None:
        no_answer = {"code": result.no_answer.code, **({"status": result.no_answer.status} if result.no_answer.status is not None else {})}
    return {
        "state": result.state,
        "reasons": result.reasons,
        "fresh": result.fresh,
        "clockRollback": result.clock_rollback,
        "ageSeconds": result.age_seconds,
        "noAnswer": no_answer,
        "renewed": result.renewed,
        "airGapped": False,
        "leaseEndsAt": None,
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
            answer = {"ok": False, "error": {"code": error.code, "message": error.message, **({"status": error.status} if error.status is not None else {})}}
        except ValueError as error:
            answer = {"ok": False, "error": {"code": "INVALID_OPTIONS", "message": f"bad request: {error}"}}
        except Exception as error:  # a bug: logged, answered, and the driver keeps going
            traceback.print_exc(file=sys.stderr)
            answer = {"ok": False, "error": {"code": "INVALID_OPTIONS", "message": f"{type(error).__name__}: {error}"}}
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
