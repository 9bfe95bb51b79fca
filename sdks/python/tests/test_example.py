"""examples/python/run against the local stand-in of the check API: exit 0 exactly when VALID."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ROOT
from fake_service import CHECK_ID, CHECK_TOKEN, PUBLIC_KEY, FakeService, genuine, online_licence


@pytest.fixture
def service() -> Iterator[FakeService]:
    fake = FakeService()
    yield fake
    fake.close()


def run_example(service: FakeService, tmp_path: Path, licence: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "public.pem").write_text(PUBLIC_KEY)
    (tmp_path / "app.lic").write_text(licence)
    env = {
        **os.environ,
        "LICENSOR_URL": service.url,
        "LICENSOR_ORG": "acme",
        "LICENSOR_PRODUCT_KEY": "cad",
        "LICENSOR_CHECK_ID": CHECK_ID,
        "LICENSOR_CHECK_TOKEN": CHECK_TOKEN,
        "LICENSOR_PUBLIC_KEY_FILE": str(tmp_path / "public.pem"),
        "LICENSOR_LICENCE_FILE": str(tmp_path / "app.lic"),
        "LICENSOR_STATE_DIR": str(tmp_path / "state"),
    }
    return subprocess.run([str(ROOT / "examples/python/run")], env=env, capture_output=True, text=True, timeout=60)


def test_exits_0_for_a_licence_the_service_confirms(service: FakeService, tmp_path: Path) -> None:
    done = run_example(service, tmp_path, online_licence())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VALID: the licence is in good standing" in done.stdout
    assert (tmp_path / "state" / "acme" / "cad").is_dir()


def test_exits_non_zero_for_a_revoked_licence_or_no_answer(service: FakeService, tmp_path: Path) -> None:
    service.respond = lambda endpoint, body: (200, genuine(body, "REVOKED"))
    revoked = run_example(service, tmp_path, online_licence())
    assert revoked.returncode == 1 and "INVALID: REVOKED" in revoked.stdout
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    down = run_example(service, tmp_path, online_licence())
    assert down.returncode == 1 and "HTTP_STATUS 503" in down.stdout
