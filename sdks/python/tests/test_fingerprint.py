"""Fingerprint collection on the machine running the tests, against the TypeScript SDK's."""

from __future__ import annotations

import json
import subprocess

from conftest import ROOT
from licensor import collect_fingerprint
from licensor._wire import hash_component, parse_fingerprint


def test_collects_five_hashed_components_in_the_wire_form() -> None:
    report = collect_fingerprint()
    assert parse_fingerprint(report.fingerprint) == report.parts
    assert report.readable == {name: value != "-" for name, value in report.parts.items()}
    assert report.stable_id is False
    assert report.readable["host"] and report.readable["cpu"]


def test_a_stable_id_replaces_only_the_machine_component() -> None:
    plain, stable = collect_fingerprint(), collect_fingerprint(stable_id="installation-7")
    assert stable.parts["machine"] == hash_component("installation-7") and stable.stable_id
    assert {k: v for k, v in stable.parts.items() if k != "machine"} == {k: v for k, v in plain.parts.items() if k != "machine"}


def test_equals_the_typescript_sdks_fingerprint_of_this_machine() -> None:
    # Built by `npm install` at the repository root; the raw sources must agree component by component.
    script = "import('./packages/sdk/dist/index.js').then((sdk) => console.log(JSON.stringify(sdk.collectFingerprint())))"
    output = subprocess.run(["node", "-e", script], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60).stdout
    assert collect_fingerprint().parts == json.loads(output)["parts"]
