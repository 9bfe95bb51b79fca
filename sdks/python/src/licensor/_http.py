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
    outcome: dict[str, Any] = {}

    def exchange() -> None:
        try:
            outcome["value"] = _exchange(url, token, json.dumps(body).encode("utf-8"), timeout)
        except BaseException as error:  # handed to the calling thread
            outcome["error"] = error

    worker = threading.Thread(target=exchange, name="licensor-request", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise LicensorError("TIMEOUT", f"no answer within {round(timeout * 1000)} ms")
    if "error" in outcome:
        raise outcome["error"]
    text: bytes = outcome["value"]
    try:
        parsed = strict_json(text.decode("utf-8"))
    except (UnicodeDecodeError, MalformedError):
        raise LicensorError("BAD_RESPONSE", "the answer is not JSON") from None
    if not isinstance(parsed, dict):
        raise LicensorError("BAD_RESPONSE", "the answer is not a JSON object")
    return parsed


def _exchange(url: str, token: str, data: bytes, timeout: float) -> bytes:
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
            if response.status != 200:
                error = LicensorError("HTTP_STATUS", f"the service answered {response.status}", response.status)
                retry_after = (response.getheader("retry-after") or "").strip()
                if response.status == 429 and retry_after.isdigit() and len(retry_after) <= 9:
                    error.retry_after_seconds = int(retry_after)
                raise error
            text = response.read(MAX_ANSWER_BYTES + 1)
        finally:
            connection.close()
    except (socket.timeout, TimeoutError):
        raise LicensorError("TIMEOUT", f"no answer within {round(timeout * 1000)} ms") from None
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise LicensorError("NETWORK", f"the service cannot be reached: {error}") from None
    if len(text) > MAX_ANSWER_BYTES:
        raise LicensorError("BAD_RESPONSE", "the answer is too large")
    return text
