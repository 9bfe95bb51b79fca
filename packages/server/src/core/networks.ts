import net from 'node:net';

/** Adds a CIDR range (`a.b.c.d/n` or IPv6) to the list; false when it is not one. */
export function addCidr(list: net.BlockList, cidr: string): boolean {
  const [address, prefix, extra] = cidr.trim().split('/');
  const family = net.isIP(address ?? '');
  if (!family || extra !== undefined || !/^\d{1,3}$/.test(prefix ?? '') || Number(prefix) > (family === 4 ? 32 : 128)) return false;
  list.addSubnet(address!, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
  return true;
}

/** Parses `LICENSOR_WEBHOOK_ALLOW_NETWORKS`; null names the first entry that is not a CIDR range. */
export function allowList(raw: string): { list: net.BlockList; bad: string | null } {
  const list = new net.BlockList();
  for (const cidr of raw.split(',').filter((c) => c.trim() !== '')) if (!addCidr(list, cidr)) return { list, bad: cidr.trim() };
  return { list, bad: null };
}
