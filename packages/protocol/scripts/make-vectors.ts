// Writes test-vectors/vectors.json (npx tsx packages/protocol/scripts/make-vectors.ts). The file is
// committed and other SDKs' tests read it, so a rerun is additive: it keeps the file's keys, and a
// licence or receipt already in the file is kept while it still signs the same bytes (ECDSA
// signatures differ on every run). Only new or changed entries are signed afresh; the air-gap
// section (made with random device keys) is kept whole once made. Delete the file to replace every key.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
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
  generateAlgorithmKeyPair,
  isCanonicalB64u,
  verifyBytes,
  type Algorithm,
  type ClaimsInput,
  type ReceiptFields,
  type ReceiptTag,
} from '../src/index.js';
import type { AlgorithmVector, FingerprintVector, FloatingVector, ReceiptFieldsVector, ReceiptVector, Vectors } from '../test-vectors/index.js';

const target = new URL('../test-vectors/vectors.json', import.meta.url);
const previous = existsSync(target) ? (JSON.parse(readFileSync(target, 'utf8')) as Vectors) : undefined;

// Signed strings and receipts of the previous file, by what they sign, checked before reuse.
const previousLicences = new Map<string, string[]>();
const previousReceipts = new Map<string, string[]>();
const remember = (pool: Map<string, string[]>, key: string, signature: string) => pool.set(key, [...(pool.get(key) ?? []), signature]);
for (const vector of previous?.algorithms ?? []) {
  const all = [vector, ...(vector.floating ? [vector.floating] : [])];
  for (const set of all) {
    for (const { licence } of [set, ...set.tampered]) {
      const dot = licence.indexOf('.');
      if (dot > 0) remember(previousLicences, `${vector.publicKeyPem}|${licence.slice(0, dot)}`, licence.slice(dot + 1));
    }
    for (const receipt of set.receipts) remember(previousReceipts, `${vector.publicKeyPem}|${receipt.messageHex}`, receipt.receipt);
  }
  // A bad receipt may be a good one under the other tag; reuse is checked by verifying anyway.
  for (const bad of vector.floating?.badReceipts ?? []) {
    const other: ReceiptTag = bad.tag === 'SVCR1' ? 'SVCR2' : 'SVCR1';
    try {
      remember(previousReceipts, `${vector.publicKeyPem}|${receiptMessage(bad.fields as ReceiptFields, other).toString('hex')}`, bad.receipt);
    } catch {
      // fields an SVCR1 message cannot hold
    }
  }
}

function stableSignature(pool: Map<string, string[]>, key: KeyObject, message: Buffer, poolKey: string): string {
  const publicKey = createPublicKey(key);
  const candidates = pool.get(`${publicKey.export({ type: 'spki', format: 'pem' }).toString()}|${poolKey}`) ?? [];
  // Tampered vectors hold bad and non-canonical spellings of the same signature; the first good one is reused.
  const old = candidates.find((sig) => isCanonicalB64u(sig) && verifyBytes(publicKey, message, Buffer.from(sig, 'base64url')));
  if (old !== undefined) return old;
  return signBytes(key, message).toString('base64url');
}

/** The licence string over this payload text, the previous file's when it still verifies. */
function signPayload(json: string, key: KeyObject): string {
  const part = b64uEncode(json);
  return `${part}.${stableSignature(previousLicences, key, Buffer.from(part, 'latin1'), part)}`;
}

function stableReceipt(fields: ReceiptFieldsVector, key: KeyObject, tag: ReceiptTag): string {
  const message = receiptMessage(fields as ReceiptFields, tag);
  return stableSignature(previousReceipts, key, message, message.toString('hex'));
}

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
    params: [
      ['edition', 'pro'],
      ['seats', 25],
      ['beta', false],
      ['modules', ['2d', '3d']],
      ['supportUntil', '2026-12-31'],
    ],
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
    // An update window (DESIGN.md 20) outlasting the term.
    upd: 1_842_559_200,
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
    params: [
      ['flags', []],
      ['limit', 0],
    ],
  },
};

