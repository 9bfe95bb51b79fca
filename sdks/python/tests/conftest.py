"""Shared helpers: the protocol's test vectors, and licences and receipts signed with their test keys."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key

ROOT = Path(__file__).resolve().parents[3]
# LICENSOR_VECTORS reads another checkout's vectors (a protocol change not merged here yet).
VECTORS_FILE = Path(os.environ.get("LICENSOR_VECTORS") or ROOT / "packages/protocol/test-vectors/vectors.json")
VECTORS: dict[str, Any] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
ALGORITHMS: list[dict[str, Any]] = VECTORS["algorithms"]
# Loaded after this module, whose helpers its fixtures use.
pytest_plugins = ["client_fixtures"]


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign(private_pem: str, data: bytes) -> bytes:
    key = load_pem_private_key(private_pem.encode(), None)
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(data)
    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    digest = hashes.SHA384() if isinstance(key.curve, ec.SECP384R1) else hashes.SHA256()
    return key.sign(data, ec.ECDSA(digest))


def sign_payload(private_pem: str, payload_json: str) -> str:
    part = b64u(payload_json.encode("utf-8"))
    return f"{part}.{b64u(sign(private_pem, part.encode('ascii')))}"


def sign_licence(private_pem: str, claims: dict[str, Any]) -> str:
    return sign_payload(private_pem, json.dumps(claims, separators=(",", ":"), ensure_ascii=False))


def sign_receipt(private_pem: str, fields: list[str], tag: str = "SVCR1") -> str:
    return b64u(sign(private_pem, "\x1f".join([tag, *fields]).encode("utf-8")))


@pytest.fixture(params=ALGORITHMS, ids=[a["algorithm"] for a in ALGORITHMS])
def vector(request: pytest.FixtureRequest) -> dict[str, Any]:
    return request.param  # type: ignore[no-any-return]
