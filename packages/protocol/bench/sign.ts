// Licence signing and verification through the protocol layer versus the same job done by hand
// with bare node:crypto. Run: npm run bench:sign (BENCH_SECONDS sets the time per measurement,
// default 1.5).
//
// "Bare" is the least code that does the whole job without packages/protocol: sign =
// JSON.stringify of a ready, wire-ordered claims object, base64url, sign its ASCII, append the
// base64url signature; verify = split at the dot, decode the signature, verify, JSON.parse the
// decoded payload. The protocol layer's overhead is what it adds to that: building the canonical
// payload from typed claims with DESIGN.md 2's omission rules and type checks, strict base64url
// and UTF-8 decoding, and checking every claim it reads. "Signature only" (node:crypto on
// prebuilt bytes, no string handling at all) is printed beside them for scale.
import { sign, verify, type KeyObject } from 'node:crypto';
import {
  ALGORITHMS,
  ALGORITHM_INFO,
  buildFingerprint,
  generateAlgorithmKeyPair,
  orderClaims,
  readLicence,
  signLicence,
  type ClaimsInput,
} from '../src/index.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1.5);
const SLICE_MS = 20;

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
  params: [
    ['edition', 'pro'],
    ['seats', 25],
    ['modules', ['2d', '3d']],
  ],
};
// Bare signing gets the claims already in wire order, built once: the most it could be spared.
const wireOrdered = orderClaims(claims);

/** Operations per CPU second of `fn` over one slice. */
function slice(fn: () => unknown): number {
  const cpu = process.cpuUsage();
  const end = performance.now() + SLICE_MS;
  let n = 0;
  do {
    fn();
    n++;
  } while (performance.now() < end);
  const used = process.cpuUsage(cpu);
  return n / ((used.user + used.system) / 1e6);
}

const median = (values: number[]) => values.sort((x, y) => x - y)[values.length >> 1]!;

/**
 * Runs the contenders in short slices, rotating their order each round, for about SECONDS each;
 * timing process CPU rather than wall time, so time spent descheduled counts against none (GC
 * helper threads still count, as they should). Returns each one's rate relative to the first,
 * as the median over rounds (a virtual machine's speed drifts by more than the overhead
 * measured, and one round's slices see the same speed), and each one's mean rate.
 */
function race(contenders: Array<() => unknown>): { rates: number[]; relative: number[] } {
  for (let i = 0; i < 50; i++) for (const fn of contenders) fn(); // warm up every path
  const rounds = Math.max(6, Math.round((SECONDS * 1000) / SLICE_MS));
  const perRound = contenders.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const which = (round + k) % contenders.length;
      perRound[which]!.push(slice(contenders[which]!));
    }
  }
  const rates = perRound.map((list) => list.reduce((sum, rate) => sum + rate, 0) / rounds);
  const relative = perRound.map((list) => median(list.map((rate, round) => rate / perRound[0]![round]!)));
  return { rates, relative };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;

const rows: string[] = [];
const worst = { ratio: Infinity, cell: '' };
let licenceLength = 0;
for (const algorithm of ALGORITHMS) {
  const { privateKey, publicKey }: { privateKey: KeyObject; publicKey: KeyObject } = await generateAlgorithmKeyPair(algorithm);
  const { digest, label } = ALGORITHM_INFO[algorithm];
  const keys = [publicKey];

  const licence = signLicence(claims, privateKey);
  licenceLength = Math.max(licenceLength, licence.length);
  const dot = licence.indexOf('.');
  const payloadBytes = Buffer.from(licence.slice(0, dot), 'latin1');
  const signature = Buffer.from(licence.slice(dot + 1), 'base64url');

  const bareSign = () => {
    const payloadPart = Buffer.from(JSON.stringify(wireOrdered), 'utf8').toString('base64url');
    return `${payloadPart}.${sign(digest, Buffer.from(payloadPart, 'latin1'), privateKey).toString('base64url')}`;
  };
  const bareVerify = (text: string) => {
    const at = text.indexOf('.');
    const payloadPart = text.slice(0, at);
    if (!verify(digest, Buffer.from(payloadPart, 'latin1'), publicKey, Buffer.from(text.slice(at + 1), 'base64url'))) return null;
    return JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8')) as unknown;
  };

  const reading = readLicence(licence, keys);
  if (!reading.ok || bareSign().split('.')[0] !== licence.slice(0, dot) || JSON.stringify(bareVerify(bareSign())) !== JSON.stringify(reading.parsed.claims)) {
    throw new Error(`${algorithm}: self-check failed`);
  }

  const signing = race([() => signLicence(claims, privateKey), bareSign, () => sign(digest, payloadBytes, privateKey)]);
  const verifying = race([() => readLicence(licence, keys), () => bareVerify(licence), () => verify(digest, payloadBytes, publicKey, signature)]);
  const cells = [signing, verifying].map(({ rates, relative }) => {
    const ratio = 1 / relative[1]!;
    return { ratio, text: `${fmt(rates[0]!)} | ${fmt(rates[1]!)} | ${pct(ratio)} | ${fmt(rates[2]!)} | ${pct(1 / relative[2]!)}` };
  });
  cells.forEach(({ ratio }, i) => {
    if (ratio < worst.ratio) Object.assign(worst, { ratio, cell: `${label} ${i === 0 ? 'sign' : 'verify'}` });
  });
  const row = `| ${label} | ${cells[0]!.text} | ${cells[1]!.text} |`;
  rows.push(row);
  process.stderr.write(`${row}\n`);
}

console.log(
  `\nLicence payload ${Buffer.byteLength(JSON.stringify(wireOrdered))} bytes of JSON (strings up to ${licenceLength} characters); operations per CPU second, one thread, Node ${process.version}.`,
);
console.log(
  'Protocol = signLicence / readLicence; bare = the same job by hand with node:crypto and JSON; ratio = protocol / bare (median of rounds); signature only = node:crypto on prebuilt bytes.\n',
);
console.log(
  '| Algorithm | sign: protocol | bare | ratio | signature only | protocol / signature only | verify: protocol | bare | ratio | signature only | protocol / signature only |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows) console.log(row);
console.log(`\nLowest protocol / bare ratio: ${pct(worst.ratio)} (${worst.cell}); target at least 90%: ${worst.ratio >= 0.9 ? 'met' : 'MISSED'}.`);
