import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { FINGERPRINT_COMPONENTS, hashComponent, parseFingerprint } from '@licensor/protocol';
import { collectFingerprint } from '@licensor/sdk';

describe.runIf(process.platform === 'linux')('collectFingerprint on this Linux machine', () => {
  const report = collectFingerprint();

  it('returns a well-formed fingerprint whose parts agree with the report', () => {
    expect(parseFingerprint(report.fingerprint)).toEqual(report.parts);
    for (const name of FINGERPRINT_COMPONENTS) {
      expect(report.parts[name]).toMatch(report.readable[name] ? /^[0-9a-f]{16}$/ : /^-$/);
    }
    expect(report.stableId).toBe(false);
  });

  it('reads the components this machine has', () => {
    const machineId = ['/etc/machine-id', '/var/lib/dbus/machine-id'].map((file) => (existsSync(file) ? readFileSync(file, 'utf8').trim() : '')).find(Boolean);
    expect(report.readable.machine).toBe(Boolean(machineId));
    if (machineId) expect(report.parts.machine).toBe(hashComponent(machineId));
    expect(report.parts.host).toBe(hashComponent(os.hostname()));
    const cpu = /^model name[ \t]*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim();
    expect(report.readable.cpu).toBe(Boolean(cpu));
    if (cpu) expect(report.parts.cpu).toBe(hashComponent(cpu));
    const macs = Object.values(os.networkInterfaces())
      .flat()
      .filter((a) => a && !a.internal && a.mac !== '00:00:00:00:00:00');
    expect(report.readable.mac).toBe(macs.length > 0);
    if (report.readable.mac) expect(macs.map((a) => hashComponent(a!.mac))).toContain(report.parts.mac);
    console.info('fingerprint components readable here:', report.readable);
  });

  it('is stable across calls and never contains a raw value', () => {
    expect(collectFingerprint()).toEqual(report);
    const text = JSON.stringify(report);
    expect(text).not.toContain(os.hostname());
    if (existsSync('/etc/machine-id')) expect(text).not.toContain(readFileSync('/etc/machine-id', 'utf8').trim());
  });

  it('replaces only the machine id with a stable id', () => {
    const withId = collectFingerprint({ stableId: 'install-7f3a' });
    expect(withId.stableId).toBe(true);
    expect(withId.parts).toEqual({ ...report.parts, machine: hashComponent('install-7f3a') });
    expect(withId.readable.machine).toBe(true);
  });
});
