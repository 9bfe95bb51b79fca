// Writes test-vectors/vectors.json (npx tsx packages/protocol/scripts/make-vectors.ts). The file is
// committed and other packages' tests and fixtures read it, so a run is additive: the sections the
// file already holds stay byte for byte, only missing ones are made (the air-gap section with the
// keys already in the file). `--all` makes every section anew with new keys.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash, type KeyObject } from 'node:crypto';
import { airGapVectors } from './air-gap-vectors.js';
import {
  ALGORITHMS,
  ALGORITHM_INFO,
  b64uEncode,
  buildFingerprint,
  calendarStatus,
  fingerprintsMatch,
  fpDigest,
  graceEndsAt,
  licencePayload,
  matchScore,
  parseFingerprint,
  receiptGrantsLicence,
  receiptMessage,
  signBytes,
  signLicence,
  signReceipt,
  generateAlgorithmKeyPair,
  type Algorithm,
  type ClaimsInput,
  type ReceiptFields,
} from '../src/index.js';
import type { AlgorithmVector, FingerprintVector, ReceiptFieldsVector, Vectors } from '../test-vectors/index.js';

const fp = (seed: string) =>
  buildFingerprint({ machine: `${seed}-machine-id`, host: `${seed}.example`, mac: '52:54:00:12:34:56', cpu: 'AMD EPYC 7B13', disk: `WD-${seed}` });

const FP_A = fp('alpha');
const FP_B = fp('bravo');
const FP_C = buildFingerprint({ machine: 'charlie-machine-id', host: null, mac: 'aa:bb:cc:dd:ee:ff', cpu: 'Intel(R) Xeon(R)', disk: undefined });

const BASE = { prd: 'acme-cad', org: 'acme', iat: 1_763_884_800, grace: 14, mm: 1 } as const;

// Each algorithm signs a different shape of payload, so together they cover every claim.
const CLAIMS: Record<Algorithm, ClaimsInput> = {
  ED25519: {
    ...BASE,
    lid: '0b8f6a52-3f0e-4c59-9a55-6a1d2f6f7c01',
    typ: 'ONLINE',
    lic: 'Müller & Søn GmbH "Ω" <test>',
    exp: 1_795_420_800,
    fp: [FP_A, FP_B, FP_A],
    fpn: 3,
    mm: 2,
    chk: 86_400,
    max: 604_800,
    params: [['edition', 'pro'], ['seats', 25], ['beta', false], ['modules', ['2d', '3d']], ['supportUntil', '2026-12-31']],
  },
  RSA_2048: {
    ...BASE,
    lid: '1c2d3e4f-0000-4000-8000-000000000002',
    typ: 'OFFLINE',
    lic: 'Example Ltd',
    exp: 1_795_420_800,
    grace: 0,
    fp: [FP_A],
    fpn: 2,
  },
  RSA_3072: {
    ...BASE,
    lid: '1c2d3e4f-0000-4000-8000-000000000003',
    typ: 'HYBRID',
    act: 'OFFLINE',
    lic: 'Hybrid Offline AG',
    nbf: 1_764_547_200,
    exp: 1_796_083_200,
    fp: FP_C,
    fpn: 3,
    chk: 3_600,
    max: 86_400,
  },
  RSA_4096: {
    ...BASE,
    lid: '1c2d3e4f-0000-4000-8000-000000000004',
    typ: 'HYBRID',
    act: 'ONLINE',
    lic: 'Perpetual Inc',
    mm: 5,
    chk: 86_400,
    max: 604_800,
    params: [['tier', 'gold']],
  },
  EC_P256: {
    ...BASE,
    lid: '1c2d3e4f-0000-4000-8000-000000000005',
    typ: 'ONLINE',
    lic: '株式会社テスト',
    exp: 1_795_420_800,
    chk: 86_400,
    max: 604_800,
  },
  EC_P384: {
    ...BASE,
    lid: '1c2d3e4f-0000-4000-8000-000000000006',
    typ: 'OFFLINE',
    lic: 'P-384 Org',
    exp: 1_795_420_800,
    fp: [FP_B, FP_C],
    params: [['flags', []], ['limit', 0]],
  },
};

