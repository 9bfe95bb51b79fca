import { describe, it, expect, beforeAll } from 'vitest';
import type { KeyObject } from 'node:crypto';
import {
  ALGORITHMS,
  CLAIM_NAMES,
  MalformedError,
  b64uEncode,
  buildFingerprint,
  generateAlgorithmKeyPair,
  isReservedClaimName,
  licenceParams,
  licencePayload,
  orderClaims,
  parseLicence,
  readLicence,
  signBytes,
  signLicence,
  verifyLicence,
  type Algorithm,
  type ClaimsInput,
} from '../src/index.js';

const FP1 = buildFingerprint({ machine: 'm1', host: 'h1', mac: 'a1', cpu: 'c1', disk: 'd1' });
const FP2 = buildFingerprint({ machine: 'm2', host: 'h2', mac: 'a2', cpu: 'c2', disk: 'd2' });
const FP3 = buildFingerprint({ machine: 'm3', host: null, mac: 'a3', cpu: 'c3', disk: 'd3' });

const base: ClaimsInput = { lid: 'lid-1', prd: 'prod', org: 'acme', iat: 1_700_000_000, grace: 0, mm: 1 };

const pairs = new Map<Algorithm, { privateKey: KeyObject; publicKey: KeyObject }>();
beforeAll(async () => {
  const generated = await Promise.all(ALGORITHMS.map((a) => generateAlgorithmKeyPair(a)));
  for (const [i, a] of ALGORITHMS.entries()) pairs.set(a, generated[i]!);
}, 60_000);

const keys = (a: Algorithm) => pairs.get(a)!;
const signRaw = (json: string, key: KeyObject) => {
  const part = b64uEncode(json);
  return `${part}.${signBytes(key, Buffer.from(part)).toString('base64url')}`;
};

