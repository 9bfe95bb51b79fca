import { describe, it, expect } from 'vitest';
import { createHash } from 'node:crypto';
import {
  FINGERPRINT_COMPONENTS,
  FingerprintError,
  MalformedError,
  b64uEncode,
  buildFingerprint,
  fingerprintFromParts,
  fingerprintsMatch,
  fpDigest,
  hashComponent,
  matchScore,
  parseFingerprint,
  type FingerprintParts,
  type FingerprintProblem,
} from '../src/index.js';

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const withChecksum = (bodyText: string) => {
  const body = b64uEncode(bodyText);
  return `SVC1.${body}.${sha(`SVC1.${body}`).slice(0, 8)}`;
};
const H = '0123456789abcdef';
const G = 'fedcba9876543210';

function problemOf(text: string): FingerprintProblem | 'none' {
  try {
    parseFingerprint(text);
    return 'none';
  } catch (error) {
    expect(error).toBeInstanceOf(FingerprintError);
    expect(error).toBeInstanceOf(MalformedError);
    expect((error as Error).message.length).toBeGreaterThan(10);
    return (error as FingerprintError).problem;
  }
}

describe('fingerprint construction', () => {
  it('lists the five components in order', () => {
    expect(FINGERPRINT_COMPONENTS).toEqual(['machine', 'host', 'mac', 'cpu', 'disk']);
  });

  it('hashes a component to 16 lowercase hex of SHA-256 over UTF-8', () => {
    expect(hashComponent('abc')).toBe('ba7816bf8f01cfea');
    expect(hashComponent('é')).toBe(sha('é').slice(0, 16));
  });

  it('builds the exact string from raw values', () => {
    const fingerprint = buildFingerprint({ machine: 'm', host: 'h', mac: null, cpu: 'c', disk: undefined });
    const bodyText = `machine=${hashComponent('m')};host=${hashComponent('h')};mac=-;cpu=${hashComponent('c')};disk=-`;
    const body = Buffer.from(bodyText).toString('base64url');
    expect(fingerprint).toBe(`SVC1.${body}.${sha(`SVC1.${body}`).slice(0, 8)}`);
    expect(parseFingerprint(fingerprint)).toEqual({ machine: hashComponent('m'), host: hashComponent('h'), mac: '-', cpu: hashComponent('c'), disk: '-' });
  });

  it('treats an empty raw value as unreadable', () => {
    expect(buildFingerprint({ machine: '', host: '' })).toBe(buildFingerprint({}));
    expect(parseFingerprint(buildFingerprint({}))).toEqual({ machine: '-', host: '-', mac: '-', cpu: '-', disk: '-' });
  });

  it('round-trips parts', () => {
    const parts: FingerprintParts = { machine: H, host: '-', mac: G, cpu: H, disk: '-' };
    expect(parseFingerprint(fingerprintFromParts(parts))).toEqual(parts);
  });

  it('refuses bad parts when assembling', () => {
    expect(() => fingerprintFromParts({ machine: H.toUpperCase(), host: H, mac: H, cpu: H, disk: H })).toThrow(TypeError);
    expect(() => fingerprintFromParts({ machine: H, host: H, mac: H, cpu: H } as FingerprintParts)).toThrow(TypeError);
  });
});

