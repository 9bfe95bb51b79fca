import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  buildFingerprint,
  FINGERPRINT_COMPONENTS,
  MISSING_COMPONENT,
  parseFingerprint,
  type FingerprintComponent,
  type FingerprintParts,
  type RawComponents,
} from '@licensor/protocol';

export interface FingerprintOptions {
  /**
   * Replaces the machine id. For containers and cloned VMs, where `/etc/machine-id` is shared
   * or missing: pass something stable per installation (e.g. a UUID the application stores once).
   */
  stableId?: string;
}

export interface FingerprintReport {
  /** `SVC1.<body>.<checksum>`: what the check API receives. */
  fingerprint: string;
  /** The hashed parts (16 hex characters each, `-` when unreadable). Raw values are never kept. */
  parts: FingerprintParts;
  /** Which components could be read on this machine. */
  readable: Record<FingerprintComponent, boolean>;
  /** True when the machine component is the `stableId` option rather than the OS machine id. */
  stableId: boolean;
}

/**
 * This machine's fingerprint: machine id, host name, primary MAC, CPU model and system disk id,
 * each hashed here (DESIGN.md 2); raw values never leave this function.
 * Synchronous (file reads on Linux, a few short commands on macOS and Windows) so that offline
 * verification can call it without becoming asynchronous.
 */
export function collectFingerprint(options: FingerprintOptions = {}): FingerprintReport {
  const platform = process.platform;
  const raw: RawComponents = {
    machine: options.stableId || readMachineId(platform),
    host: attempt(() => os.hostname().trim()),
    mac: primaryMac(platform),
    cpu: cpuModel(platform),
    disk: readSystemDiskId(platform),
  };
  const fingerprint = buildFingerprint(raw);
  const parts = parseFingerprint(fingerprint);
  const readable = Object.fromEntries(FINGERPRINT_COMPONENTS.map((name) => [name, parts[name] !== MISSING_COMPONENT])) as Record<FingerprintComponent, boolean>;
  return { fingerprint, parts, readable, stableId: Boolean(options.stableId) };
}

/** Runs a reader; anything it cannot read (missing file, no permission, no command) is null. */
function attempt(read: () => string | null | undefined): string | null {
  try {
    const value = read()?.trim();
    return value ? value : null;
  } catch {
    return null;
  }
}

const readText = (file: string) => readFileSync(file, 'utf8');

function run(command: string, args: string[]): string {
  return execFileSync(command, args, { encoding: 'utf8', timeout: 5000, windowsHide: true, stdio: ['ignore', 'pipe', 'ignore'] });
}

/** First capture of `pattern` in a command's output. */
function capture(command: string, args: string[], pattern: RegExp): string | null {
  return attempt(() => pattern.exec(run(command, args))?.[1]);
}

function readMachineId(platform: NodeJS.Platform): string | null {
  switch (platform) {
    case 'darwin':
      return capture('ioreg', ['-rd1', '-c', 'IOPlatformExpertDevice'], /"IOPlatformUUID"\s*=\s*"([^"]+)"/);
    case 'win32':
      return capture('reg', ['query', 'HKLM\\SOFTWARE\\Microsoft\\Cryptography', '/v', 'MachineGuid'], /MachineGuid\s+REG_SZ\s+(\S+)/);
    default:
      return attempt(() => readText('/etc/machine-id')) ?? attempt(() => readText('/var/lib/dbus/machine-id'));
  }
}

/**
 * The MAC of the interface carrying the default route (Linux), else of the first non-internal
 * interface by name, so the choice does not depend on the order the OS lists them in.
 */
function primaryMac(platform: NodeJS.Platform): string | null {
  return attempt(() => {
    const interfaces = os.networkInterfaces();
    const usable = (name: string) => (interfaces[name] ?? []).find((address) => !address.internal && address.mac !== '00:00:00:00:00:00')?.mac;
    if (platform === 'linux') {
      const routed = attempt(() => defaultRouteInterface());
      const mac = routed ? usable(routed) : undefined;
      if (mac) return mac;
    }
    for (const name of Object.keys(interfaces).sort()) {
      const mac = usable(name);
      if (mac) return mac;
    }
    return null;
  });
}

/** /proc/net/route: the interface whose destination is 0.0.0.0. */
function defaultRouteInterface(): string | null {
  for (const line of readText('/proc/net/route').split('\n').slice(1)) {
    const [name, destination] = line.trim().split(/\s+/);
    if (name && destination === '00000000') return name;
  }
  return null;
}

/**
 * Linux: the first `model name` line of /proc/cpuinfo, read here rather than through os.cpus(),
 * whose libuv names ARM cores from a table of its own no other SDK could follow (ARM kernels
 * write no model name: the component is then unreadable). macOS and Windows: os.cpus(), which
 * reads `machdep.cpu.brand_string` (sysctl) and the registry's ProcessorNameString of CPU 0.
 */
function cpuModel(platform: NodeJS.Platform): string | null {
  if (platform === 'darwin' || platform === 'win32') return attempt(() => os.cpus()[0]?.model);
  return attempt(() => /^model name[ \t]*:(.*)$/m.exec(readText('/proc/cpuinfo'))?.[1]);
}

function readSystemDiskId(platform: NodeJS.Platform): string | null {
  switch (platform) {
    case 'darwin':
      return capture('diskutil', ['info', '/'], /Volume UUID:\s*(\S+)/);
    case 'win32': {
      const drive = process.env.SystemDrive ?? 'C:';
      return capture('cmd', ['/d', '/c', `vol ${drive}`], /([0-9A-F]{4}-[0-9A-F]{4})\s*$/im);
    }
    default:
      return attempt(linuxRootDiskId);
  }
}

/**
 * The root filesystem's UUID (/dev/disk/by-uuid), else the serial number sysfs gives for its
 * block device (VMs without udev links). Overlay roots (containers) have neither: use stableId.
 */
function linuxRootDiskId(): string | null {
  const root = rootMount();
  if (root === null) return null;
  const uuids = '/dev/disk/by-uuid';
  const byUuid = attempt(() => {
    for (const uuid of readdirSync(uuids)) {
      const device = realpathSync(path.join(uuids, uuid));
      const number = attempt(() => readText(`/sys/class/block/${path.basename(device)}/dev`));
      if (device === root.source || number === root.device) return uuid;
    }
    return null;
  });
  if (byUuid) return byUuid;
  // A partition's serial lives on its parent disk, one directory up.
  for (const file of ['serial', 'device/serial', '../serial', '../device/serial', 'device/wwid']) {
    const serial = attempt(() => readText(`/sys/dev/block/${root.device}/${file}`));
    if (serial) return serial;
  }
  return null;
}

/** `major:minor` and source device of the filesystem mounted at `/` (the last mount wins). */
function rootMount(): { device: string; source: string } | null {
  let found: { device: string; source: string } | null = null;
  for (const line of readText('/proc/self/mountinfo').split('\n')) {
    const [before, after] = line.split(' - ');
    const fields = before?.split(' ') ?? [];
    if (fields[4] === '/' && fields[2] && after) found = { device: fields[2], source: after.split(' ')[1] ?? '' };
  }
  return found;
}