describe('orderClaims', () => {
  it('puts every claim in wire order, then parameters in declared order', () => {
    const claims = orderClaims({
      params: [
        ['zeta', 'z'],
        ['alpha', 1],
        ['list', ['a']],
        ['flag', true],
      ],
      max: 600,
      chk: 120,
      mm: 2,
      fpn: 4,
      fp: [FP1, FP2],
      grace: 3,
      exp: 2_000,
      nbf: 1_500,
      iat: 1_000,
      lic: 'Lic',
      act: 'OFFLINE',
      typ: 'HYBRID',
      org: 'o',
      prd: 'p',
      lid: 'l',
    });
    expect(Object.keys(claims)).toEqual([...CLAIM_NAMES, 'zeta', 'alpha', 'list', 'flag']);
    expect(JSON.stringify(claims)).toBe(
      `{"v":4,"lid":"l","prd":"p","org":"o","typ":"HYBRID","act":"OFFLINE","lic":"Lic","iat":1000,"nbf":1500,"exp":2000,` +
        `"grace":3,"fp":["${FP1}","${FP2}"],"fpn":4,"mm":2,"chk":120,"max":600,"zeta":"z","alpha":1,"list":["a"],"flag":true}`,
    );
  });

  it('omits absent and null claims, never writing null', () => {
    const json = licencePayload({ ...base, typ: null, act: null, lic: undefined, nbf: null, exp: null, fp: null, fpn: 3, chk: null, max: undefined });
    expect(json).toBe('{"v":3,"lid":"lid-1","prd":"prod","org":"acme","iat":1700000000,"grace":0,"mm":1}');
  });

  it('always writes grace and mm, 0 included', () => {
    expect(orderClaims(base)).toMatchObject({ grace: 0, mm: 1 });
  });

  it('drops claims that do not apply to the licence type', () => {
    const offline = orderClaims({ ...base, typ: 'OFFLINE', act: 'ONLINE', chk: 60, max: 120 });
    expect(Object.keys(offline)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'iat', 'grace', 'mm']);
    const online = orderClaims({ ...base, typ: 'ONLINE', act: 'ONLINE', chk: 60, max: 120 });
    expect(Object.keys(online)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'iat', 'grace', 'mm', 'chk', 'max']);
    const hybrid = orderClaims({ ...base, typ: 'HYBRID', act: 'ONLINE' });
    expect(hybrid.act).toBe('ONLINE');
  });

  it('writes fpn only with fp', () => {
    expect(orderClaims({ ...base, fpn: 2 }).fpn).toBeUndefined();
    expect(orderClaims({ ...base, fp: FP1, fpn: 2 }).fpn).toBe(2);
  });

  it('keeps one fingerprint as a string with v 3', () => {
    expect(orderClaims({ ...base, fp: FP1 })).toMatchObject({ v: 3, fp: FP1 });
    expect(orderClaims({ ...base, fp: [FP1] })).toMatchObject({ v: 3, fp: FP1 });
    expect(orderClaims({ ...base, fp: [FP1, FP1, FP1] })).toMatchObject({ v: 3, fp: FP1 });
  });

  it('makes several fingerprints a list with v 4, duplicates removed, order kept', () => {
    const claims = orderClaims({ ...base, fp: [FP2, FP1, FP2, FP3, FP1] });
    expect(claims.v).toBe(4);
    expect(claims.fp).toEqual([FP2, FP1, FP3]);
  });

  it('omits an empty fingerprint list', () => {
    expect(orderClaims({ ...base, fp: [] })).not.toHaveProperty('fp');
  });

  it('ignores a v given in the input', () => {
    expect(orderClaims({ ...base, v: 9 } as unknown as ClaimsInput).v).toBe(3);
  });

  it('accepts parameters as an object in insertion order and skips null ones', () => {
    const claims = orderClaims({ ...base, params: { b: 'x', a: null, c: 0 } });
    expect(licenceParams(claims)).toEqual({ b: 'x', c: 0 });
    expect(Object.keys(claims).slice(-2)).toEqual(['b', 'c']);
  });

  it('refuses parameters that shadow a claim, index-like keys, and bad values', () => {
    for (const name of CLAIM_NAMES) {
      expect(isReservedClaimName(name)).toBe(true);
      expect(() => orderClaims({ ...base, params: [[name, 'x']] })).toThrow(/shadows/);
    }
    expect(isReservedClaimName('edition')).toBe(false);
    expect(() => orderClaims({ ...base, params: [['7', 'x']] })).toThrow(TypeError);
    expect(() =>
      orderClaims({
        ...base,
        params: [
          ['a', 1],
          ['a', 2],
        ],
      }),
    ).toThrow(/twice/);
    expect(() => orderClaims({ ...base, params: [['__proto__', 'x']] })).toThrow(TypeError);
    expect(() => orderClaims({ ...base, params: [['a', 1.5]] })).toThrow(TypeError);
    expect(() => orderClaims({ ...base, params: [['a', [1] as unknown as string[]]] })).toThrow(TypeError);
    expect(() => orderClaims({ ...base, params: [['a', { x: 1 } as unknown as string]] })).toThrow(TypeError);
  });

  it('refuses claims of the wrong type', () => {
    expect(() => orderClaims({ ...base, iat: 1.5 })).toThrow(/iat/);
    expect(() => orderClaims({ ...base, grace: -1 })).toThrow(/grace/);
    expect(() => orderClaims({ ...base, mm: 0 })).toThrow(/mm/);
    expect(() => orderClaims({ ...base, lid: '' })).toThrow(/lid/);
    expect(() => orderClaims({ ...base, fp: FP1, fpn: 6 })).toThrow(/fpn/);
    expect(() => orderClaims({ ...base, typ: 'TRIAL' as never })).toThrow(/typ/);
  });
});

