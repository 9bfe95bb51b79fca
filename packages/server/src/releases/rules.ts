import semver from 'semver';
import { badRequest, invalid } from '../core/errors.js';
import type { ProductParam } from '../products/schemas.js';
import { paramValue } from '../products/shape.js';
import type { ArtifactRow } from './repo.js';

export const CHANNELS = ['stable', 'rc', 'beta', 'alpha', 'dev'] as const;
export type Channel = (typeof CHANNELS)[number];
export const STATUSES = ['DRAFT', 'PUBLISHED', 'YANKED'] as const;
export const PLATFORMS = ['linux', 'darwin', 'windows', 'any'] as const;
export const ARCHES = ['x86_64', 'aarch64', 'i686', 'armv7', 'riscv64', 'universal', 'any'] as const;
export const MAX_ARTIFACTS = 100;
export const MAX_REQUIRES = 16;

const CORE = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;

/** DESIGN.md 20: SemVer 2.0.0 without build metadata, `v` or a leading zero; numbers ≤ 2^53 − 1. */
export function checkVersion(version: string): string {
  if (version.length > 64) throw invalid('version', 'at most 64 characters');
  if (/^[vV]/.test(version)) throw invalid('version', 'write it without a "v" prefix (1.2.3)');
  if (version.includes('+')) throw invalid('version', 'build metadata (+…) is not accepted');
  const match = CORE.exec(version);
  if (!match) throw invalid('version', 'must be a SemVer version MAJOR.MINOR.PATCH[-PRERELEASE] without leading zeros');
  const numbers = [match[1]!, match[2]!, match[3]!, ...(match[4] ?? '').split('.').filter((p) => /^[0-9]+$/.test(p))];
  for (const n of numbers) {
    if (n.length > 1 && n.startsWith('0')) throw invalid('version', 'a numeric identifier has a leading zero');
    if (!Number.isSafeInteger(Number(n))) throw invalid('version', 'numbers must be at most 2^53 − 1');
  }
  if (semver.valid(version) !== version) throw invalid('version', 'must be a SemVer version MAJOR.MINOR.PATCH[-PRERELEASE]');
  return version;
}

/** The channel a version gets when none is given, and whether a given one fits it. */
export function checkChannel(version: string, channel: string | undefined): Channel {
  const pre = semver.prerelease(version);
  const first = pre === null ? null : String(pre[0]);
  if (channel === undefined) {
    if (first === null) return 'stable';
    return first === 'rc' || first === 'beta' || first === 'alpha' ? first : 'dev';
  }
  if (!(CHANNELS as readonly string[]).includes(channel)) throw invalid('channel', `must be one of ${CHANNELS.join(', ')}`);
  if (channel === 'stable' && first !== null) throw invalid('channel', 'a prerelease version cannot be stable');
  if ((channel === 'rc' || channel === 'beta' || channel === 'alpha') && first === null)
    throw invalid('channel', `${channel} needs a prerelease version (1.2.0-${channel}.1)`);
  return channel as Channel;
}

/** Highest SemVer precedence first; equal precedence (never for one product's versions) by text. */
export function byPrecedence(a: { version: string }, b: { version: string }): number {
  return semver.rcompare(a.version, b.version) || (a.version < b.version ? -1 : a.version > b.version ? 1 : 0);
}

const BUNDLE_VERSION = /^[0-9]+(\.[0-9]+){0,3}$/;
export function checkBundleVersion(value: string | null): string | null {
  if (value !== null && (value.length > 64 || !BUNDLE_VERSION.test(value)))
    throw invalid('bundleVersion', 'digits separated by dots, at most four parts (1.2.3)');
  return value;
}

/** `requires`: ≤ 16 of the product's parameter keys, values of their type (a STRING_LIST's: one string it contains). */
export function checkRequires(requires: Record<string, unknown>, params: readonly ProductParam[]): Record<string, unknown> {
  const keys = Object.keys(requires);
  if (keys.length > MAX_REQUIRES) throw invalid('requires', `at most ${MAX_REQUIRES} parameters`);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const param = params.find((p) => p.key === key);
    if (!param) throw invalid(`requires.${key}`, 'not a parameter of this product', `Required parameter "${key}"`);
    const value = requires[key];
    if (param.type === 'STRING_LIST') {
      if (typeof value !== 'string') throw invalid(`requires.${key}`, "must be one text the licence's list contains", `Required ${param.label}`);
      out[key] = value;
    } else out[key] = paramValue(param, value, `requires.${key}`, `Required ${param.label}`);
  }
  return out;
}

const FILENAME = /^[A-Za-z0-9](?:[A-Za-z0-9._+ -]{0,253}[A-Za-z0-9._+-])?$/;
export function checkFilename(filename: string | undefined): string {
  if (filename === undefined || filename === '') throw badRequest('Query parameter "filename" is required');
  if (!FILENAME.test(filename) || filename.includes('..'))
    throw badRequest(
      'Query parameter "filename": letters, digits, ".", "_", "+", "-" and spaces, starting with a letter or digit, at most 255 characters, without ".."',
    );
  return filename;
}

export function oneOf<T extends string>(field: string, values: readonly T[], value: string | undefined): T {
  if (value === undefined || !(values as readonly string[]).includes(value))
    throw badRequest(`Query parameter "${field}": must be one of ${values.join(', ')}`);
  return value as T;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
export function checkTauriSignature(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (value.length === 0 || value.length > 4096 || !BASE64.test(value) || !Buffer.from(value, 'base64').toString('utf8').startsWith('untrusted comment:'))
    throw badRequest('Query parameter "tauriSignature": the .sig file\'s content (standard base64 of a minisign signature, at most 4,096 characters)');
  return value;
}
export function checkEdSignature(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (!BASE64.test(value) || Buffer.from(value, 'base64').length !== 64)
    throw badRequest('Query parameter "edSignature": standard base64 of a 64-byte EdDSA signature');
  return value;
}

/**
 * Whether a licence's current term meets a release's `requires` (DESIGN.md 20): each claim equals
 * the value, a STRING_LIST claim (an array) contains it.
 */
export function meetsRequires(requires: Record<string, unknown>, claims: Record<string, unknown>): boolean {
  return Object.entries(requires).every(([key, value]) => {
    const claim = claims[key];
    if (Array.isArray(claim)) return claim.includes(value);
    return claim !== undefined && JSON.stringify(claim) === JSON.stringify(value);
  });
}

/** An artifact's public facts: the grant's `artifact` (DESIGN.md 20), and the first fields of the operator's record. */
export function artifactFacts(row: Pick<ArtifactRow, 'id' | 'filename' | 'platform' | 'arch' | 'size' | 'sha256' | 'sha512' | 'content_type'>) {
  return {
    id: Number(row.id),
    filename: row.filename,
    platform: row.platform,
    arch: row.arch,
    size: Number(row.size),
    sha256: row.sha256,
    sha512: row.sha512,
    contentType: row.content_type,
  };
}
