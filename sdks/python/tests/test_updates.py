"""updates_until() (DESIGN 20): the newest verified term's upd, else its grace end, else None."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from fake_service import KEY, OTHER_KEY, T0, FakeService, lid_of, online_licence
from licensor import verify_licence

DAY = 86_400
IAT = int(T0) - 30 * DAY
UPD = IAT + 730 * DAY


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def test_the_signed_upd_and_it_is_not_a_parameter(make: Any) -> None:
    licence = online_licence(upd=UPD, seats=5)
    assert make(licence).updates_until() == at(UPD)
    assert verify_licence(licence, KEY["publicKeyPem"]).params == {"seats": 5}


def test_the_grace_end_without_upd_and_none_when_perpetual(make: Any) -> None:
    assert make(online_licence()).updates_until() == at(IAT + 365 * DAY + 7 * DAY)
    assert make(online_licence(exp=None)).updates_until() is None


def test_a_products_own_parameter_named_upd_stays_one(make: Any) -> None:
    licence = online_licence(exp=None, upd="nightly")
    assert verify_licence(licence, KEY["publicKeyPem"]).params == {"upd": "nightly"}
    assert make(licence).updates_until() is None


def test_follows_the_newest_verified_term(service: FakeService, make: Any) -> None:
    old = online_licence(upd=UPD)
    renewed = online_licence(lid=lid_of(old), iat=IAT + DAY, upd=UPD + 365 * DAY)
    service.respond = lambda endpoint, body: (200, {"license": renewed})
    client = make(old)
    assert client.updates_until() == at(UPD)
    client.fetch()
    assert client.updates_until() == at(UPD + 365 * DAY)


def test_none_for_a_licence_that_does_not_verify(make: Any) -> None:
    assert make(online_licence(OTHER_KEY["privateKeyPem"], upd=UPD)).updates_until() is None
