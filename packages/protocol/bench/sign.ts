// Licence signing and verification through the protocol layer versus bare node:crypto over
// the same bytes with the same cached KeyObjects. Run: npx tsx packages/protocol/bench/sign.ts
// The two are measured in alternating slices (SLICES per measurement) so drift and other load
// hit both alike. BENCH_SECONDS sets the time per measurement (default 1).
import { sign, verify, type KeyObject } from 'node:crypto';
import {
  ALGORITHMS,
  ALGORITHM_INFO,
  buildFingerprint,
  generateAlgorithmKeyPair,
  parseLicence,
  signLicence,
  verifyLicence,
  type ClaimsInput,
} from '../src/index.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1);
const SLICES = 10;

const claims: ClaimsInput = {
  lid: '0b8f6a52-3f0e-4c59-9a55-6a1d2f6f7c01',
  prd: 'acme-cad',
  org: 'acme',
  typ: 'ONLINE',
  lic: 'Example Customer Ltd',
  iat: 1_763_884_800,
  exp: 1_795_420_800,
  grace: 14,
  fp: buildFingerprint({ machine: 'machine-id', host: 'host', mac: '52:54:00:12:34:56', cpu: 'cpu', disk: 'disk' }),
  fpn: 3,
  mm: 1,
  chk: 86_400,
  max: 604_800,
  params: [['edition', 'pro'], ['seats', 25], ['modules', ['2d', '3d']]],
};

/**
 * Runs `a` and `b` in alternating slices for about SECONDS each; returns operations per CPU
 * second. Process CPU time rather than wall time, so time spent descheduled on a busy machine
 * counts against neither side (GC helper threads still count, as they should).
 */
function race(a: () => unknown, b: () => unknown): [number, number] {
  const fns = [a, b];
  const counts = [0, 0];
  const micros = [0, 0];
  const sliceMs = (SECONDS * 1000) / SLICES;
  for (let i = 0; i < 50; i++) (a(), b()); // warm up both paths
  for (let slice = 0; slice < SLICES * 2; slice++) {
    const which = slice % 2;
    const fn = fns[which]!;
    const cpu = process.cpuUsage();
    const end = performance.now() + sliceMs;
    let n = 0;
    do {
      fn();
      n++;
    } while (performance.now() < end);
    const used = process.cpuUsage(cpu);
    counts[which]! += n;
    micros[which]! += used.user + used.system;
  }
  return [counts[0]! / (micros[0]! / 1e6), counts[1]! / (micros[1]! / 1e6)];
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (p: number, b: number) => `${((p / b) * 100).toFixed(1)}%`;

const rows: string[] = [];
let licenceLength = 0;
for (const algorithm of ALGORITHMS) {
  const { privateKey, publicKey }: { privateKey: KeyObject; publicKey: KeyObject } = await generateAlgorithmKeyPair(algorithm);
  const digest = ALGORITHM_INFO[algorithm].digest;
  const licence = signLicence(claims, privateKey);
  licenceLength = Math.max(licenceLength, licence.length);
  const dot = licence.indexOf('.');
  const payloadBytes = Buffer.from(licence.slice(0, dot), 'latin1');
  const signature = Buffer.from(licence.slice(dot + 1), 'base64url');
  if (verifyLicence(parseLicence(licence), [publicKey]) !== publicKey) throw new Error(`${algorithm}: self-check failed`);

  const [signProtocol, signBare] = race(
    () => signLicence(claims, privateKey),
    () => sign(digest, payloadBytes, privateKey),
  );
  const [verifyProtocol, verifyBare] = race(
    () => verifyLicence(parseLicence(licence), [publicKey]),
    () => verify(digest, payloadBytes, publicKey, signature),
  );
  const row = `| ${ALGORITHM_INFO[algorithm].label} | ${fmt(signProtocol)} | ${fmt(signBare)} | ${pct(signProtocol, signBare)} | ${fmt(verifyProtocol)} | ${fmt(verifyBare)} | ${pct(verifyProtocol, verifyBare)} |`;
  rows.push(row);
  process.stderr.write(`${row}\n`);
}

const payloadLength = Buffer.from(signLicence(claims, (await generateAlgorithmKeyPair('ED25519')).privateKey).split('.')[0]!, 'base64url').length;
console.log(`\nLicence payload ${payloadLength} bytes of JSON (strings up to ${licenceLength} characters); operations per CPU second, one thread, Node ${process.version}.`);
console.log('Protocol = signLicence / parseLicence + verifyLicence; bare = node:crypto sign / verify over the same bytes.\n');
console.log('| Algorithm | sign (protocol) | sign (bare) | ratio | verify (protocol) | verify (bare) | ratio |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const row of rows) console.log(row);
