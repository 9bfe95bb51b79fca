"""Air-gapped activation (DESIGN 14): the shared vectors' texts, and a whole activation on one machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from client_fixtures import MY_FP, Clock
from conftest import ALGORITHMS, VECTORS, b64u, sign
from fake_service import KEY, T0, FakeService, genuine, lid_of, online_licence
from licensor import LicenceClient, LicensorError, memory_store
from licensor._wire import MalformedError, b64u_decode
from licensor.air_gap import DEACTIVATION, REQUEST, RESPONSE, compact_text, device_key, dpk_of, groups_of_five, parse_text, sign_text
from licensor.keys import read_public_keys

AIR_GAP = VECTORS["airGap"]
DEVICE = AIR_GAP["deviceKey"]
OTHER_FP = VECTORS["fingerprints"][1]["fingerprint"]
ED25519 = next(a for a in ALGORITHMS if a["algorithm"] == "ED25519")


def device_public(dpk: str) -> list[Any]:
    return [Ed25519PublicKey.from_public_bytes(b64u_decode(dpk))]


def judged(form: Any, text: str, keys: list[Any]) -> str:
    """MALFORMED, BAD_SIGNATURE or OK, as the vectors name a reader's verdict."""
    try:
        parsed = parse_text(form, text)
    except MalformedError:
        return "MALFORMED"
    return "OK" if any(parsed.verifies_with(key) for key in keys) else "BAD_SIGNATURE"


def test_the_device_key_signs_the_vectors_request_and_deactivation_exactly() -> None:
    key = device_key(DEVICE["seed"])
    assert dpk_of(key) == DEVICE["dpk"]
    request, deactivation = AIR_GAP["request"], AIR_GAP["deactivation"]
    assert sign_text(REQUEST, request["fields"], key) == request["text"]
    assert groups_of_five(request["text"]) == request["groups"]
    assert compact_text(request["groups"]) == request["text"]
    assert sign_text(DEACTIVATION, deactivation["fields"], key) == deactivation["text"]
    assert parse_text(REQUEST, request["text"]).fields == request["fields"]
    assert judged(DEACTIVATION, deactivation["text"], device_public(DEVICE["dpk"])) == "OK"
    assert judged(REQUEST, request["text"], device_public(AIR_GAP["otherDeviceKey"]["dpk"])) == "BAD_SIGNATURE"


@pytest.mark.parametrize("response", AIR_GAP["responses"], ids=lambda r: r["algorithm"])
def test_every_algorithms_response_verifies_with_its_key_only(response: dict[str, Any]) -> None:
    own = next(a for a in ALGORITHMS if a["algorithm"] == response["algorithm"])
    assert parse_text(RESPONSE, response["text"]).fields == response["fields"]
    assert judged(RESPONSE, response["text"], read_public_keys(own["publicKeyPem"])) == "OK"
    others = [a["publicKeyPem"] for a in ALGORITHMS if a is not own]
    assert judged(RESPONSE, response["text"], read_public_keys(others)) == "BAD_SIGNATURE"


@pytest.mark.parametrize(
    ("form", "case", "keys"),
    [(REQUEST, c, device_public(DEVICE["dpk"])) for c in AIR_GAP["badRequests"]]
    + [(DEACTIVATION, c, device_public(DEVICE["dpk"])) for c in AIR_GAP["badDeactivations"]]
    + [(RESPONSE, c, read_public_keys(ED25519["publicKeyPem"])) for c in AIR_GAP["badResponses"]],
    ids=lambda v: v["name"] if isinstance(v, dict) else None,
)
def test_bad_texts_are_refused_as_the_vectors_say(form: Any, case: dict[str, Any], keys: list[Any]) -> None:
    assert judged(form, case["text"], keys) == case["expected"]


# --- one machine, end to end -------------------------------------------------------------------


@pytest.fixture
def service(service: FakeService) -> FakeService:
    service.respond = lambda endpoint, body: (503, {"error": "down"})  # the machine never reaches it
    return service


@pytest.fixture
def client(make: Callable[..., LicenceClient]) -> Callable[..., LicenceClient]:
    """Clients of one licence, on this machine or another."""
    licence = online_licence()
    return lambda fingerprint=MY_FP, **options: make(licence, fingerprint=fingerprint, **options)


def answer(request: str, aid: str = "7", days: int = 90, private_pem: str = KEY["privateKeyPem"], **changes: Any) -> str:
    """The service's SVCX1 for an SVCA1 request, signed by the product key."""
    fields = parse_text(REQUEST, request).fields
    iat = int(T0)
    payload = {"lid": fields["lid"], "aid": aid, "fp": fields["fp"], "dpk": fields["dpk"], "nonce": fields["nonce"],
               "status": "ACTIVE", "iat": iat, "boundAt": iat, "until": iat + days * 86_400, **changes}
    signed_part = "SVCX1." + b64u(json.dumps(payload, separators=(",", ":")).encode())
    return f"{signed_part}.{b64u(sign(private_pem, signed_part.encode()))}"


