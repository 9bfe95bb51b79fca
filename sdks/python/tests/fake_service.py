"""A stand-in for the check API over real HTTP: answers signed with the vectors' Ed25519 test key,
and whatever forgery a test asks for."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from conftest import ALGORITHMS, sign_licence, sign_receipt

KEY = ALGORITHMS[0]  # Ed25519
OTHER_KEY = ALGORITHMS[5]  # P-384: "another key" of the same service
PUBLIC_KEY = KEY["publicKeyPem"]
T0 = datetime(2026, 11, 22, 7, 0, 0, tzinfo=timezone.utc).timestamp()
MAX_SECONDS = 86_400
CHECK_ID = "abc123def456"
CHECK_TOKEN = f"svcc_{CHECK_ID}_" + "a" * 64
BOUND_AT = "2026-01-05T09:30:12.345Z"


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def online_licence(private_pem: str = KEY["privateKeyPem"], **overrides: Any) -> str:
    """An ONLINE licence valid around T0 with a one-day offline window."""
    iat = int(T0) - 86_400 * 30
    claims = {"v": 3, "lid": str(uuid.uuid4()), "prd": "cad", "org": "acme", "typ": "ONLINE", "iat": iat, "exp": iat + 86_400 * 365, "grace": 7, "mm": 1, "chk": 3600, "max": MAX_SECONDS}
    claims.update(overrides)
    return sign_licence(private_pem, {k: v for k, v in claims.items() if v is not None})


def floating_licence(private_pem: str = KEY["privateKeyPem"], **overrides: Any) -> str:
    """A floating licence (v 5) valid around T0: 15-minute leases, a week of borrowing, max 30 minutes."""
    return online_licence(private_pem, **{"v": 5, "mm": 5, "chk": 300, "max": 1800, "lse": 900, "brw": 7 * 86_400, **overrides})


def claims_of(licence: str) -> dict[str, Any]:
    part = licence.split(".")[0]
    return dict(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def lid_of(licence: str) -> str:
    return str(claims_of(licence)["lid"])


def genuine(request: dict[str, Any], status: str = "ACTIVE", bound_at: str = BOUND_AT, checked_at: float = T0, *, private_pem: str = KEY["privateKeyPem"], lid: str | None = None, nonce: str | None = None, fingerprint: str | None = None, lease_ends_at: str | None = None, tag: str | None = None, **extra: Any) -> dict[str, Any]:
    """What the service would sign for this request (SVCR2 with a lease for a v 5 licence, until
    ``until`` for a borrow); the keyword arguments forge it."""
    claims = claims_of(request["license"])
    tag = tag or ("SVCR2" if claims["v"] == 5 else "SVCR1")
    if lease_ends_at is None:
        licensed = tag == "SVCR2" and status in ("ACTIVE", "GRACE") and bound_at != ""
        lease_ends_at = (request.get("until") or iso(checked_at + claims["lse"])) if licensed else ""
    fields = [
        lid or lid_of(request["license"]),
        status,
        nonce or request["nonce"],
        iso(checked_at),
        bound_at,
        hashlib.sha256((fingerprint or request["fingerprint"]).encode()).hexdigest()[:32],
    ]
    if tag == "SVCR2":
        fields.append(lease_ends_at)
    answer: dict[str, Any] = {"valid": status in ("ACTIVE", "GRACE") and bound_at != "", "lid": fields[0], "checkedAt": fields[3], "serverTime": fields[3], "nonce": fields[2], "receipt": sign_receipt(private_pem, fields, tag)}
    if lease_ends_at:
        answer["leaseEndsAt"] = lease_ends_at
    if status:
        answer["status"] = status
    if bound_at:
        answer["boundAt"] = bound_at
    answer.update(extra)
    return answer


def usage_answer(request: dict[str, Any], used: int, status: str = "ACTIVE", bound_at: str = BOUND_AT, *, results: Callable[[dict[str, Any]], str] | None = None, private_pem: str = KEY["privateKeyPem"], nonce: str | None = None, ids: list[str] | None = None) -> dict[str, Any]:
    """A usage answer as DESIGN 19 has the service sign it (SVCU1): each event's result
    (ACCEPTED unless ``results`` says otherwise), the meter ``exports`` (limit 1000) at ``used``;
    the keyword arguments forge it."""
    events = [{"id": ids[i] if ids else e["id"], "result": results(e) if results else "ACCEPTED", "duplicate": False} for i, e in enumerate(request["events"])]
    meter = {"key": "exports", "label": "Exports", "period": "MONTH", "used": used, "limit": 1000, "overage": 0, "remaining": 1000 - used, "periodStart": "2026-11-01T00:00:00.000Z", "resetsAt": "2026-12-01T00:00:00.000Z"}
    digest = hashlib.sha256(request["fingerprint"].encode()).hexdigest()[:32]
    fields = [lid_of(request["license"]), status, nonce or request["nonce"], iso(T0), bound_at, digest, str(len(events))]
    for event in events:
        fields += [event["id"], event["result"]]
    fields += ["1", "exports", str(used), "1000", "0", str(1000 - used), meter["resetsAt"]]
    answer: dict[str, Any] = {"lid": fields[0], "valid": status in ("ACTIVE", "GRACE") and bound_at != "", "nonce": fields[2], "checkedAt": iso(T0), "serverTime": iso(T0), "events": events, "meters": [meter], "receipt": sign_receipt(private_pem, fields, "SVCU1")}
    if status:
        answer["status"] = status
    if bound_at:
        answer["boundAt"] = bound_at
    return answer

#: (status, JSON value or raw bytes), or with a third member: headers to add.
Responder = Callable[[str, dict[str, Any]], "tuple[Any, ...]"]


class FakeService:
    """Records every request; ``respond(endpoint, body)`` gives (status, JSON value or raw bytes):
    ``endpoint`` is a POST's last path segment, or a GET's whole path and query."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.respond: Responder = lambda endpoint, body: (200, genuine(body))
        #: Sent with every answer (e.g. a 429's Retry-After).
        self.headers: dict[str, str] = {}
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                self.answer(self.path.rsplit("/", 1)[1], body)

            def do_GET(self) -> None:  # noqa: N802
                # A feed or a file (DESIGN 20): ``respond`` gets the whole path and query.
                self.answer(self.path, {})

            def answer(self, endpoint: str, body: dict[str, Any]) -> None:
                service.requests.append({"path": self.path, "method": self.command, "headers": dict(self.headers), "body": body})
                status, answer, *more = service.respond(endpoint, body)
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                for name, value in (more[0] if more else {}).items():
                    self.send_header(name, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in service.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