describe('parseFingerprint refusals', () => {
  const good = fingerprintFromParts({ machine: H, host: H, mac: H, cpu: H, disk: H });
  const [, body, sum] = good.split('.') as [string, string, string];

  it.each<[string, string, FingerprintProblem]>([
    ['wrong prefix', `SVC2.${body}.${sum}`, 'PREFIX'],
    ['lowercase prefix', `svc1.${body}.${sum}`, 'PREFIX'],
    ['missing prefix', `${body}.${sum}`, 'PREFIX'],
    ['empty', '', 'PREFIX'],
    ['four parts', `${good}.x`, 'STRUCTURE'],
    ['two parts', `SVC1.${body}`, 'STRUCTURE'],
    ['checksum of 9', `${good}0`, 'STRUCTURE'],
    ['checksum uppercase', `SVC1.${body}.ABCDEF01`, 'STRUCTURE'],
    ['very long', `SVC1.${'A'.repeat(1000)}.${sum}`, 'STRUCTURE'],
    ['empty body', `SVC1..${sum}`, 'ENCODING'],
    ['padded body', withChecksum('x').replace(/\.(?=[0-9a-f]{8}$)/, '=.'), 'ENCODING'],
    ['standard base64 body', `SVC1.${Buffer.from(`machine=${H};host=-;mac=-;cpu=-;disk=-??`).toString('base64')}.${sum}`, 'ENCODING'],
    ['body with trailing bits', `SVC1.${b64uEncode('machine=-;host=-;mac=-;cpu=-;disk=-').replace(/0$/, '1')}.${sum}`, 'ENCODING'],
    ['four names', withChecksum(`machine=${H};host=${H};mac=${H};cpu=${H}`), 'COMPONENTS'],
    ['six names', withChecksum(`machine=${H};host=${H};mac=${H};cpu=${H};disk=${H};gpu=${H}`), 'COMPONENTS'],
    ['swapped order', withChecksum(`machine=${H};host=${H};cpu=${H};mac=${H};disk=${H}`), 'COMPONENTS'],
    ['renamed', withChecksum(`machine=${H};host=${H};mac=${H};cpu=${H};drive=${H}`), 'COMPONENTS'],
    ['comma separated', withChecksum(`machine=${H},host=${H},mac=${H},cpu=${H},disk=${H}`), 'COMPONENTS'],
    ['spaces', withChecksum(`machine=${H}; host=${H};mac=${H};cpu=${H};disk=${H}`), 'COMPONENTS'],
    ['uppercase hex', withChecksum(`machine=${H.toUpperCase()};host=${H};mac=${H};cpu=${H};disk=${H}`), 'COMPONENT_VALUE'],
    ['short hex', withChecksum(`machine=${H};host=${H.slice(2)};mac=${H};cpu=${H};disk=${H}`), 'COMPONENT_VALUE'],
    ['long hex', withChecksum(`machine=${H};host=${H};mac=${H}0;cpu=${H};disk=${H}`), 'COMPONENT_VALUE'],
    ['empty value', withChecksum(`machine=${H};host=${H};mac=${H};cpu=;disk=${H}`), 'COMPONENT_VALUE'],
    ['raw value', withChecksum(`machine=${H};host=${H};mac=${H};cpu=${H};disk=WD-1234`), 'COMPONENT_VALUE'],
    ['double dash', withChecksum(`machine=--;host=${H};mac=${H};cpu=${H};disk=${H}`), 'COMPONENT_VALUE'],
    ['wrong checksum', `SVC1.${body}.${sum === '00000000' ? '11111111' : '00000000'}`, 'CHECKSUM'],
  ])('%s', (_name, text, problem) => {
    expect(problemOf(text)).toBe(problem);
  });

  it('refuses a body a lax decoder would accept', () => {
    const canonical = b64uEncode('machine=-;host=-;mac=-;cpu=-;disk=-');
    expect(canonical.endsWith('0')).toBe(true);
    const lax = canonical.replace(/0$/, '1');
    expect(Buffer.from(lax, 'base64url').toString()).toBe('machine=-;host=-;mac=-;cpu=-;disk=-');
    expect(problemOf(withChecksum('machine=-;host=-;mac=-;cpu=-;disk=-').replace(canonical, lax))).toBe('ENCODING');
  });

  it('accepts the good one', () => {
    expect(problemOf(good)).toBe('none');
  });
});

describe('matching', () => {
  const a: FingerprintParts = { machine: H, host: H, mac: H, cpu: H, disk: H };

  it('counts equal components present in both', () => {
    expect(matchScore(a, a)).toBe(5);
    expect(matchScore(a, { ...a, mac: G })).toBe(4);
    expect(matchScore(a, { ...a, mac: '-', disk: '-' })).toBe(3);
    const empty = { machine: '-', host: '-', mac: '-', cpu: '-', disk: '-' };
    expect(matchScore(empty, empty)).toBe(0); // two unreadable components are not evidence
  });

  it('matches at the need threshold', () => {
    const b = { ...a, cpu: G, disk: '-' };
    expect(fingerprintsMatch(a, b, 3)).toBe(true);
    expect(fingerprintsMatch(a, b, 4)).toBe(false);
    expect(fingerprintsMatch(a, a, 5)).toBe(true);
    expect(fingerprintsMatch({ ...a, machine: '-' }, { ...a, machine: '-' }, 5)).toBe(false);
  });

  it('refuses a need outside 1 to 5', () => {
    for (const need of [0, 6, 2.5, Number.NaN]) expect(() => fingerprintsMatch(a, a, need)).toThrow(RangeError);
  });
});

describe('fpDigest', () => {
  it('is 32 lowercase hex of SHA-256 over the string as sent', () => {
    const fingerprint = buildFingerprint({ machine: 'm' });
    expect(fpDigest(fingerprint)).toBe(sha(fingerprint).slice(0, 32));
    expect(fpDigest(fingerprint)).toMatch(/^[0-9a-f]{32}$/);
  });
});