describe('floating licences (v 5)', () => {
  const floating: ClaimsInput = { ...base, typ: 'ONLINE', mm: 5, chk: 300, max: 1_800, lse: 900 };

  it('writes lse, then brw, after max with v 5', () => {
    const claims = orderClaims({ ...floating, brw: 86_400, params: [['edition', 'pro']] });
    expect(Object.keys(claims)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'iat', 'grace', 'mm', 'chk', 'max', 'lse', 'brw', 'edition']);
    expect(claims.v).toBe(5);
    expect(JSON.stringify(claims)).toBe(licencePayload({ ...floating, brw: 86_400, params: [['edition', 'pro']] }));
  });

  it('omits brw when 0 or without lse, and never makes v 5 without lse', () => {
    expect(orderClaims({ ...floating, brw: 0 })).not.toHaveProperty('brw');
    expect(orderClaims({ ...base, typ: 'ONLINE', brw: 600 })).toEqual(orderClaims({ ...base, typ: 'ONLINE' }));
    expect(orderClaims({ ...base, typ: 'ONLINE' }).v).toBe(3);
  });

  it('refuses fingerprints, another type and lease lengths out of range', () => {
    expect(() => orderClaims({ ...floating, fp: FP1 })).toThrow(/"fp"/);
    expect(() => orderClaims({ ...floating, typ: 'HYBRID', act: 'ONLINE' })).toThrow(/typ/);
    expect(() => orderClaims({ ...floating, typ: undefined })).toThrow(/typ/);
    expect(() => orderClaims({ ...floating, lse: 59 })).toThrow(/lse/);
    expect(() => orderClaims({ ...floating, lse: 3_601 })).toThrow(/lse/);
    expect(() => orderClaims({ ...floating, brw: 2_592_001 })).toThrow(/brw/);
  });

  it('reserves lse and brw as parameter names only for floating licences', () => {
    expect(isReservedClaimName('lse')).toBe(false);
    expect(isReservedClaimName('brw')).toBe(false);
    expect(isReservedClaimName('lse', true)).toBe(true);
    expect(isReservedClaimName('max', true)).toBe(true);
    const nodeLocked = orderClaims({
      ...base,
      params: [
        ['lse', 'x'],
        ['brw', 2],
      ],
    });
    expect(licenceParams(nodeLocked)).toEqual({ lse: 'x', brw: 2 });
    expect(() => orderClaims({ ...floating, params: [['lse', 'x']] })).toThrow(/shadows/);
    expect(() => orderClaims({ ...floating, params: [['brw', 1]] })).toThrow(/shadows/);
    expect(licenceParams(orderClaims({ ...floating, brw: 60, params: [['n', 1]] }))).toEqual({ n: 1 });
  });

  it('parses a signed v 5 licence and refuses a v 3 one that claims to float', () => {
    const { privateKey, publicKey } = keys('ED25519');
    const parsed = parseLicence(signLicence({ ...floating, brw: 3_600 }, privateKey));
    expect(parsed.claims).toMatchObject({ v: 5, lse: 900, brw: 3_600 });
    expect(verifyLicence(parsed, [publicKey])).toBe(publicKey);
    // A v 3 payload with lse is a node-locked licence whose parameter happens to be named lse.
    const asParam = parseLicence(signRaw('{"v":3,"lid":"l","prd":"p","org":"o","typ":"ONLINE","iat":1,"grace":0,"mm":1,"lse":900}', privateKey));
    expect(licenceParams(asParam.claims)).toEqual({ lse: 900 });
    expect(() => parseLicence(signRaw('{"v":5,"lid":"l","prd":"p","org":"o","typ":"ONLINE","iat":1,"grace":0,"mm":1}', privateKey))).toThrow(/lse/);
  });
});

