import { createHmac } from 'node:crypto';
import { FINGERPRINT_COMPONENTS, MISSING_COMPONENT, type FingerprintComponent, type FingerprintParts } from '@licensor/protocol';

/*
 * DESIGN.md 18's ledger, computed: each present fingerprint component and the client address as
 * the first 32 hex of HMAC-SHA256(k, `name=value`) under the product's ledger key k
 * (Keyring.ledgerKey). Nothing raw is ever kept, answered or logged.
 */

/** A fingerprint's keyed component hashes, null where the component is missing. */
export type LedgerHashes = Record<FingerprintComponent, string | null>;

/** The order lookups take components in: the rarest first, so `cpu` is read only when nothing rarer is present. */
const LOOKUP_ORDER: readonly FingerprintComponent[] = ['machine', 'disk', 'mac', 'host', 'cpu'];

const keyed = (k: Buffer, text: string) => createHmac('sha256', k).update(text).digest('hex').slice(0, 32);

export function ledgerHashes(k: Buffer, parts: Readonly<FingerprintParts>): LedgerHashes {
  const hashes = {} as LedgerHashes;
  for (const name of FINGERPRINT_COMPONENTS) hashes[name] = parts[name] === MISSING_COMPONENT ? null : keyed(k, `${name}=${parts[name]}`);
  return hashes;
}

export const presentComponents = (parts: Readonly<FingerprintParts>) => FINGERPRINT_COMPONENTS.filter((name) => parts[name] !== MISSING_COMPONENT).length;

/**
 * The (component, hash) pairs a lookup reads: p − n + 1 of the p present components, rarest
 * first. An entry that matches with at least n equal components shares one of them.
 */
export function lookupPairs(hashes: LedgerHashes, n: number): Array<[FingerprintComponent, string]> {
  const present = LOOKUP_ORDER.filter((name) => hashes[name] !== null).map((name): [FingerprintComponent, string] => [name, hashes[name]!]);
  return present.slice(0, Math.max(1, present.length - n + 1));
}

/** A ledger entry as a lookup reads it. */
export interface LedgerEntry extends LedgerHashes {
  id: number;
  fpn: number;
  started_at: number;
  lid: string;
}

/** The components an entry shares with this machine, in section 2's order (machine, host, mac, cpu, disk). */
export const equalComponents = (entry: LedgerHashes, hashes: LedgerHashes): FingerprintComponent[] =>
  FINGERPRINT_COMPONENTS.filter((name) => hashes[name] !== null && entry[name] === hashes[name]);

/** The best of the entries that match with `need(entry)` equal components: the most equal, then the oldest. */
export function bestMatch<E extends LedgerEntry>(entries: readonly E[], hashes: LedgerHashes, need: (entry: E) => number): E | undefined {
  let best: { entry: E; score: number } | undefined;
  for (const entry of entries) {
    const score = equalComponents(entry, hashes).length;
    if (score < need(entry)) continue;
    const older = best && (entry.started_at < best.entry.started_at || (entry.started_at === best.entry.started_at && entry.id < best.entry.id));
    if (!best || score > best.score || (score === best.score && older)) best = { entry, score };
  }
  return best?.entry;
}

/** The client address's keyed hashes: an IPv4 address (an IPv4-mapped IPv6 one too), or an IPv6 address's /64 and /48. */
export function addressHashes(k: Buffer, ip: string): { addr: string; addr48: string | null } {
  const groups = ip.includes(':') ? ipv6Groups(ip) : null;
  if (groups === null) return { addr: keyed(k, `addr=${ip}`), addr48: null };
  if (groups.slice(0, 5).every((g) => g === '0000') && groups[5] === 'ffff') {
    const v4 = [groups[6]!, groups[7]!].flatMap((g) => [parseInt(g.slice(0, 2), 16), parseInt(g.slice(2), 16)]).join('.');
    return { addr: keyed(k, `addr=${v4}`), addr48: null };
  }
  return { addr: keyed(k, `addr=${groups.slice(0, 4).join(':')}::/64`), addr48: keyed(k, `addr=${groups.slice(0, 3).join(':')}::/48`) };
}

/** An IPv6 address's eight groups, four lowercase hex digits each (a trailing dotted IPv4 part becomes two). */
function ipv6Groups(ip: string): string[] {
  const bare = ip.split('%')[0]!;
  const split = (text: string) =>
    text === ''
      ? []
      : text.split(':').flatMap((group) => {
          if (!group.includes('.')) return [group];
          const [a, b, c, d] = group.split('.').map(Number) as [number, number, number, number];
          return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
        });
  const [head, tail] = bare.split('::') as [string, string | undefined];
  const first = split(head);
  const last = tail === undefined ? [] : split(tail);
  const zeros = tail === undefined ? [] : Array<string>(8 - first.length - last.length).fill('0');
  return [...first, ...zeros, ...last].map((g) => g.padStart(4, '0').toLowerCase());
}
