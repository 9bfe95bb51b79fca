"""This machine's fingerprint (DESIGN 2): five components read from the same raw sources as the
TypeScript SDK (packages/sdk/src/fingerprint.ts, which reads them through Node's ``os``
module), hashed here; raw values never leave this module."""

from __future__ import annotations

import errno
import os
import re
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable

from ._wire import COMPONENTS, MISSING, build_fingerprint, parse_fingerprint


@dataclass(frozen=True)
class FingerprintReport:
    #: ``SVC1.<body>.<checksum>``: what the check API receives.
    fingerprint: str
    #: The hashed parts (16 hex characters each, ``-`` when unreadable).
    parts: dict[str, str]
    #: Which components could be read on this machine.
    readable: dict[str, bool]
    #: True when the machine component is the ``stable_id`` option rather than the OS machine id.
    stable_id: bool


def collect_fingerprint(stable_id: str | None = None) -> FingerprintReport:
    """Machine id, host name, primary MAC, CPU model and system disk id, each hashed.

    ``stable_id`` replaces the machine id: for containers and cloned VMs, whose machine id is
    shared or missing, pass something stable per installation (a UUID stored once).
    """
    raw = {
        "machine": stable_id or _machine_id(),
        "host": _attempt(socket.gethostname),
        "mac": _attempt(_primary_mac),
        "cpu": _attempt(_cpu_model),
        "disk": _system_disk_id(),
    }
    fingerprint = build_fingerprint(raw)
    parts = parse_fingerprint(fingerprint)
    return FingerprintReport(fingerprint, parts, {name: parts[name] != MISSING for name in COMPONENTS}, bool(stable_id))


def _attempt(read: Callable[[], str | None]) -> str | None:
    """Runs a reader; anything it cannot read (missing file, no permission, no command) is None."""
    try:
        value = read()
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    value = value.strip() if value is not None else None
    return value or None


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read()


def _run(*command: str) -> str:
    flags = getattr(subprocess, "CREATE_NO_WINDOW", 0)
    return subprocess.run(
        command, capture_output=True, text=True, timeout=5, check=True, stdin=subprocess.DEVNULL, creationflags=flags
    ).stdout


def _capture(pattern: str, *command: str, flags: int = 0) -> str | None:
    """First capture of ``pattern`` in a command's output."""

    def read() -> str | None:
        found = re.search(pattern, _run(*command), flags)
        return found.group(1) if found else None

    return _attempt(read)


# --- machine id ---------------------------------------------------------------------------------


def _machine_id() -> str | None:
    if sys.platform == "darwin":
        return _capture(r'"IOPlatformUUID"\s*=\s*"([^"]+)"', "ioreg", "-rd1", "-c", "IOPlatformExpertDevice")
    if sys.platform == "win32":
        return _attempt(lambda: _registry(r"SOFTWARE\Microsoft\Cryptography", "MachineGuid"))
    return _attempt(lambda: _read_text("/etc/machine-id")) or _attempt(lambda: _read_text("/var/lib/dbus/machine-id"))


def _registry(path: str, name: str) -> str:
    """A string value under HKEY_LOCAL_MACHINE, read from the 64-bit view as Node does."""
    if sys.platform != "win32":
        raise OSError("the registry exists on Windows only")
    import winreg

    access = winreg.KEY_READ | winreg.KEY_WOW64_64KEY
    with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, path, 0, access) as key:
        return str(winreg.QueryValueEx(key, name)[0])


# --- CPU model ----------------------------------------------------------------------------------


def _cpu_model() -> str | None:
    if sys.platform == "darwin":
        return _run("sysctl", "-n", "machdep.cpu.brand_string")
    if sys.platform == "win32":
        return _registry(r"HARDWARE\DESCRIPTION\System\CentralProcessor\0", "ProcessorNameString")
    # The first "model name" line (most ARM kernels write none: the component is then unreadable).
    found = re.search(r"^model name[ \t]*:(.*)$", _read_text("/proc/cpuinfo"), re.MULTILINE)
    return found.group(1) if found else None


# --- primary MAC (Node's os.networkInterfaces(): up and running interfaces with an address) -----


def _primary_mac() -> str | None:
    if sys.platform == "darwin":
        interfaces = _darwin_interfaces()
    elif sys.platform == "win32":
        interfaces = _windows_interfaces()
    else:
        interfaces = _linux_interfaces()
        routed = _attempt(_default_route_interface)
        if routed is not None and routed in interfaces:
            return interfaces[routed]
    for name in sorted(interfaces):
        return interfaces[name]
    return None


_ZERO_MAC = "00:00:00:00:00:00"


def _mac_text(octets: list[int]) -> str:
    return ":".join(f"{octet:02x}" for octet in octets[:6])