// Floating licences (v 5): ONLINE, no fp, a lease length, a borrow limit on some.
const floating = (lid: string, extra: Partial<ClaimsInput>): ClaimsInput => ({
  ...BASE,
  lid,
  typ: 'ONLINE',
  lic: 'Floating Seats Ltd',
  exp: 1_795_420_800,
  mm: 5,
  chk: 300,
  max: 1_800,
  lse: 900,
  ...extra,
});
const FLOATING: Record<Algorithm, ClaimsInput> = {
  ED25519: floating('5f000000-0000-4000-8000-000000000001', {
    brw: 604_800,
    params: [
      ['edition', 'pro'],
      ['seats', 5],
    ],
  }),
  RSA_2048: floating('5f000000-0000-4000-8000-000000000002', { lse: 60, chk: 20, max: 60, mm: 1 }),
  RSA_3072: floating('5f000000-0000-4000-8000-000000000003', { lse: 3_600, brw: 2_592_000, nbf: 1_764_547_200, exp: 1_796_083_200 }),
  RSA_4096: floating('5f000000-0000-4000-8000-000000000004', { exp: undefined, lic: 'Perpetual Floating Inc', mm: 50 }),
  EC_P256: floating('5f000000-0000-4000-8000-000000000005', { brw: 86_400, lic: '株式会社フローティング' }),
  EC_P384: floating('5f000000-0000-4000-8000-000000000006', { lse: 1_200, params: [['flags', []]] }),
};

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
    {
      name: 'signed payload with null exp',
      licence: signPayload(json.replace(/,"exp":\d+/, '').replace('"grace":', '"exp":null,"grace":'), key),
      expected: 'MALFORMED',
    },
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
    receipt: stableReceipt(fields, key, 'SVCR1'),
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

const CHECKED_AT = '2026-11-22T07:00:00.000Z';
const iso = (seconds: number) => new Date(Date.parse(CHECKED_AT) + seconds * 1000).toISOString();

