"""POSTs to the check API with http.client; every outcome but a 200 JSON object is a LicensorError."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any, Mapping
from urllib.parse import urlsplit

from ._wire import MalformedError, strict_json
from .errors import LicensorError

#: A larger answer is not one the service sends.
MAX_ANSWER_BYTES = 1 << 20


def post_json(url: str, token: str, body: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """The 200 answer's JSON object. The request runs beside the calling thread so that the
    timeout bounds the whole exchange, not each read."""
    return post_json_status(url, token, body, timeout)[1]


def post_json_status(url: str, token: str, body: Mapping[str, str], timeout: float, *, trial: bool = False) -> tuple[int, dict[str, Any]]:
    """post_json with the status; ``trial`` (DESIGN 18) also takes a 201, and a refusal is its
    own code: TRIALS_OFF, TRIAL_USED (with ``matched``), else HTTP_STATUS (a 429 with
    ``retry_after_seconds``)."""
    outcome: dict[str, Any] = {}

    def exchange() -> None:
        try:
            outcome["value"] = _exchange(url, token, json.dumps(body).encode("utf-8"), timeout, trial)
        except BaseException as error:  # handed to the calling thread
            outcome["error"] = error

    worker = threading.Thread(target=exchange, name="licensor-request", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise LicensorError("TIMEOUT", f"no answer within {round(timeout * 1000)} ms")
    if "error" in outcome:
        raise outcome["error"]
    status, text = outcome["value"]
    try:
        parsed = strict_json(text.decode("utf-8"))
    except (UnicodeDecodeError, MalformedError):
        raise LicensorError("BAD_RESPONSE", "the answer is not JSON") from None
    if not isinstance(parsed, dict):
        raise LicensorError("BAD_RESPONSE", "the answer is not a JSON object")
    return status, parsed


def _trial_refusal(status: int, text: bytes, retry_after: str | None) -> LicensorError:
    try:
        body = strict_json(text.decode("utf-8"))
    except (UnicodeDecodeError, MalformedError):
        body = None
    body = body if isinstance(body, dict) else {}
    message = body.get("error") if isinstance(body.get("error"), str) else f"the service answered {status}"
    reason = body.get("reason")
    if status == 403 and reason == "TRIAL_USED":
        matched = body.get("matched")
        names = [name for name in matched if isinstance(name, str)] if isinstance(matched, list) else []
        return LicensorError("TRIAL_USED", message, matched=names)
    if status == 403 and reason == "TRIALS_OFF":
        return LicensorError("TRIALS_OFF", message)
    return LicensorError("HTTP_STATUS", message, status, retry_after_seconds=_retry_after(status, retry_after))


def _retry_after(status: int, header: str | None) -> int | None:
    """A 429's Retry-After (a trial limit, a usage rate): whole seconds only; an absent or other header says nothing."""
    seconds = (header or "").strip()
    return int(seconds) if status == 429 and seconds.isascii() and seconds.isdigit() and len(seconds) <= 9 else None


def _exchange(url: str, token: str, data: bytes, timeout: float, trial: bool = False) -> tuple[int, bytes]:
    """No redirects are followed: a 3xx is an answer other than 200."""
    parts = urlsplit(url)
    connection: http.client.HTTPConnection
    try:
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout)
        elif parts.scheme == "http":
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
        else:
            raise LicensorError("NETWORK", f"the service cannot be reached: unsupported URL scheme {parts.scheme!r}")
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "accept": "application/json",
        }
        try:
            connection.request("POST", path, body=data, headers=headers)
            response = connection.getresponse()
            if response.status != 200 and not (trial and response.status == 201):
                if trial:
                    raise _trial_refusal(response.status, response.read(MAX_ANSWER_BYTES), response.getheader("retry-after"))
                raise LicensorError("HTTP_STATUS", f"the service answered {response.status}", response.status, retry_after_seconds=_retry_after(response.status, response.getheader("retry-after")))
            text = response.read(MAX_ANSWER_BYTES + 1)
        finally:
            connection.close()
    except (socket.timeout, TimeoutError):
        raise LicensorError("TIMEOUT", f"no answer within {round(timeout * 1000)} ms") from None
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise LicensorError("NETWORK", f"the service cannot be reached: {error}") from None
    if len(text) > MAX_ANSWER_BYTES:
        raise LicensorError("BAD_RESPONSE", "the answer is too large")
    return response.status, text