describe('upd (DESIGN.md 20)', () => {
  const windowed: ClaimsInput = { ...base, typ: 'ONLINE', exp: 1_731_000_000, chk: 300, max: 1_800 };

  it('is signed after lse and brw, before mtr, trl and the parameters, leaving v as it was', () => {
    const input: ClaimsInput = {
      ...windowed,
      lse: 900,
      brw: 600,
      upd: 1_760_000_000,
      mtr: [{ k: 'exports', p: 'MONTH', l: 10, o: null }],
      params: [['edition', 'pro']],
    };
    const claims = orderClaims(input);
    expect(Object.keys(claims)).toEqual(['v', 'lid', 'prd', 'org', 'typ', 'iat', 'exp', 'grace', 'mm', 'chk', 'max', 'lse', 'brw', 'upd', 'mtr', 'edition']);
    expect(claims.v).toBe(5);
    expect(licencePayload(input)).toBe(JSON.stringify(claims));
    expect(orderClaims({ ...windowed, upd: 1_760_000_000, fp: FP1 }).v).toBe(3);
    expect(licencePayload({ ...windowed, upd: 1_760_000_000, trl: true })).toContain(',"max":1800,"upd":1760000000,"trl":true}');
  });

  it('is omitted without a window, refused when not whole seconds, and a kept parameter named upd stays one', () => {
    expect(licencePayload({ ...windowed, upd: null })).not.toContain('upd');
    expect(() => orderClaims({ ...windowed, upd: 1.5 })).toThrow(/"upd"/);
    expect(() => orderClaims({ ...windowed, upd: -1 })).toThrow(/"upd"/);
    expect(() => orderClaims({ ...windowed, upd: 1, params: [['upd', 'nightly']] })).toThrow(/shadows/);
    expect(licenceParams(orderClaims({ ...windowed, params: [['upd', 'nightly']] }))).toEqual({ upd: 'nightly' });
  });
});

