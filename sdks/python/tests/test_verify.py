"""Offline verification beyond the vectors: strict JSON, calendar, machine, pinning, keys."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, load_pem_private_key, load_pem_public_key
from cryptography.x509.oid import NameOID

from conftest import ALGORITHMS, VECTORS, b64u, sign_licence, sign_payload
from licensor import LicensorError, read_licence_file, verify_licence
from licensor._wire import MalformedError, b64u_decode

ED = ALGORITHMS[0]
FP = VECTORS["fingerprints"][0]["fingerprint"]
OTHER_FP = VECTORS["fingerprints"][3]["fingerprint"]
BASE: dict[str, Any] = {"v": 3, "lid": "l-1", "prd": "acme-cad", "org": "acme", "typ": "ONLINE", "iat": 1700000000, "grace": 7, "mm": 1}


def verify(payload_or_claims: str | dict[str, Any], **options: Any) -> Any:
    licence = (
        sign_payload(ED["privateKeyPem"], payload_or_claims)
        if isinstance(payload_or_claims, str)
        else sign_licence(ED["privateKeyPem"], payload_or_claims)
    )
    options.setdefault("now", 1700000000)
    return verify_licence(licence, ED["publicKeyPem"], **options)


@pytest.mark.parametrize(
    "payload",
    [
        '{"v":3,"lid":"l-1","lid":"l-2","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000.0,"grace":7,"mm":1}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":17e8,"grace":7,"mm":1}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"ratio":1.5}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"x":NaN}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"x":-Infinity}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":9007199254740992,"grace":7,"mm":1}',
        '{"v":true,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1} x',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":0}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"fp":["a","b"]}',
        '{"v":4,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"fp":["a"]}',
        '{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"fp":"x","fpn":6}',
        '{"v":3,"lid":"","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1}',
    ],
    ids=[
        "duplicate key",
        "integer claim written as a fraction",
        "integer claim written with an exponent",
        "fractional parameter",
        "NaN",
        "-Infinity",
        "beyond exact integers",
        "boolean v",
        "trailing text",
        "mm 0",
        "fp list with v 3",
        "fp list of one with v 4",
        "fpn above 5",
        "empty lid",
    ],
)
def test_signed_payloads_that_are_not_exactly_the_wire_form_are_malformed(payload: str) -> None:
    result = verify(payload)
    assert (result.signed, result.reasons, result.claims) == (False, ["MALFORMED"], None)


def test_a_correct_signed_payload_with_every_parameter_type_verifies() -> None:
    result = verify('{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"n":-3,"s":"é","b":true,"l":["x"]}')
    assert result.valid
    assert result.params == {"n": -3, "s": "é", "b": True, "l": ["x"]}


def test_the_meters_claim_is_no_parameter_and_a_kept_parameter_named_mtr_is_one() -> None:
    metered = verify('{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"mtr":[{"k":"exports","p":"MONTH","l":1000,"o":0}],"tier":"pro"}')
    assert metered.valid and metered.params == {"tier": "pro"}
    kept = verify('{"v":3,"lid":"l-1","prd":"acme-cad","org":"acme","iat":1700000000,"grace":7,"mm":1,"mtr":"legacy"}')
    assert kept.valid and kept.params == {"mtr": "legacy"}


@pytest.mark.parametrize("text", ["QQ==", "QQ=", "Q", "QR", "Q+", "Q/", "Q Q", "QQ\n", "é"])
def test_base64url_decoding_refuses_anything_that_does_not_reencode_to_itself(text: str) -> None:
    with pytest.raises(MalformedError):
        b64u_decode(text)


def test_base64url_decoding_accepts_canonical_text() -> None:
    assert b64u_decode("QQ") == b"A"
    assert b64u_decode("_-8") == b"\xff\xef"


def test_the_calendar_is_judged_at_now_with_exact_grace() -> None:
    claims = {**BASE, "nbf": 1700000100, "exp": 1800000000}
    assert verify(claims, now=1700000099).reasons == ["NOT_YET_VALID"]
    assert verify(claims, now=1700000100).status == "ACTIVE"
    grace = verify(claims, now=1800000000)
    assert (grace.valid, grace.status) == (True, "GRACE")
    assert grace.grace_ends_at is not None and grace.grace_ends_at.timestamp() == 1800000000 + 7 * 86400
    assert verify(claims, now=1800000000 + 7 * 86400 - 0.5).status == "GRACE"
    assert verify(claims, now=1800000000 + 7 * 86400).reasons == ["EXPIRED"]
    assert verify(BASE, now=4000000000).valid  # perpetual


def test_a_signed_fingerprint_must_match_this_machine_by_fpn() -> None:
    claims = {**BASE, "fp": FP}
    assert verify(claims, fingerprint=FP).fingerprint_match is True
    mismatch = verify(claims, fingerprint=OTHER_FP)
    assert (mismatch.valid, mismatch.reasons, mismatch.fingerprint_match) == (False, ["FINGERPRINT_MISMATCH"], False)
    # "two unreadable" shares machine, host and cpu with "all components": 3 of 5.
    near = VECTORS["fingerprints"][1]["fingerprint"]
    assert verify(claims, fingerprint=near).valid
    assert verify({**claims, "fpn": 4}, fingerprint=near).reasons == ["FINGERPRINT_MISMATCH"]
    # Without fp nothing is collected or compared.
    assert verify(BASE, fingerprint="not a fingerprint").fingerprint_match is None


def test_a_licence_for_another_product_or_organisation_is_wrong_product() -> None:
    assert verify(BASE, product_key="acme-cad", organisation="acme").valid
    assert verify(BASE, product_key="other").reasons == ["WRONG_PRODUCT"]
    assert verify({**BASE, "exp": 1}, organisation="other").reasons == ["WRONG_PRODUCT", "EXPIRED"]


def test_keys_that_cannot_be_read_raise_invalid_key() -> None:
    licence = ED["licence"]
    for keys in ([], "not a pem", ED["privateKeyPem"], [ED["publicKeyPem"], 42]):
        with pytest.raises(LicensorError) as raised:
            verify_licence(licence, keys)  # type: ignore[arg-type]
        assert raised.value.code == "INVALID_KEY"


def test_a_key_given_as_bytes_or_a_loaded_key_verifies() -> None:
    pem = ED["publicKeyPem"]
    now = ED["claims"]["iat"]
    fp = ED["claims"]["fp"][0]
    assert verify_licence(ED["licence"], pem.encode(), now=now, fingerprint=fp).valid
    assert verify_licence(ED["licence"], load_pem_public_key(pem.encode()), now=now, fingerprint=fp).valid  # type: ignore[arg-type]


def test_a_string_that_is_not_a_licence_is_malformed_not_an_exception() -> None:
    for text in ["", "a.b.c", f"{b64u(b'[]')}.{b64u(b'x')}", 42]:
        assert verify_licence(text, ED["publicKeyPem"]).reasons == ["MALFORMED"]  # type: ignore[arg-type]


def test_a_products_certificate_serves_as_its_public_key() -> None:
    private = load_pem_private_key(ED["privateKeyPem"].encode(), None)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "acme-cad")])
    start = datetime.datetime(2026, 1, 1)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())  # type: ignore[arg-type]
        .serial_number(1).not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
        .sign(private, None)  # type: ignore[arg-type]
    )
    pem = certificate.public_bytes(Encoding.PEM).decode()
    result = verify_licence(ED["licence"], pem, now=ED["claims"]["iat"], fingerprint=ED["claims"]["fp"][0])
    assert result.valid


def test_read_licence_file_removes_what_an_editor_adds_and_verify_stays_strict(tmp_path: Path) -> None:
    licence = ALGORITHMS[0]["licence"]
    file = tmp_path / "licence.lic"
    file.write_bytes(("\ufeff \r\n" + licence + "\r\n\n").encode("utf-8"))
    assert read_licence_file(file) == licence
    assert read_licence_file(str(file)) == licence
    assert verify_licence(licence + "\n", ALGORITHMS[0]["publicKeyPem"]).reasons == ["MALFORMED"]
