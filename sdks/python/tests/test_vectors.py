"""The shared wire-format vectors of packages/protocol, read as they are (DESIGN 2)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from conftest import ALGORITHMS, VECTORS, b64u
from licensor import verify_licence
from licensor._wire import (
    FingerprintError,
    build_fingerprint,
    calendar_status,
    fingerprints_match,
    fp_digest,
    grace_ends_at,
    match_score,
    parse_fingerprint,
    receipt_grants,
    receipt_message,
    verify_receipt,
)
from licensor.keys import read_public_keys
from licensor.licence import CLAIM_NAMES, is_updates_claim, parse_licence, updates_until_of

NOW = 1764000000
OTHER_KEYS = [a["publicKeyPem"] for a in ALGORITHMS]


def valid_at(algorithm: dict[str, Any]) -> int:
    return int(algorithm["claims"].get("nbf", algorithm["claims"]["iat"]))


def machine(algorithm: dict[str, Any]) -> str:
    """A fingerprint the vector's licence accepts (any, when it signs none in)."""
    fp = algorithm["claims"].get("fp", VECTORS["fingerprints"][0]["fingerprint"])
    return fp[-1] if isinstance(fp, list) else fp


def test_every_algorithms_licence_verifies_with_its_claims_in_signed_order(vector: dict[str, Any]) -> None:
    fingerprint = machine(vector)
    result = verify_licence(vector["licence"], vector["publicKeyPem"], now=valid_at(vector), fingerprint=fingerprint)
    assert result.valid and result.reasons == [] and result.signed
    assert result.claims == vector["claims"]
    assert list(result.claims) == list(vector["claims"])
    assert json.dumps(result.claims, separators=(",", ":"), ensure_ascii=False) == vector["payloadJson"]
    # An integer upd is the update window's claim (DESIGN 20), not a parameter.
    window = is_updates_claim(vector["claims"].get("upd"))
    assert list(result.params) == [key for key in vector["claims"] if key not in CLAIM_NAMES and not (window and key == "upd")]
    assert result.fingerprint_match is ("fp" in vector["claims"] or None)


def test_the_vectors_sign_a_term_with_an_update_window_that_every_sdk_reads() -> None:
    windowed = [vector for vector in VECTORS["algorithms"] if is_updates_claim(vector["claims"].get("upd"))]
    assert windowed
    for vector in windowed:
        result = verify_licence(vector["licence"], vector["publicKeyPem"], now=valid_at(vector), fingerprint=machine(vector))
        assert result.valid and "upd" not in result.params
        assert updates_until_of(result.claims) == datetime.fromtimestamp(vector["claims"]["upd"], timezone.utc)


def test_a_licence_verifies_with_a_key_history_and_not_with_other_keys(vector: dict[str, Any]) -> None:
    others = [pem for pem in OTHER_KEYS if pem != vector["publicKeyPem"]]
    fingerprint = machine(vector)
    assert verify_licence(vector["licence"], [*others, vector["publicKeyPem"]], now=valid_at(vector), fingerprint=fingerprint).valid
    refused = verify_licence(vector["licence"], others, now=NOW, fingerprint=fingerprint)
    assert (refused.valid, refused.reasons, refused.claims) == (False, ["BAD_SIGNATURE"], None)


