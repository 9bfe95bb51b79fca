"""Requests to the service with http.client; every outcome but a 200 JSON object is a LicensorError."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any, Callable, Iterator, Mapping, TypeVar
from urllib.parse import urljoin, urlsplit

from ._wire import MalformedError, strict_json
from .errors import LicensorError

#: A larger answer is not one the service sends.
MAX_ANSWER_BYTES = 1 << 20
T = TypeVar("T")

#: A download is read and written in pieces of this size.
CHUNK_BYTES = 1 << 16


def post_json(url: str, token: str, body: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """The 200 answer's JSON object. The request runs beside the calling thread so that the
    timeout bounds the whole exchange, not each read."""
    return post_json_status(url, token, body, timeout)[1]


def post_json_status(url: str, token: str, body: Mapping[str, str], timeout: float, *, trial: bool = False) -> tuple[int, dict[str, Any]]:
    """post_json with the status; ``trial`` (DESIGN 18) also takes a 201, and a refusal is its
    own code: TRIALS_OFF, TRIAL_USED (with ``matched``), else HTTP_STATUS (a 429 with
    ``retry_after_seconds``)."""
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json", "accept": "application/json"}
    return _json_exchange("POST", url, headers, json.dumps(body).encode("utf-8"), timeout, trial)


def get_json(url: str, timeout: float) -> dict[str, Any]:
    """GET without a credential header (a path token, DESIGN 20): the 200 answer's JSON object."""
    return _json_exchange("GET", url, {"accept": "application/json"}, None, timeout, False)[1]


def _json_exchange(method: str, url: str, headers: dict[str, str], data: bytes | None, timeout: float, trial: bool) -> tuple[int, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def exchange() -> None:
        try:
            outcome["value"] = _exchange(method, url, headers, data, timeout, trial)
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
    return LicensorError(
        "HTTP_STATUS",
        message,
        status,
        retry_after_seconds=_retry_after(status, retry_after),
        reason=reason if isinstance(reason, str) else None,
    )


def http_status(status: int, text: bytes, retry_after: str | None) -> LicensorError:
    """HTTP_STATUS with the status, a 429's ``retry_after_seconds`` and the answer's ``reason`` when it named one."""
    try:
        body = strict_json(text.decode("utf-8"))
    except (UnicodeDecodeError, MalformedError):
        body = None
    reason = body.get("reason") if isinstance(body, dict) else None
    return LicensorError(
        "HTTP_STATUS",
        f"the service answered {status}",
        status,
        retry_after_seconds=_retry_after(status, retry_after),
        reason=reason if isinstance(reason, str) else None,
    )


def _retry_after(status: int, header: str | None) -> int | None:
    """A 429's Retry-After (a trial limit, a usage rate): whole seconds only; an absent or other header says nothing."""
    seconds = (header or "").strip()
    return int(seconds) if status == 429 and seconds.isascii() and seconds.isdigit() and len(seconds) <= 9 else None


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection to the URL's host (``timeout`` bounds the connect and each read) and the path to ask."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout)
    elif parts.scheme == "http":
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    else:
        raise LicensorError("NETWORK", f"the service cannot be reached: unsupported URL scheme {parts.scheme!r}")
    return connection, parts.path + (f"?{parts.query}" if parts.query else "")


def _exchange(method: str, url: str, headers: dict[str, str], data: bytes | None, timeout: float, trial: bool = False) -> tuple[int, bytes]:
    """No redirects are followed: a 3xx is an answer other than 200."""
    try:
        connection, path = _connection(url, timeout)
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            if response.status != 200 and not (trial and response.status == 201):
                refusal = _trial_refusal if trial else http_status
                raise refusal(response.status, response.read(MAX_ANSWER_BYTES), response.getheader("retry-after"))
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


#: Redirects a download follows at most (the S3 store answers 303 to a presigned URL).
MAX_REDIRECTS = 5


def stream(url: str, timeout: float) -> Iterator[bytes]:
    """GETs ``url`` (no credential header), following redirects, and yields its body chunk by
    chunk; closing the generator closes the connection. ``timeout`` holds for the connect and
    between chunks, never for the whole file. Not 200 in the end: HTTP_STATUS (with ``reason``)."""

    def network(step: Callable[[], T]) -> T:
        try:
            return step()
        except (socket.timeout, TimeoutError):
            raise LicensorError("TIMEOUT", f"no bytes within {round(timeout * 1000)} ms") from None
        except (OSError, http.client.HTTPException, ValueError) as error:
            raise LicensorError("NETWORK", f"the download was cut off: {error}") from None

    for _ in range(MAX_REDIRECTS + 1):
        connection, path = _connection(url, timeout)
        try:
            network(lambda: connection.request("GET", path, headers={"accept": "*/*"}))
            response = network(connection.getresponse)
            location = response.getheader("location")
            if response.status in (301, 302, 303, 307, 308) and location:
                url = urljoin(url, location)
                continue
            if response.status != 200:
                raise http_status(response.status, network(lambda: response.read(MAX_ANSWER_BYTES)), response.getheader("retry-after"))
            while chunk := network(lambda: response.read(CHUNK_BYTES)):
                yield chunk
            return
        finally:
            connection.close()
    raise LicensorError("NETWORK", f"the download was redirected more than {MAX_REDIRECTS} times")
