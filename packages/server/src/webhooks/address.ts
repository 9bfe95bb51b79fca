import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { addCidr } from '../core/networks.js';

/** DESIGN.md 15: ranges a webhook may never reach unless `LICENSOR_WEBHOOK_ALLOW_NETWORKS` allows them. */
const REFUSED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/3',
];
const REFUSED_V6 = ['::/128', '::1/128', 'fc00::/7', 'fe80::/10', '64:ff9b::/96'];

const refused = new net.BlockList();
for (const cidr of REFUSED_V4) addCidr(refused, cidr);
for (const cidr of REFUSED_V6) addCidr(refused, cidr);

/** An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, in either spelling) is judged as the IPv4 address it carries. */
function unmapped(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  if (net.isIP(address) === 4) return { address, family: 'ipv4' };
  const lower = address.toLowerCase();
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted && net.isIP(dotted[1]!) === 4) return { address: dotted[1]!, family: 'ipv4' };
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const high = parseInt(hex[1]!, 16);
    const low = parseInt(hex[2]!, 16);
    return { address: [high >> 8, high & 255, low >> 8, low & 255].join('.'), family: 'ipv4' };
  }
  return { address, family: 'ipv6' };
}

export interface Target {
  url: URL;
  address: string;
  family: 4 | 6;
}

/** A refusal's message is the API's 400 at save and the failed attempt's error at delivery. */
export class AddressRefused extends Error {}

/**
 * Resolves the URL's host once and judges every address it has: each must be public, or in an
 * allowed range; `http://` only when every address is in an allowed range. The caller connects
 * to the address returned, never resolving again, so a second answer cannot slip through.
 * `setting` is the variable a refusal names (single sign-on has its own, DESIGN.md 21).
 */
export async function checkTarget(raw: string, allowed: net.BlockList, setting = 'LICENSOR_WEBHOOK_ALLOW_NETWORKS'): Promise<Target> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AddressRefused('url is not a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AddressRefused('url must start with https://');
  if (url.username || url.password) throw new AddressRefused('url may not carry a user name or password');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = net.isIP(host) ? [{ address: host, family: net.isIP(host) }] : await lookup(host, { all: true, verbatim: true });
  } catch {
    throw new AddressRefused(`the host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw new AddressRefused(`the host ${host} does not resolve`);
  let allInAllowed = true;
  for (const { address } of addresses) {
    const judged = unmapped(address);
    const inAllowed = allowed.check(judged.address, judged.family) || allowed.check(address, net.isIP(address) === 4 ? 'ipv4' : 'ipv6');
    allInAllowed &&= inAllowed;
    if (!inAllowed && refused.check(judged.address, judged.family)) {
      // Naming the setting and the exact range makes trying webhooks against a local receiver one step.
      const range = `${judged.address}/${judged.family === 'ipv4' ? 32 : 128}`;
      throw new AddressRefused(
        `the host ${host} resolves to ${address}, which is not a public address (to allow it, start the service with ${setting}=${range})`,
      );
    }
  }
  if (url.protocol === 'http:' && !allInAllowed) throw new AddressRefused('url must start with https://');
  const first = addresses[0]!;
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
