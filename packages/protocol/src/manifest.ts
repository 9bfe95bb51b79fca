/** DESIGN.md 20: the text a release's manifest signatures cover (SVCM1). */
export interface ManifestArtifact {
  filename: string;
  platform: string;
  arch: string;
  size: number;
  sha256: string;
}

export interface ManifestInput {
  /** The organisation's slug. */
  org: string;
  productKey: string;
  version: string;
  channel: string;
  /** Unix seconds. */
  publishedAt: number;
  artifacts: readonly ManifestArtifact[];
}

const SEP = '\u001f';

/** Byte order of UTF-8 filenames (not UTF-16 code units, not locale order). */
function byteOrder(a: ManifestArtifact, b: ManifestArtifact): number {
  return Buffer.compare(Buffer.from(a.filename, 'utf8'), Buffer.from(b.filename, 'utf8'));
}

/**
 * `SVCM1␟org␟productKey␟version␟channel␟publishedAt␟n` then, per artifact in byte order of
 * filename, `␟filename␟platform␟arch␟size␟sha256` (␟ is 0x1F; integers decimal). Signed as its
 * UTF-8 bytes.
 */
export function releaseManifest(input: ManifestInput): string {
  const parts = ['SVCM1', input.org, input.productKey, input.version, input.channel, String(input.publishedAt), String(input.artifacts.length)];
  for (const a of [...input.artifacts].sort(byteOrder)) parts.push(a.filename, a.platform, a.arch, String(a.size), a.sha256);
  return parts.join(SEP);
}