function floatingVector(input: ClaimsInput, licence: string, key: KeyObject, otherKeyLicence: string): FloatingVector {
  const payloadJson = licencePayload(input);
  const lse = input.lse!;
  const digest = fpDigest(FP_A);
  const lease: ReceiptFieldsVector = {
    lid: input.lid,
    status: 'ACTIVE',
    nonce: NONCE,
    checkedAt: CHECKED_AT,
    boundAt: '2026-11-22T06:45:00.000Z',
    fpDigest: digest,
    leaseEndsAt: iso(lse),
  };
  const sets: Array<[string, ReceiptFieldsVector]> = [
    ['lease taken or renewed', lease],
    ['lease not extended: the stored end signed', { ...lease, leaseEndsAt: iso(Math.ceil(lse * 0.75)) }],
    ['grace', { ...lease, status: 'GRACE' }],
    ['borrowed until a later time', { ...lease, leaseEndsAt: iso(7 * 86_400) }],
    ['seats full: no lease held', { ...lease, boundAt: null, leaseEndsAt: null }],
    ['expired: no lease end signed', { ...lease, status: 'EXPIRED', leaseEndsAt: null }],
    ['unknown licence', { ...lease, status: null, boundAt: null, leaseEndsAt: null }],
  ];
  const receipts: ReceiptVector[] = sets.map(([name, fields]) => ({
    name,
    tag: 'SVCR2',
    fields,
    messageHex: receiptMessage(fields as ReceiptFields, 'SVCR2').toString('hex'),
    receipt: stableReceipt(fields, key, 'SVCR2'),
    grants: receiptGrantsLicence(fields as ReceiptFields, 'SVCR2'),
  }));
  const signed = receipts[0]!;
  const seatsFull = receipts[4]!;
  const badReceipts: FloatingVector['badReceipts'] = [
    { name: 'leaseEndsAt moved later', tag: 'SVCR2', fields: { ...lease, leaseEndsAt: iso(lse + 3_600) }, receipt: signed.receipt },
    { name: 'leaseEndsAt emptied', tag: 'SVCR2', fields: { ...lease, leaseEndsAt: null }, receipt: signed.receipt },
    { name: 'status changed', tag: 'SVCR2', fields: { ...lease, status: 'GRACE' }, receipt: signed.receipt },
    { name: 'boundAt changed', tag: 'SVCR2', fields: { ...lease, boundAt: CHECKED_AT }, receipt: signed.receipt },
    { name: 'SVCR2 receipt verified as SVCR1', tag: 'SVCR1', fields: seatsFull.fields, receipt: seatsFull.receipt },
    {
      name: 'SVCR1 receipt of the same fields verified as SVCR2',
      tag: 'SVCR2',
      fields: seatsFull.fields,
      receipt: stableReceipt(seatsFull.fields, key, 'SVCR1'),
    },
  ];
  const [payload, signature] = licence.split('.') as [string, string];
  const resign = (from: RegExp | string, to: string) => {
    const json = payloadJson.replace(from, to);
    if (json === payloadJson) throw new Error(`vector edit ${String(from)} changed nothing`);
    return signPayload(json, key);
  };
  const tampered: FloatingVector['tampered'] = [
    { name: 'lease length changed', licence: `${b64uEncode(payloadJson.replace(/"lse":\d+/, '"lse":3599'))}.${signature}`, expected: 'BAD_SIGNATURE' },
    { name: 'v lowered to 3', licence: `${b64uEncode(payloadJson.replace('"v":5', '"v":3'))}.${signature}`, expected: 'BAD_SIGNATURE' },
    { name: 'signature from another key', licence: `${payload}.${otherKeyLicence.split('.')[1]}`, expected: 'BAD_SIGNATURE' },
    // Correctly signed, but not a floating licence DESIGN.md 13 allows: refused before the signature.
    { name: 'signed v 5 without lse', licence: resign(/,"lse":\d+/, ''), expected: 'MALFORMED' },
    { name: 'signed v 5 with lse 59', licence: resign(/"lse":\d+/, '"lse":59'), expected: 'MALFORMED' },
    { name: 'signed v 5 with lse 3601', licence: resign(/"lse":\d+/, '"lse":3601'), expected: 'MALFORMED' },
    { name: 'signed v 5 with string lse', licence: resign(/"lse":(\d+)/, '"lse":"$1"'), expected: 'MALFORMED' },
    { name: 'signed v 5 with brw 0', licence: resign(/"lse":(\d+)(,"brw":\d+)?/, '"lse":$1,"brw":0'), expected: 'MALFORMED' },
    { name: 'signed v 5 with brw above 2592000', licence: resign(/"lse":(\d+)(,"brw":\d+)?/, '"lse":$1,"brw":2592001'), expected: 'MALFORMED' },
    { name: 'signed v 5 with fp', licence: resign('"mm":', `"fp":"${FP_A}","mm":`), expected: 'MALFORMED' },
    { name: 'signed v 5 of type HYBRID', licence: resign('"typ":"ONLINE"', '"typ":"HYBRID","act":"ONLINE"'), expected: 'MALFORMED' },
    { name: 'signed v 6', licence: resign('"v":5', '"v":6'), expected: 'MALFORMED' },
  ];
  return {
    claimsInput: JSON.parse(JSON.stringify(input)) as Record<string, unknown>,
    payloadJson,
    claims: JSON.parse(payloadJson) as Record<string, unknown>,
    licence,
    receipts,
    badReceipts,
    tampered,
  };
}