@pytest.mark.parametrize(
    "case",
    [(a, t) for a in ALGORITHMS for t in a["tampered"]],
    ids=[f"{a['algorithm']}: {t['name']}" for a in ALGORITHMS for t in a["tampered"]],
)
def test_tampered_strings_are_refused_as_the_vectors_say(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    algorithm, tampered = case
    result = verify_licence(tampered["licence"], algorithm["publicKeyPem"], now=NOW, fingerprint=machine(algorithm))
    assert (result.signed, result.valid, result.reasons) == (False, False, [tampered["expected"]])


def test_receipts_verify_and_grant_exactly_as_the_vectors_say(vector: dict[str, Any]) -> None:
    keys = read_public_keys(vector["publicKeyPem"])
    for receipt in vector["receipts"]:
        fields = receipt["fields"]
        assert receipt_message(fields).hex() == receipt["messageHex"], receipt["name"]
        assert verify_receipt(fields, receipt["receipt"], keys), receipt["name"]
        assert receipt_grants(fields["status"] or "", fields["boundAt"] or "") is receipt["grants"], receipt["name"]


def test_bad_receipts_never_verify(vector: dict[str, Any]) -> None:
    keys = read_public_keys(vector["publicKeyPem"])
    for bad in vector["badReceipts"]:
        assert not verify_receipt(bad["fields"], bad["receipt"], keys), bad["name"]


def test_claim_order_payloads_parse_with_their_keys_in_wire_order() -> None:
    for case in VECTORS["claimOrder"]:
        # Signed by nobody: only the structure is read here.
        parsed = parse_licence(f"{b64u(case['payloadJson'].encode())}.{b64u(b'signature')}")
        assert json.dumps(parsed.claims, separators=(",", ":"), ensure_ascii=False) == case["payloadJson"], case["name"]


@pytest.mark.parametrize("case", VECTORS["fingerprints"], ids=[c["name"] for c in VECTORS["fingerprints"]])
def test_fingerprints_hash_raw_components_as_the_vectors_say(case: dict[str, Any]) -> None:
    assert build_fingerprint(case["raw"]) == case["fingerprint"]
    assert parse_fingerprint(case["fingerprint"]) == case["parts"]
    assert fp_digest(case["fingerprint"]) == case["fpDigest"]


@pytest.mark.parametrize("case", VECTORS["badFingerprints"], ids=[c["name"] for c in VECTORS["badFingerprints"]])
def test_bad_fingerprints_are_refused_with_their_problem(case: dict[str, Any]) -> None:
    with pytest.raises(FingerprintError) as raised:
        parse_fingerprint(case["fingerprint"])
    assert raised.value.problem == case["problem"]


def test_fingerprint_matches_follow_the_vectors() -> None:
    for case in VECTORS["matches"]:
        a, b = parse_fingerprint(case["a"]), parse_fingerprint(case["b"])
        assert match_score(a, b) == case["score"]
        assert fingerprints_match(a, b, case["need"]) is case["match"]


def test_calendar_statuses_follow_the_vectors() -> None:
    for case in VECTORS["statuses"]:
        claims = case["claims"]
        assert calendar_status(claims, case["now"]) == case["status"], case
        assert grace_ends_at(claims.get("exp"), claims["grace"]) == case["graceEndsAt"], case


# Floating licences (DESIGN 13): the vectors carry them once the protocol has them.
FLOATING = [a for a in ALGORITHMS if "floating" in a]


@pytest.mark.parametrize("algorithm", FLOATING, ids=[a["algorithm"] for a in FLOATING])
def test_every_algorithms_floating_licence_verifies_with_lse_and_brw_as_claims(algorithm: dict[str, Any]) -> None:
    floating = algorithm["floating"]
    result = verify_licence(floating["licence"], algorithm["publicKeyPem"], now=floating["claims"].get("nbf", floating["claims"]["iat"]))
    assert (result.valid, result.claims) == (True, floating["claims"])
    assert json.dumps(result.claims, separators=(",", ":"), ensure_ascii=False) == floating["payloadJson"]
    assert "lse" not in result.params and "brw" not in result.params
    assert list(result.params) == [key for key in floating["claims"] if key not in (*CLAIM_NAMES, "lse", "brw")]


@pytest.mark.parametrize("algorithm", FLOATING, ids=[a["algorithm"] for a in FLOATING])
def test_floating_tampered_strings_are_refused_as_the_vectors_say(algorithm: dict[str, Any]) -> None:
    for tampered in algorithm["floating"]["tampered"]:
        result = verify_licence(tampered["licence"], algorithm["publicKeyPem"], now=NOW)
        assert (result.signed, result.reasons) == (False, [tampered["expected"]]), tampered["name"]


@pytest.mark.parametrize("algorithm", FLOATING, ids=[a["algorithm"] for a in FLOATING])
def test_svcr2_receipts_verify_under_their_tag_and_grant_only_with_a_lease_end(algorithm: dict[str, Any]) -> None:
    keys = read_public_keys(algorithm["publicKeyPem"])
    for receipt in algorithm["floating"]["receipts"]:
        fields, tag = receipt["fields"], receipt["tag"]
        if "messageHex" in receipt:
            assert receipt_message(fields, tag).hex() == receipt["messageHex"], receipt["name"]
        assert verify_receipt(fields, receipt["receipt"], keys, tag), receipt["name"]
        grants = receipt_grants(fields["status"] or "", fields["boundAt"] or "", fields["leaseEndsAt"] or "", tag)
        assert grants is receipt["grants"], receipt["name"]
    for bad in algorithm["floating"]["badReceipts"]:
        assert not verify_receipt(bad["fields"], bad["receipt"], keys, bad["tag"]), bad["name"]


def test_an_svcr1_receipt_never_signs_a_lease_end() -> None:
    fields = {**ALGORITHMS[0]["receipts"][0]["fields"], "leaseEndsAt": "2026-11-22T07:15:00.000Z"}
    assert not verify_receipt(fields, ALGORITHMS[0]["receipts"][0]["receipt"], read_public_keys(ALGORITHMS[0]["publicKeyPem"]))
