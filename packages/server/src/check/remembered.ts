import { hash } from 'node:crypto';
import { fpDigest, parseFingerprint, parseLicence, verifyLicence, type FingerprintParts, type ParsedLicence } from '@licensor/protocol';
import { digestsEqual, sha256Hex } from '../core/secrets.js';
import type { OpenedKey } from '../keys/keyring.js';

/** A map that holds at most `limit` entries: setting a new key past it forgets the oldest. */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly limit: number) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    if (this.entries.size >= this.limit && !this.entries.has(key)) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, value);
  }
}

/**
 * The SHA-256 of check-token secrets that matched a product's token hash: a check presents the
 * same secret every time, and hashing it is a pure function. Only a secret that verified is
 * remembered, so a caller guessing secrets cannot fill or churn the map; the remembered hash is
 * still compared in constant time with the product's hash as it is now (a rotated token fails).
 */
export class TokenDigests {
  private readonly digests = new BoundedMap<string, string>(10_000);

  /** Whether `secret` hashes to `tokenHash`. */
  matches(tokenHash: string, secret: string): boolean {
    const remembered = this.digests.get(secret);
    if (remembered !== undefined) return digestsEqual(tokenHash, remembered);
    const digest = sha256Hex(secret);
    if (!digestsEqual(tokenHash, digest)) return false;
    this.digests.set(secret, digest);
    return true;
  }
}

/** A licence string parsed, and the key of the key set it was verified against whose signature it carries. */
export interface VerifiedLicence {
  parsed: ParsedLicence;
  key: OpenedKey;
}

/**
 * Licence strings whose signature verified with a product's keys (docs/decisions.md, "Licence
 * check API"). Parsing and verifying are pure functions of the string and the keys, and an
 * installed application presents the same string on every check: the verdict is remembered
 * against the very key set (the array the product cache holds for one product version) it was
 * reached with, and served only to a request whose product has that same array, so a rotated,
 * added or replaced key is never served a remembered verdict. Keyed by the string's SHA-256 so
 * that memory stays bounded whatever the strings' length; only successes are remembered.
 */
export class VerifiedLicences {
  private readonly verified = new BoundedMap<string, VerifiedLicence & { keys: readonly OpenedKey[] }>(50_000);

  /**
   * The licence parsed and the key that signed it, or null when its signature verifies with none
   * of `keys`. A malformed string throws parseLicence's MalformedError, as without this memory.
   */
  read(text: string, keys: readonly OpenedKey[]): VerifiedLicence | null {
    const digest = hash('sha256', text, 'base64');
    const remembered = this.verified.get(digest);
    if (remembered?.keys === keys) return remembered;
    const parsed = parseLicence(text);
    const publicKey = verifyLicence(
      parsed,
      keys.map((k) => k.publicKey),
    );
    if (publicKey === null) return null;
    const found = { parsed, key: keys.find((k) => k.publicKey === publicKey)!, keys };
    this.verified.set(digest, found);
    return found;
  }
}

/** A fingerprint's components and its digest (fpDigest); the components are shared, never changed. */
export interface ReadFingerprint {
  parts: Readonly<FingerprintParts>;
  digest: string;
}

/**
 * Fingerprints read before: a machine sends the same one on every check, and parsing it (with its
 * checksum) and digesting it are two SHA-256s of a pure function. Only well-formed fingerprints are
 * remembered; a malformed one throws parseFingerprint's MalformedError every time.
 */
export class ReadFingerprints {
  private readonly read = new BoundedMap<string, ReadFingerprint>(50_000);

  of(fingerprint: string): ReadFingerprint {
    let found = this.read.get(fingerprint);
    if (found === undefined) {
      found = { parts: Object.freeze(parseFingerprint(fingerprint)), digest: fpDigest(fingerprint) };
      this.read.set(fingerprint, found);
    }
    return found;
  }
}