function signPayload(json: string, key: KeyObject): string {
  const part = b64uEncode(json);
  return `${part}.${signBytes(key, Buffer.from(part, 'latin1')).toString('base64url')}`;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const replaceLast = (text: string, char: string) => text.slice(0, -1) + char;

function tamperedLicences(licence: string, key: KeyObject, otherKeyLicence: string): AlgorithmVector['tampered'] {
  const [payload, signature] = licence.split('.') as [string, string];
  const json = Buffer.from(payload, 'base64url').toString('utf8');
  const last = ALPHABET.indexOf(signature.at(-1)!);
  const out: AlgorithmVector['tampered'] = [
    { name: 'payload byte changed', licence: `${b64uEncode(json.replace('"lid":"', '"lid":"X'))}.${signature}`, expected: 'BAD_SIGNATURE' },
    { name: 'payload claim value changed', licence: `${b64uEncode(json.replace(/"mm":\d+/, '"mm":99'))}.${signature}`, expected: 'BAD_SIGNATURE' },
    { name: 'signature trailing character flipped', licence: replaceLast(licence, ALPHABET[last ^ 0b100000]!), expected: 'BAD_SIGNATURE' },
    { name: 'signature truncated', licence: `${payload}.${b64uEncode(Buffer.from(signature, 'base64url').subarray(0, -3))}`, expected: 'BAD_SIGNATURE' },
    { name: 'signature from another key', licence: `${payload}.${otherKeyLicence.split('.')[1]}`, expected: 'BAD_SIGNATURE' },
    { name: 'padding appended', licence: `${licence}=`, expected: 'MALFORMED' },
    { name: 'payload padded', licence: `${payload}==.${signature}`, expected: 'MALFORMED' },
    { name: 'standard base64 character', licence: `${payload}.+${signature.slice(1)}`, expected: 'MALFORMED' },
    { name: 'trailing newline', licence: `${licence}\n`, expected: 'MALFORMED' },
    { name: 'three parts', licence: `${licence}.AAAA`, expected: 'MALFORMED' },
    { name: 'one part', licence: payload, expected: 'MALFORMED' },
    { name: 'empty signature', licence: `${payload}.`, expected: 'MALFORMED' },
    { name: 'empty payload', licence: `.${signature}`, expected: 'MALFORMED' },
    { name: 'empty string', licence: '', expected: 'MALFORMED' },
    // Correctly signed but not a valid payload: refused before the signature is considered.
    { name: 'signed JSON array', licence: signPayload('[1,2]', key), expected: 'MALFORMED' },
    { name: 'signed non-JSON', licence: signPayload('not json', key), expected: 'MALFORMED' },
    { name: 'signed payload without lid', licence: signPayload(json.replace(/"lid":"[^"]*",/, ''), key), expected: 'MALFORMED' },
    { name: 'signed payload with null exp', licence: signPayload(json.replace(/,"exp":\d+/, '').replace('"grace":', '"exp":null,"grace":'), key), expected: 'MALFORMED' },
    { name: 'signed payload with negative grace', licence: signPayload(json.replace(/"grace":\d+/, '"grace":-1'), key), expected: 'MALFORMED' },
    { name: 'signed payload with string iat', licence: signPayload(json.replace(/"iat":(\d+)/, '"iat":"$1"'), key), expected: 'MALFORMED' },
    { name: 'signed payload with v 2', licence: signPayload(json.replace(/"v":\d/, '"v":2'), key), expected: 'MALFORMED' },
    ...strictJsonCases(json).map(([name, text]) => ({ name, licence: signPayload(text, key), expected: 'MALFORMED' as const })),
  ];
  // With a short final group the last character has unused bits; setting one is non-canonical.
  if (signature.length % 4 !== 0) {
    out.push({ name: 'signature trailing bits set', licence: replaceLast(licence, ALPHABET[last | 1]!), expected: 'MALFORMED' });
  }
  return out;
}

/** Payloads JSON.parse takes but other languages' parsers read otherwise: every verifier refuses them (DESIGN.md 16). */
function strictJsonCases(json: string): Array<[string, string]> {
  return [
    ['signed payload with a duplicate claim', json.replace(/^\{"v":(\d),/, '{"v":$1,"lid":"forged",')],
    ['signed payload with fractional iat', json.replace(/"iat":(\d+)/, '"iat":$1.0')],
    ['signed payload with exponent iat', json.replace(/"iat":(\d+)/, '"iat":$1e0')],
    ['signed payload with mm beyond 2^53', json.replace(/"mm":\d+/, '"mm":9007199254740993')],
  ];
}

const NONCE = 'n0nce_ABCDEFGHIJKLmnop-123';
const full = (lid: string, digest: string): ReceiptFieldsVector => ({
  lid,
  status: 'ACTIVE',
  nonce: NONCE,
  checkedAt: '2026-11-22T07:00:00.000Z',
  boundAt: '2026-01-05T09:30:12.345Z',
  fpDigest: digest,
});

function receipts(lid: string, key: KeyObject): Pick<AlgorithmVector, 'receipts' | 'badReceipts'> {
  const digest = fpDigest(FP_A);
  const sets: Array<[string, ReceiptFieldsVector]> = [
    ['valid seat', full(lid, digest)],
    ['grace', { ...full(lid, digest), status: 'GRACE' }],
    ['no seat held', { ...full(lid, digest), boundAt: null }],
    ['unknown licence', { ...full(lid, digest), status: null, boundAt: null }],
    ['expired', { ...full(lid, digest), status: 'EXPIRED' }],
  ];
  const good = sets.map(([name, fields]) => ({
    name,
    fields,
    messageHex: receiptMessage(fields as ReceiptFields).toString('hex'),
    receipt: signReceipt(fields as ReceiptFields, key),
    grants: receiptGrantsLicence(fields as ReceiptFields),
  }));
  const signed = good[0]!;
  const flipped = ALPHABET[ALPHABET.indexOf(signed.receipt.at(-1)!) ^ 0b100000]!;
  const bad = [
    { name: 'status changed', fields: { ...signed.fields, status: 'GRACE' }, receipt: signed.receipt },
    { name: 'boundAt emptied', fields: { ...signed.fields, boundAt: null }, receipt: signed.receipt },
    { name: 'nonce changed', fields: { ...signed.fields, nonce: `${NONCE}x` }, receipt: signed.receipt },
    { name: 'fpDigest changed', fields: { ...signed.fields, fpDigest: fpDigest(FP_B) }, receipt: signed.receipt },
    { name: 'receipt trailing character flipped', fields: signed.fields, receipt: replaceLast(signed.receipt, flipped) },
    { name: 'receipt padded', fields: signed.fields, receipt: `${signed.receipt}=` },
    { name: 'receipt empty', fields: signed.fields, receipt: '' },
    { name: 'unsigned field set with "null" text', fields: { ...good[2]!.fields, boundAt: 'null' }, receipt: good[2]!.receipt },
  ];
  return { receipts: good, badReceipts: bad };
}

async function makeAll(): Promise<Vectors> {
  const keys = await Promise.all(ALGORITHMS.map((algorithm) => generateAlgorithmKeyPair(algorithm)));
  const licences = ALGORITHMS.map((algorithm, i) => signLicence(CLAIMS[algorithm], keys[i]!.privateKey));

  const algorithms: AlgorithmVector[] = ALGORITHMS.map((algorithm, i) => {
    const { privateKey, publicKey } = keys[i]!;
    const payloadJson = licencePayload(CLAIMS[algorithm]);
    const claimsInput = JSON.parse(JSON.stringify(CLAIMS[algorithm])) as Record<string, unknown>;
    return {
      algorithm,
      signatureAlgorithm: ALGORITHM_INFO[algorithm].signatureAlgorithm,
      privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      deterministic: !algorithm.startsWith('EC_'),
      claimsInput,
      payloadJson,
      claims: JSON.parse(payloadJson) as Record<string, unknown>,
      licence: licences[i]!,
      ...receipts(CLAIMS[algorithm].lid, privateKey),
      tampered: tamperedLicences(licences[i]!, privateKey, licences[(i + 1) % licences.length]!),
    };
  });

  const claimOrder = [
    {
      name: 'scrambled input, nulls and non-applicable claims dropped',
      claimsInput: {
        params: { colour: 'blue', count: 3 },
        max: null, chk: 60, mm: 1, fpn: 3, fp: null, grace: 0, exp: null, nbf: null, iat: 1_700_000_000,
        lic: null, act: 'ONLINE', typ: 'OFFLINE', org: 'o', prd: 'p', lid: 'l',
      },
    },
    { name: 'duplicate fingerprints collapse to one string', claimsInput: { ...BASE, lid: 'l', fp: [FP_A, FP_A] } },
    { name: 'several fingerprints make v 4', claimsInput: { ...BASE, lid: 'l', typ: 'HYBRID', act: 'OFFLINE', fp: [FP_B, FP_A, FP_B], fpn: 1 } },
    { name: 'null parameter omitted', claimsInput: { ...BASE, lid: 'l', params: [['z', 1], ['a', null], ['m', ['x']]] } },
  ].map((c) => ({ ...c, payloadJson: licencePayload(c.claimsInput as unknown as ClaimsInput) }));

  const rawSets: Array<[string, Record<string, string | null>]> = [
    ['all components', { machine: 'f1e2d3c4b5a6978899aabbccddeeff00', host: 'build-01', mac: '52:54:00:12:34:56', cpu: 'AMD EPYC 7B13 64-Core Processor', disk: 'S4EVNX0N123456' }],
    ['two unreadable', { machine: 'f1e2d3c4b5a6978899aabbccddeeff00', host: 'build-01', mac: null, cpu: 'AMD EPYC 7B13 64-Core Processor', disk: null }],
    ['empty counts as unreadable', { machine: '', host: 'host', mac: '00:00:00:00:00:01', cpu: '', disk: 'd' }],
    ['non-ASCII raw values', { machine: 'ünïcödé', host: 'hôte-é', mac: '00:11:22:33:44:55', cpu: '处理器', disk: 'disk' }],
    ['none readable', { machine: null, host: null, mac: null, cpu: null, disk: null }],
  ];
  const fingerprints: FingerprintVector[] = rawSets.map(([name, raw]) => {
    const fingerprint = buildFingerprint(raw);
    return { name, raw, parts: parseFingerprint(fingerprint), fingerprint, fpDigest: fpDigest(fingerprint) };
  });

  const h = '0123456789abcdef';
  const body = (text: string) => b64uEncode(text);
  const withSum = (b: string) => `SVC1.${b}.${createHash('sha256').update(`SVC1.${b}`).digest('hex').slice(0, 8)}`;
  const good = fingerprints[0]!.fingerprint;
  const [, goodBody, goodSum] = good.split('.') as [string, string, string];
  const badFingerprints = [
    { name: 'lowercase prefix', fingerprint: `svc1${good.slice(4)}`, problem: 'PREFIX' },
    { name: 'other version', fingerprint: `SVC2${good.slice(4)}`, problem: 'PREFIX' },
    { name: 'no prefix', fingerprint: `${goodBody}.${goodSum}`, problem: 'PREFIX' },
    { name: 'empty', fingerprint: '', problem: 'PREFIX' },
    { name: 'four parts', fingerprint: `${good}.00`, problem: 'STRUCTURE' },
    { name: 'two parts', fingerprint: `SVC1.${goodBody}`, problem: 'STRUCTURE' },
    { name: 'uppercase checksum', fingerprint: `SVC1.${goodBody}.${goodSum.toUpperCase().replace(/^[0-9]/, 'A')}`, problem: 'STRUCTURE' },
    { name: 'short checksum', fingerprint: `SVC1.${goodBody}.${goodSum.slice(1)}`, problem: 'STRUCTURE' },
    { name: 'too long', fingerprint: `SVC1.${'A'.repeat(300)}.${goodSum}`, problem: 'STRUCTURE' },
    { name: 'empty body', fingerprint: `SVC1..${goodSum}`, problem: 'ENCODING' },
    { name: 'padded body', fingerprint: withSum(`${goodBody}==`), problem: 'ENCODING' },
    { name: 'standard base64 body', fingerprint: withSum(Buffer.from(`machine=${h};host=-;mac=-;cpu=-;disk=-???`).toString('base64')), problem: 'ENCODING' },
    { name: 'body trailing bits set', fingerprint: withSum(body('machine=-;host=-;mac=-;cpu=-;disk=-').replace(/.$/, (c) => ALPHABET[ALPHABET.indexOf(c) | 1]!)), problem: 'ENCODING' },
    { name: 'four components', fingerprint: withSum(body(`machine=${h};host=${h};mac=${h};cpu=${h}`)), problem: 'COMPONENTS' },
    { name: 'six components', fingerprint: withSum(body(`machine=${h};host=${h};mac=${h};cpu=${h};disk=${h};gpu=${h}`)), problem: 'COMPONENTS' },
    { name: 'wrong order', fingerprint: withSum(body(`host=${h};machine=${h};mac=${h};cpu=${h};disk=${h}`)), problem: 'COMPONENTS' },
    { name: 'wrong name', fingerprint: withSum(body(`machine=${h};hostname=${h};mac=${h};cpu=${h};disk=${h}`)), problem: 'COMPONENTS' },
    { name: 'trailing separator', fingerprint: withSum(body(`machine=${h};host=${h};mac=${h};cpu=${h};disk=${h};`)), problem: 'COMPONENTS' },
    { name: 'uppercase hex', fingerprint: withSum(body(`machine=${h.toUpperCase()};host=${h};mac=${h};cpu=${h};disk=${h}`)), problem: 'COMPONENT_VALUE' },
    { name: 'fifteen hex', fingerprint: withSum(body(`machine=${h};host=${h.slice(1)};mac=${h};cpu=${h};disk=${h}`)), problem: 'COMPONENT_VALUE' },
    { name: 'full-length hash', fingerprint: withSum(body(`machine=${h};host=${h};mac=${h}${h};cpu=${h};disk=${h}`)), problem: 'COMPONENT_VALUE' },
    { name: 'empty value', fingerprint: withSum(body(`machine=${h};host=${h};mac=${h};cpu=;disk=${h}`)), problem: 'COMPONENT_VALUE' },
    { name: 'null word', fingerprint: withSum(body(`machine=${h};host=${h};mac=${h};cpu=${h};disk=null`)), problem: 'COMPONENT_VALUE' },
    { name: 'wrong checksum', fingerprint: `SVC1.${goodBody}.${goodSum === '00000000' ? '00000001' : '00000000'}`, problem: 'CHECKSUM' },
  ];

  const [all, twoMissing, , , none] = fingerprints;
  const matches = [
    { a: all!.fingerprint, b: all!.fingerprint, need: 5 },
    { a: all!.fingerprint, b: twoMissing!.fingerprint, need: 3 },
    { a: all!.fingerprint, b: twoMissing!.fingerprint, need: 4 },
    { a: none!.fingerprint, b: none!.fingerprint, need: 1 },
    { a: all!.fingerprint, b: fingerprints[3]!.fingerprint, need: 1 },
  ].map((m) => {
    const pa = parseFingerprint(m.a);
    const pb = parseFingerprint(m.b);
    return { ...m, score: matchScore(pa, pb), match: fingerprintsMatch(pa, pb, m.need) };
  });

  const exp = 1_800_000_000;
  const statuses = [
    { claims: { nbf: 1_700_000_000, exp, grace: 7 }, now: 1_699_999_999 },
    { claims: { nbf: 1_700_000_000, exp, grace: 7 }, now: 1_700_000_000 },
    { claims: { exp, grace: 7 }, now: exp - 1 },
    { claims: { exp, grace: 7 }, now: exp },
    { claims: { exp, grace: 7 }, now: exp + 7 * 86_400 - 1 },
    { claims: { exp, grace: 7 }, now: exp + 7 * 86_400 },
    { claims: { exp, grace: 0 }, now: exp },
    { claims: { grace: 30 }, now: 4_000_000_000 },
    { claims: { nbf: 1_700_000_000, grace: 0 }, now: 1_600_000_000 },
  ].map((s) => ({ ...s, status: calendarStatus(s.claims, s.now), graceEndsAt: graceEndsAt(s.claims.exp, s.claims.grace) }));

  return {
    description:
      'Licensor wire-format golden vectors (DESIGN.md section 2). Generated by packages/protocol/scripts/make-vectors.ts; test keys only.',
    algorithms,
    claimOrder,
    fingerprints,
    badFingerprints,
    matches,
    statuses,
  };
}

async function main(): Promise<void> {
  const target = new URL('../test-vectors/vectors.json', import.meta.url);
  const vectors: Vectors =
    existsSync(target) && !process.argv.includes('--all') ? (JSON.parse(readFileSync(target, 'utf8')) as Vectors) : await makeAll();
  vectors.airGap ??= airGapVectors(vectors.algorithms, FP_A, FP_B);
  writeFileSync(target, `${JSON.stringify(vectors, null, 2)}\n`);
  console.log(`wrote ${target.pathname}`);
}

await main();