async function main(): Promise<void> {
  const keys = await Promise.all(
    ALGORITHMS.map((algorithm, i) => {
      const old = previous?.algorithms[i];
      if (old?.algorithm === algorithm) return { privateKey: createPrivateKey(old.privateKeyPem), publicKey: createPublicKey(old.publicKeyPem) };
      return generateAlgorithmKeyPair(algorithm);
    }),
  );
  const licences = ALGORITHMS.map((algorithm, i) => signPayload(licencePayload(CLAIMS[algorithm]), keys[i]!.privateKey));
  const floatingLicences = ALGORITHMS.map((algorithm, i) => signPayload(licencePayload(FLOATING[algorithm]), keys[i]!.privateKey));

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
      floating: floatingVector(FLOATING[algorithm], floatingLicences[i]!, privateKey, floatingLicences[(i + 1) % licences.length]!),
    };
  });

  const claimOrder = [
    {
      name: 'scrambled input, nulls and non-applicable claims dropped',
      claimsInput: {
        params: { colour: 'blue', count: 3 },
        max: null,
        chk: 60,
        mm: 1,
        fpn: 3,
        fp: null,
        grace: 0,
        exp: null,
        nbf: null,
        iat: 1_700_000_000,
        lic: null,
        act: 'ONLINE',
        typ: 'OFFLINE',
        org: 'o',
        prd: 'p',
        lid: 'l',
      },
    },
    { name: 'duplicate fingerprints collapse to one string', claimsInput: { ...BASE, lid: 'l', fp: [FP_A, FP_A] } },
    { name: 'several fingerprints make v 4', claimsInput: { ...BASE, lid: 'l', typ: 'HYBRID', act: 'OFFLINE', fp: [FP_B, FP_A, FP_B], fpn: 1 } },
    {
      name: 'null parameter omitted',
      claimsInput: {
        ...BASE,
        lid: 'l',
        params: [
          ['z', 1],
          ['a', null],
          ['m', ['x']],
        ],
      },
    },
    {
      name: 'lse and brw are parameters of a node-locked licence',
      claimsInput: {
        ...BASE,
        lid: 'l',
        typ: 'ONLINE',
        params: [
          ['brw', 'x'],
          ['lse', 7],
        ],
      },
    },
    {
      name: 'lse makes v 5, brw follows it, then parameters',
      claimsInput: {
        params: [['seats', 5]],
        brw: 86_400,
        lse: 900,
        max: 1_800,
        chk: 300,
        mm: 5,
        grace: 0,
        iat: 1_700_000_000,
        typ: 'ONLINE',
        org: 'o',
        prd: 'p',
        lid: 'l',
      },
    },
    { name: 'brw 0 omitted', claimsInput: { ...BASE, lid: 'l', typ: 'ONLINE', chk: 300, max: 1_800, lse: 60, brw: 0 } },
    { name: 'brw without lse omitted', claimsInput: { ...BASE, lid: 'l', typ: 'ONLINE', brw: 3_600 } },
    {
      name: 'upd after max, before mtr and the parameters, v unchanged',
      claimsInput: {
        ...BASE,
        lid: 'l',
        typ: 'ONLINE',
        exp: 1_795_420_800,
        chk: 300,
        max: 1_800,
        upd: 1_842_559_200,
        mtr: [{ k: 'exports', p: 'MONTH', l: 1000, o: null }],
        params: [['edition', 'pro']],
      },
    },
    { name: 'upd after lse and brw', claimsInput: { ...BASE, lid: 'l', typ: 'ONLINE', chk: 300, max: 1_800, lse: 900, brw: 600, upd: 1_800_000_000 } },
    { name: 'a kept parameter named upd is a parameter', claimsInput: { ...BASE, lid: 'l', params: [['upd', 'nightly']] } },
  ].map((c) => ({ ...c, payloadJson: licencePayload(c.claimsInput as unknown as ClaimsInput) }));

  const rawSets: Array<[string, Record<string, string | null>]> = [
    [
      'all components',
      {
        machine: 'f1e2d3c4b5a6978899aabbccddeeff00',
        host: 'build-01',
        mac: '52:54:00:12:34:56',
        cpu: 'AMD EPYC 7B13 64-Core Processor',
        disk: 'S4EVNX0N123456',
      },
    ],
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
    {
      name: 'body trailing bits set',
      fingerprint: withSum(body('machine=-;host=-;mac=-;cpu=-;disk=-').replace(/.$/, (c) => ALPHABET[ALPHABET.indexOf(c) | 1]!)),
      problem: 'ENCODING',
    },
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

  const vectors: Vectors = {
    description: 'Licensor wire-format golden vectors (DESIGN.md section 2). Generated by packages/protocol/scripts/make-vectors.ts; test keys only.',
    algorithms,
    claimOrder,
    fingerprints,
    badFingerprints,
    matches,
    statuses,
    // The keys are the previous file's, so its air-gap responses still verify.
    airGap: previous?.airGap ?? airGapVectors(algorithms, FP_A, FP_B),
  };
  writeFileSync(target, `${JSON.stringify(vectors, null, 2)}\n`);
  console.log(`wrote ${target.pathname}`);
}

await main();
