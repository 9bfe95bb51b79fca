"""The fixtures the client tests share (a pytest plugin of conftest.py): a stand-in service, a
clock a test moves, and clients of this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from conftest import VECTORS
from fake_service import CHECK_ID, CHECK_TOKEN, PUBLIC_KEY, T0, FakeService
from licensor import LicenceClient, file_store

MY_FP = VECTORS["fingerprints"][0]["fingerprint"]


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def service() -> Iterator[FakeService]:
    fake = FakeService()
    yield fake
    fake.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make(service: FakeService, clock: Clock, tmp_path: Path) -> Callable[..., LicenceClient]:
    """A client of this machine for a licence, keeping its state under tmp_path / "state"; options override."""

    def make(licence: str, **options: Any) -> LicenceClient:
        settings: dict[str, Any] = {
            "base_url": service.url,
            "slug": "acme",
            "check_id": CHECK_ID,
            "check_token": CHECK_TOKEN,
            "public_keys": [PUBLIC_KEY],
            "licence": licence,
            "store": file_store(tmp_path / "state"),
            "clock": clock,
            "fingerprint": MY_FP,
            "timeout": 2,
        }
        settings.update(options)
        return LicenceClient(**settings)

    return make
