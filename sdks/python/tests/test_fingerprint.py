"""Fingerprint collection on the machine running the tests, against the TypeScript SDK's."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

from conftest import ROOT
from licensor import collect_fingerprint, fingerprint
from licensor._wire import build_fingerprint, hash_component, parse_fingerprint


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


IFCONFIG = """lo0: flags=8049<UP,LOOPBACK,RUNNING,MULTICAST> mtu 16384
\tinet 127.0.0.1 netmask 0xff000000
en1: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500
\tether 3c:22:fb:00:00:02
\tstatus: inactive
en0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500
\tether 3C:22:FB:00:00:01
\tinet6 fe80::1%en0 prefixlen 64 scopeid 0x4
\tinet 192.168.1.20 netmask 0xffffff00 broadcast 192.168.1.255
en2: flags=8822<BROADCAST,SMART,SIMPLEX,MULTICAST> mtu 1500
\tether 3c:22:fb:00:00:00
\tinet 10.0.0.2 netmask 0xffffff00
bridge0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500
\tether 00:00:00:00:00:00
\tinet 10.1.0.1 netmask 0xffffff00
"""

MAC_OUTPUTS = {
    ("ioreg", "-rd1", "-c", "IOPlatformExpertDevice"): '+-o J314sAP  <class IOPlatformExpertDevice>\n    "IOPlatformUUID" = "9F3C1A2B-0000-4000-8000-ABCDEF012345"\n',
    ("sysctl", "-n", "machdep.cpu.brand_string"): "Apple M1 Pro\n",
    ("ifconfig",): IFCONFIG,
    ("diskutil", "info", "/"): "   Volume Name:              Macintosh HD\n   Volume UUID:              6A1B2C3D-1111-2222-3333-444455556666\n",
}

GETMAC = """"Wi-Fi","Intel(R) Wi-Fi 6 AX201 160MHz","A4-B1-C1-00-00-02","Media disconnected"
"Ethernet","Realtek PCIe GbE Family Controller","A4-B1-C1-00-00-01","\\Device\\Tcpip_{6B1E0A2C-1111-2222-3333-444455556666}"
"Bluetooth Network Connection","Bluetooth Device (Personal Area Network)","N/A","Hardware not present"
"""

WINDOWS_OUTPUTS = {
    ("getmac", "/fo", "csv", "/v", "/nh"): GETMAC,
    ("cmd", "/d", "/c", "vol C:"): " Volume in drive C has no label.\r\n Volume Serial Number is 1A2B-3C4D\r\n",
}


def fake_platform(monkeypatch: pytest.MonkeyPatch, platform: str, outputs: dict[tuple[str, ...], str]) -> None:
    monkeypatch.setattr(fingerprint.sys, "platform", platform)
    monkeypatch.setattr(fingerprint, "_run", lambda *command: outputs[command])
    monkeypatch.setattr(socket, "gethostname", lambda: f"{platform}-host")


def test_macos_sources_are_read_from_ioreg_sysctl_ifconfig_and_diskutil(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_platform(monkeypatch, "darwin", MAC_OUTPUTS)
    raw = {"machine": "9F3C1A2B-0000-4000-8000-ABCDEF012345", "host": "darwin-host", "mac": "3c:22:fb:00:00:01", "cpu": "Apple M1 Pro", "disk": "6A1B2C3D-1111-2222-3333-444455556666"}
    assert collect_fingerprint().fingerprint == build_fingerprint(raw)


def test_windows_sources_are_read_from_the_registry_getmac_and_vol(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_platform(monkeypatch, "win32", WINDOWS_OUTPUTS)
    registry = {
        (r"SOFTWARE\Microsoft\Cryptography", "MachineGuid"): "c0ffee00-1111-2222-3333-444455556666",
        (r"HARDWARE\DESCRIPTION\System\CentralProcessor\0", "ProcessorNameString"): "Intel(R) Core(TM) i7-1185G7 @ 3.00GHz  ",
    }
    monkeypatch.setattr(fingerprint, "_registry", lambda path, name: registry[(path, name)])
    monkeypatch.setenv("SystemDrive", "C:")
    raw = {"machine": "c0ffee00-1111-2222-3333-444455556666", "host": "win32-host", "mac": "a4:b1:c1:00:00:01", "cpu": "Intel(R) Core(TM) i7-1185G7 @ 3.00GHz", "disk": "1A2B-3C4D"}
    assert collect_fingerprint().fingerprint == build_fingerprint(raw)


def test_a_source_that_fails_makes_its_component_unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*command: str) -> str:
        raise subprocess.CalledProcessError(1, command)

    monkeypatch.setattr(fingerprint.sys, "platform", "darwin")
    monkeypatch.setattr(fingerprint, "_run", failing)
    report = collect_fingerprint()
    assert report.readable == {"machine": False, "host": True, "mac": False, "cpu": False, "disk": False}