def test_an_activation_makes_the_machine_valid_offline_until_it_ends(client: Callable[..., LicenceClient], clock: Clock, tmp_path: Path) -> None:
    app = client()
    made = app.create_air_gap_request()
    assert compact_text(made.groups) == made.request and all(len(g) <= 5 for g in made.groups.split(" "))
    request = parse_text(REQUEST, made.request)
    assert request.fields["fp"] == MY_FP and judged(REQUEST, made.request, device_public(request.fields["dpk"])) == "OK"
    folder = tmp_path / "state" / "acme" / "cad"
    assert (folder / "device.json").stat().st_mode & 0o777 == 0o600

    assert app.check().state == "STALE"
    activated = app.activate_air_gapped(groups_of_five(answer(made.request)))  # typed back in groups
    assert activated.activation_id == "7"
    assert activated.until == "2027-02-20T07:00:00.000Z"
    result = client().check()  # a restart keeps it
    assert (result.state, result.air_gapped, result.reasons, result.no_answer and result.no_answer.code) == ("VALID", True, [], "HTTP_STATUS")

    clock.now = T0 - 3600  # the clock wound back before the response was signed
    rolled = app.check()
    assert (rolled.state, rolled.clock_rollback, rolled.air_gapped) == ("STALE", True, False)
    clock.now = T0 + 90 * 86_400
    assert (app.check().state, app.check().air_gapped) == ("STALE", False)
    clock.now = T0 + 3600
    assert client(OTHER_FP).check().air_gapped is False  # another machine (a copied state folder)

    code = app.deactivate_air_gapped()
    deactivation = parse_text(DEACTIVATION, code.code)
    assert deactivation.fields == {"lid": request.fields["lid"], "aid": "7", "iat": int(T0 + 3600)}
    assert judged(DEACTIVATION, code.code, device_public(request.fields["dpk"])) == "OK"
    assert app.check().state == "STALE"
    with pytest.raises(LicensorError) as again:
        app.deactivate_air_gapped()
    assert again.value.code == "BAD_ACTIVATION"


def test_a_verified_answer_that_says_not_licensed_ends_the_activation(client: Callable[..., LicenceClient], service: FakeService, clock: Clock) -> None:
    app = client()
    app.activate_air_gapped(answer(app.create_air_gap_request().request))
    clock.now = T0 + 60
    service.respond = lambda endpoint, body: (200, genuine(body, status="REVOKED", bound_at="", checked_at=T0 + 60))
    assert app.check().reasons == ["REVOKED"]
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    assert app.check().air_gapped is False
    with pytest.raises(LicensorError):
        app.deactivate_air_gapped()


def refused(app: LicenceClient, response: str) -> str:
    with pytest.raises(LicensorError) as error:
        app.activate_air_gapped(response)
    return f"{error.value.code}: {error.value.message}"


def test_responses_not_for_this_installation_machine_request_or_product_are_refused(client: Callable[..., LicenceClient], tmp_path: Path) -> None:
    app = client()
    assert refused(app, "SVCX1.e30.AA") .startswith("BAD_ACTIVATION: not an activation response")
    first = app.create_air_gap_request().request
    second = app.create_air_gap_request().request  # replaces the first
    assert refused(app, answer(first)) == "BAD_ACTIVATION: the response answers another request"
    assert refused(app, answer(second, private_pem=ALGORITHMS[1]["privateKeyPem"])).endswith("does not verify with this product's keys")
    assert refused(app, answer(second, lid="another")) == "BAD_ACTIVATION: the response is for another licence"
    assert refused(app, answer(second, dpk=AIR_GAP["otherDeviceKey"]["dpk"])) == "BAD_ACTIVATION: the response is for another installation"
    assert refused(app, answer(second, fp=OTHER_FP)) == "BAD_ACTIVATION: the response is for another machine"
    assert refused(client(OTHER_FP), answer(second)) == "BAD_ACTIVATION: the response is for another installation"

    app.activate_air_gapped(answer(second))
    assert refused(app, answer(second)) == "BAD_ACTIVATION: no activation request is pending on this installation"
    app.deactivate_air_gapped()
    third = app.create_air_gap_request().request
    assert refused(app, answer(third, aid="7")) == "BAD_ACTIVATION: the response is for an activation deactivated here"
    state = json.loads((tmp_path / "state" / "acme" / "cad" / "air-gap.json").read_text())
    assert state["deactivated"] == [{"aid": "7", "nonce": parse_text(REQUEST, second).fields["nonce"]}]
    assert state["pending"] == third and state["activations"] == {}


def test_a_memory_only_store_has_no_device_key(client: Callable[..., LicenceClient]) -> None:
    with pytest.raises(LicensorError) as error:
        client(store=memory_store()).create_air_gap_request()
    assert error.value.code == "INVALID_OPTIONS"


def test_a_new_fingerprint_makes_a_new_device_key(client: Callable[..., LicenceClient]) -> None:
    mine = parse_text(REQUEST, client().create_air_gap_request().request).fields["dpk"]
    assert parse_text(REQUEST, client().create_air_gap_request().request).fields["dpk"] == mine
    assert parse_text(REQUEST, client(OTHER_FP).create_air_gap_request().request).fields["dpk"] != mine
    assert lid_of(client().licence) == parse_text(REQUEST, client().create_air_gap_request().request).fields["lid"]