def _linux_interfaces() -> dict[str, str]:
    """Name → MAC of every interface that is up and running, not loopback, has an IPv4 or IPv6
    address and a non-zero MAC: what libuv's getifaddrs() filter leaves with a MAC."""
    if sys.platform == "win32":
        raise OSError("ioctl is for Linux")
    import fcntl

    with_ipv6 = set()
    try:
        for line in _read_text("/proc/net/if_inet6").splitlines():
            fields = line.split()
            if fields:
                with_ipv6.add(fields[-1])
    except OSError:
        pass
    found: dict[str, str] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                flags = struct.unpack("H", fcntl.ioctl(probe, 0x8913, request)[16:18])[0]  # SIOCGIFFLAGS
            except OSError:
                continue
            up_and_running, loopback = 0x1 | 0x40, 0x8
            if flags & up_and_running != up_and_running or flags & loopback:
                continue
            if name not in with_ipv6 and not _has_ipv4(fcntl.ioctl, probe, request):
                continue
            mac = _attempt(lambda: _read_text(f"/sys/class/net/{name}/address"))
            if mac is not None:
                mac = _mac_text([int(octet, 16) for octet in mac.split(":")])
                if mac != _ZERO_MAC and len(mac) == 17:
                    found[name] = mac
    return found


def _has_ipv4(ioctl: Callable[..., bytes], probe: socket.socket, request: bytes) -> bool:
    try:
        ioctl(probe, 0x8915, request)  # SIOCGIFADDR
        return True
    except OSError as error:
        if error.errno != errno.EADDRNOTAVAIL:
            raise
        return False


def _default_route_interface() -> str | None:
    """/proc/net/route: the interface whose destination is 0.0.0.0."""
    for line in _read_text("/proc/net/route").split("\n")[1:]:
        fields = line.split()
        if len(fields) > 1 and fields[1] == "00000000":
            return fields[0]
    return None


def _darwin_interfaces() -> dict[str, str]:
    """``ifconfig``: interfaces flagged UP and RUNNING, not LOOPBACK, with an inet or inet6 address."""
    found: dict[str, str] = {}
    for block in re.split(r"\n(?=\S)", _run("ifconfig")):
        header = re.match(r"([^:\s]+): flags=\w+<([^>]*)>", block)
        ether = re.search(r"^\s+ether ([0-9a-fA-F:]+)", block, re.MULTILINE)
        if header is None or ether is None or not re.search(r"^\s+inet6? ", block, re.MULTILINE):
            continue
        flags = header.group(2).split(",")
        if "UP" not in flags or "RUNNING" not in flags or "LOOPBACK" in flags:
            continue
        mac = _mac_text([int(octet, 16) for octet in ether.group(1).split(":")])
        if mac != _ZERO_MAC:
            found[header.group(1)] = mac
    return found


def _windows_interfaces() -> dict[str, str]:
    """``getmac /v``: connection name → physical address of adapters that are connected (the
    adapters Node lists are those whose status is up)."""
    found: dict[str, str] = {}
    for line in _run("getmac", "/fo", "csv", "/v", "/nh").splitlines():
        cells = [cell.strip('"') for cell in re.findall(r'"[^"]*"', line)]
        if len(cells) < 4 or not re.fullmatch(r"[0-9A-Fa-f]{2}(-[0-9A-Fa-f]{2}){5}", cells[2]):
            continue
        if not cells[3].startswith("\\Device\\"):
            continue  # "Media disconnected", "Disconnected": not up
        mac = cells[2].replace("-", ":").lower()
        if mac != _ZERO_MAC:
            found[cells[0]] = mac
    return found


# --- system disk --------------------------------------------------------------------------------


def _system_disk_id() -> str | None:
    if sys.platform == "darwin":
        return _capture(r"Volume UUID:\s*(\S+)", "diskutil", "info", "/")
    if sys.platform == "win32":
        drive = os.environ.get("SystemDrive", "C:")
        return _capture(r"([0-9A-F]{4}-[0-9A-F]{4})\s*$", "cmd", "/d", "/c", f"vol {drive}", flags=re.IGNORECASE | re.MULTILINE)
    return _attempt(_linux_root_disk_id)


def _linux_root_disk_id() -> str | None:
    """The root filesystem's UUID (/dev/disk/by-uuid), else the serial number sysfs gives for its
    block device. Overlay roots (containers) have neither: use stable_id."""
    root = _root_mount()
    if root is None:
        return None
    device, source = root

    def by_uuid() -> str | None:
        folder = "/dev/disk/by-uuid"
        for uuid in sorted(os.listdir(folder)):
            target = os.path.realpath(os.path.join(folder, uuid))
            number = _attempt(lambda: _read_text(f"/sys/class/block/{os.path.basename(target)}/dev"))
            if target == source or number == device:
                return uuid
        return None

    found = _attempt(by_uuid)
    if found:
        return found
    # A partition's serial lives on its parent disk, one directory up.
    for name in ("serial", "device/serial", "../serial", "../device/serial", "device/wwid"):
        serial = _attempt(lambda: _read_text(f"/sys/dev/block/{device}/{name}"))
        if serial:
            return serial
    return None


def _root_mount() -> tuple[str, str] | None:
    """``major:minor`` and source device of the filesystem mounted at ``/`` (the last mount wins)."""
    found = None
    for line in _read_text("/proc/self/mountinfo").split("\n"):
        before, _, after = line.partition(" - ")
        fields = before.split(" ")
        if len(fields) > 4 and fields[4] == "/" and fields[2] and after:
            rest = after.split(" ")
            found = (fields[2], rest[1] if len(rest) > 1 else "")
    return found