describe('signLicence / parseLicence / verifyLicence', () => {
  const claims: ClaimsInput = {
    ...base,
    typ: 'ONLINE',
    lic: 'Zoë "Q" <ü>',
    exp: 1_800_000_000,
    grace: 7,
    fp: [FP1, FP2],
    fpn: 3,
    mm: 2,
    chk: 3_600,
    max: 86_400,
    params: [
      ['edition', 'pro'],
      ['n', 5],
    ],
  };

  it.each(ALGORITHMS)('%s: signs, parses and verifies', (algorithm) => {
    const { privateKey, publicKey } = keys(algorithm);
    const licence = signLicence(claims, privateKey);
    const [payloadPart, signaturePart] = licence.split('.');
    expect(Buffer.from(payloadPart!, 'base64url').toString('utf8')).toBe(licencePayload(claims));
    const parsed = parseLicence(licence);
    expect(parsed.payloadPart).toBe(payloadPart);
    expect(parsed.signature.toString('base64url')).toBe(signaturePart);
    expect(parsed.claims).toEqual(JSON.parse(licencePayload(claims)));
    expect(licenceParams(parsed.claims)).toEqual({ edition: 'pro', n: 5 });
    expect(verifyLicence(parsed, [publicKey])).toBe(publicKey);
    expect(readLicence(licence, [publicKey])).toMatchObject({ ok: true, key: publicKey });
  });

  it('returns the key of the history that verifies', () => {
    const old = keys('RSA_2048');
    const current = keys('ED25519');
    const licence = signLicence(claims, old.privateKey);
    expect(verifyLicence(parseLicence(licence), [current.publicKey, old.publicKey])).toBe(old.publicKey);
    expect(verifyLicence(parseLicence(licence), [current.publicKey])).toBeNull();
    expect(verifyLicence(parseLicence(licence), [])).toBeNull();
  });

  it('is deterministic for Ed25519 and RSA', () => {
    for (const algorithm of ['ED25519', 'RSA_2048'] as const) {
      const { privateKey } = keys(algorithm);
      expect(signLicence(claims, privateKey)).toBe(signLicence(claims, privateKey));
    }
  });

  it.each(ALGORITHMS)('%s: a changed payload byte never verifies', (algorithm) => {
    const { privateKey, publicKey } = keys(algorithm);
    const licence = signLicence(claims, privateKey);
    const [payload, signature] = licence.split('.') as [string, string];
    const json = Buffer.from(payload, 'base64url').toString('utf8');
    for (const changed of [json.replace('"n":5', '"n":6'), json.replace('"grace":7', '"grace":8'), json.replace('lid-1', 'lid-2')]) {
      expect(readLicence(`${b64uEncode(changed)}.${signature}`, [publicKey])).toMatchObject({ ok: false, reason: 'BAD_SIGNATURE' });
    }
  });

  it.each(ALGORITHMS)("%s: no replacement of the signature's last character verifies", (algorithm) => {
    const { privateKey, publicKey } = keys(algorithm);
    const licence = signLicence(claims, privateKey);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (const c of alphabet) {
      if (c === licence.at(-1)) continue;
      const result = readLicence(licence.slice(0, -1) + c, [publicKey]);
      expect(result.ok).toBe(false);
    }
  });

  it.each([
    ['empty', ''],
    ['no dot', 'eyJ2IjozfQ'],
    ['three parts', 'a.b.c'],
    ['empty payload', '.AAAA'],
    ['empty signature', 'eyJ2IjozfQ.'],
    ['padded payload', 'eyJ2IjozfQ==.AAAA'],
    ['standard base64', 'eyJ2Ijoz+Q.AAAA'],
    ['surrounding space', ' eyJ2IjozfQ.AAAA'],
  ])('refuses %s as malformed', (_name, text) => {
    expect(() => parseLicence(text)).toThrow(MalformedError);
  });

  it('refuses non-object and non-UTF-8 payloads', () => {
    const sig = 'AAAA';
    for (const json of ['[]', 'null', '"text"', '42', '{', 'true']) {
      expect(() => parseLicence(`${b64uEncode(json)}.${sig}`)).toThrow(/JSON/);
    }
    expect(() => parseLicence(`${b64uEncode(Buffer.from([0x7b, 0xff, 0x7d]))}.${sig}`)).toThrow(/UTF-8/);
  });

  const good = JSON.parse(licencePayload({ ...base, exp: 5, fp: FP1, fpn: 2, typ: 'ONLINE', chk: 1, max: 2 })) as Record<string, unknown>;
  it.each<[string, Record<string, unknown>]>([
    ['v missing', { v: undefined }],
    ['v 5', { v: 5 }],
    ['v "3"', { v: '3' }],
    ['lid number', { lid: 7 }],
    ['prd missing', { prd: undefined }],
    ['org empty', { org: '' }],
    ['iat missing', { iat: undefined }],
    ['iat fractional', { iat: 1.5 }],
    ['iat string', { iat: '1' }],
    ['grace negative', { grace: -1 }],
    ['grace missing', { grace: undefined }],
    ['grace null', { grace: null }],
    ['mm zero', { mm: 0 }],
    ['mm missing', { mm: undefined }],
    ['exp null', { exp: null }],
    ['exp string', { exp: '5' }],
    ['nbf fractional', { nbf: 0.5 }],
    ['typ unknown', { typ: 'TRIAL' }],
    ['act unknown', { act: 'LATER' }],
    ['lic number', { lic: 3 }],
    ['fp number', { fp: 3 }],
    ['fp empty', { fp: '' }],
    ['fp list with v 3', { fp: ['a', 'b'] }],
    ['fp single-entry list', { v: 4, fp: ['a'] }],
    ['v 4 with string fp', { v: 4 }],
    ['fp list with a number', { v: 4, fp: ['a', 2] }],
    ['fpn 0', { fpn: 0 }],
    ['fpn 6', { fpn: 6 }],
    ['chk negative', { chk: -1 }],
    ['max string', { max: '2' }],
    ['iat beyond safe integers', { iat: 2 ** 60 }],
  ])('refuses a payload with %s', (_name, change) => {
    const payload: Record<string, unknown> = { ...good, ...change };
    const text = signRaw(JSON.stringify(payload), keys('ED25519').privateKey);
    expect(() => parseLicence(text)).toThrow(MalformedError);
    expect(readLicence(text, [keys('ED25519').publicKey])).toMatchObject({ ok: false, reason: 'MALFORMED' });
  });

  // JSON.parse takes these; other languages' parsers take the first key, or read a float: every
  // verifier refuses them alike (DESIGN.md 16).
  it.each([
    ['a duplicate claim', '{"v":3,"lid":"forged","lid":"l","prd":"p","org":"o","iat":0,"grace":0,"mm":1}', 'duplicate key "lid"'],
    ['a duplicate key spelled with an escape', '{"v":3,"lid":"l","prd":"p","org":"o","iat":0,"grace":0,"mm":1,"\\u006dm":2}', 'duplicate key "mm"'],
    ['a duplicate key in a parameter object', '{"v":3,"lid":"l","prd":"p","org":"o","iat":0,"grace":0,"mm":1,"x":{"a":1,"a":2}}', 'duplicate key "a"'],
    ['a fractional integer', '{"v":3,"lid":"l","prd":"p","org":"o","iat":1700000000.0,"grace":0,"mm":1}', 'number 1700000000.0'],
    ['an exponent', '{"v":3,"lid":"l","prd":"p","org":"o","iat":17e8,"grace":0,"mm":1}', 'number 17e8'],
    ['a parameter beyond 2^53', '{"v":3,"lid":"l","prd":"p","org":"o","iat":0,"grace":0,"mm":1,"n":9007199254740993}', 'number 9007199254740993'],
    ['a fractional parameter in a list', '{"v":3,"lid":"l","prd":"p","org":"o","iat":0,"grace":0,"mm":1,"n":[1,2.5]}', 'number 2.5'],
  ])('refuses a signed payload with %s', (_name, payload, message) => {
    const text = signRaw(payload, keys('ED25519').privateKey);
    expect(() => JSON.parse(payload)).not.toThrow();
    expect(() => parseLicence(text)).toThrow(message);
    expect(readLicence(text, [keys('ED25519').publicKey])).toMatchObject({ ok: false, reason: 'MALFORMED' });
  });

  it('takes keys and numbers inside strings, and one key in two objects, as plain JSON', () => {
    const payload = '{"v":3,"lid":"\\"lid\\": 1.5e3, \\\\","prd":"p","org":"o","iat":-0,"grace":0,"mm":1,"a":{"k":1},"b":[{"k":1},{"k":2}],"k":"2.5"}';
    expect(parseLicence(signRaw(payload, keys('ED25519').privateKey)).claims).toEqual(JSON.parse(payload));
  });

  it('writes exactly what JSON.stringify writes for the ordered object', () => {
    const inputs: ClaimsInput[] = [
      base,
      {
        ...base,
        lic: 'quote " backslash \\ newline \n tab \t nul \u0000 lone \ud800 emoji 😀',
        params: [
          ['k"ey', 'v'],
          ['ü', ['a', 'b"']],
          ['b', true],
          ['z', -5],
        ],
      },
      { ...base, typ: 'HYBRID', act: 'ONLINE', fp: [FP1, FP2, FP3], fpn: 5, nbf: 0, exp: 0, chk: 0, max: 0, params: { e: [], s: '' } },
    ];
    for (const input of inputs) expect(licencePayload(input)).toBe(JSON.stringify(orderClaims(input)));
  });

  it('keeps a "__proto__" claim from a payload as data', () => {
    const payload = '{"v":3,"lid":"l","prd":"p","org":"o","iat":0,"grace":0,"mm":1,"__proto__":{"polluted":true}}';
    const parsed = parseLicence(signRaw(payload, keys('ED25519').privateKey));
    const params = licenceParams(parsed.claims);
    expect(Object.keys(params)).toEqual(['__proto__']);
    expect((params as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('accepts a minimal payload and unknown claims as parameters', () => {
    const payload = { v: 3, lid: 'l', prd: 'p', org: 'o', iat: 0, grace: 0, mm: 1, extra: { nested: true } };
    const parsed = parseLicence(signRaw(JSON.stringify(payload), keys('ED25519').privateKey));
    expect(parsed.claims).toEqual(payload);
    expect(licenceParams(parsed.claims)).toEqual({ extra: { nested: true } });
  });

  it('verifies over the payload text, not the decoded JSON', () => {
    const { privateKey, publicKey } = keys('ED25519');
    const licence = signLicence(base, privateKey);
    const parsed = parseLicence(licence);
    // Same claims, re-serialised with a space: a different term, so the signature must fail.
    const respaced = b64uEncode(JSON.stringify(parsed.claims, null, 1));
    expect(verifyLicence({ ...parsed, payloadPart: respaced }, [publicKey])).toBeNull();
    expect(verifyLicence({ ...parsed, payloadPart: `${parsed.payloadPart}=` }, [publicKey])).toBeNull();
  });
});
