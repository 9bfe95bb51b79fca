import { createHash, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import pkcs11js from 'pkcs11js';
import { ALGORITHM_INFO, algorithmOfKey, verifyBytes, type Algorithm } from '@licensor/protocol';
import { forbidden, invalid } from '../core/errors.js';
import { fieldName } from '../core/fields.js';
import { rawToDer } from './ecdsa.js';

type Handle = Buffer;
type Module = InstanceType<typeof pkcs11js.PKCS11>;

/** Where a key on a token is: the token's label, the key's CKA_LABEL and CKA_ID (hex). */
export interface TokenKeyRef {
  token: string;
  label: string;
  id: string;
}

/** A key found (or made) on a token, with its public half read out. */
export interface TokenKey extends TokenKeyRef {
  algorithm: Algorithm;
  publicKey: KeyObject;
}

/** The token, its key or its PIN cannot be used now: keyState ERROR, and 503 on signing (a 400 naming `field` at save). */
export class TokenUnavailable extends Error {
  constructor(
    message: string,
    readonly field: 'tokenLabel' | 'keyLabel' | 'pin' = 'tokenLabel',
  ) {
    super(message);
  }
}

const CKM_EDDSA = 0x1057;
const CKM_EC_EDWARDS_KEY_PAIR_GEN = 0x1055;
const CKK_EC_EDWARDS = 0x40;
// Another attempt at a token that just failed waits this long: a missing token is not asked for in a loop.
const RETRY_MS = 2_000;
// Sessions per token: signatures run on libuv's threads, one operation per session at a time.
const SESSIONS = 4;

const CURVE_OIDS: Record<string, Algorithm> = {
  '06082a8648ce3d030107': 'EC_P256',
  '06052b81040022': 'EC_P384',
};
const ED25519_OID = Buffer.from('06032b6570', 'hex');
// The DigestInfo prefix of SHA-256 (RFC 8017 9.2): CKM_RSA_PKCS signs what it is given.
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');

const errorCode = (err: unknown) => (err instanceof pkcs11js.Pkcs11Error ? err.code : null);
const pinHash = (pin: string) => createHash('sha256').update(pin).digest('hex');

/** CKA_EC_POINT is a DER OCTET STRING around the point on most tokens, the bare point on a few. */
function bareEcPoint(value: Buffer, length: number): Buffer {
  if (value.length === length) return value;
  const header = value.length - length;
  if (value[0] !== 0x04 || header < 2) throw new TokenUnavailable('the public key on the token is not readable');
  return value.subarray(header);
}

function publicKeyOf(keyType: number, attributes: Map<number, Buffer>): KeyObject {
  const b64u = (b: Buffer) => b.toString('base64url');
  if (keyType === pkcs11js.CKK_RSA) {
    return createPublicKey({
      key: { kty: 'RSA', n: b64u(attributes.get(pkcs11js.CKA_MODULUS)!), e: b64u(attributes.get(pkcs11js.CKA_PUBLIC_EXPONENT)!) },
      format: 'jwk',
    });
  }
  const params = attributes.get(pkcs11js.CKA_EC_PARAMS)!;
  const point = attributes.get(pkcs11js.CKA_EC_POINT)!;
  if (keyType === CKK_EC_EDWARDS) {
    if (!params.equals(ED25519_OID) && params.toString('latin1').indexOf('edwards25519') < 0)
      throw new TokenUnavailable('the key is an Edwards key other than Ed25519');
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64u(bareEcPoint(point, 32)) }, format: 'jwk' });
  }
  const algorithm = CURVE_OIDS[params.toString('hex')];
  if (!algorithm) throw new TokenUnavailable('the key is on a curve other than P-256 or P-384');
  const size = algorithm === 'EC_P256' ? 32 : 48;
  const xy = bareEcPoint(point, 1 + 2 * size);
  return createPublicKey({
    key: { kty: 'EC', crv: algorithm === 'EC_P256' ? 'P-256' : 'P-384', x: b64u(xy.subarray(1, 1 + size)), y: b64u(xy.subarray(1 + size)) },
    format: 'jwk',
  });
}

/** The mechanism and the bytes the token signs, and how its output becomes the wire signature. */
function signing(algorithm: Algorithm, data: Buffer) {
  const digest = ALGORITHM_INFO[algorithm].digest;
  if (algorithm === 'ED25519') return { mechanism: CKM_EDDSA, input: data, output: (s: Buffer) => s };
  const hash = createHash(digest!).update(data).digest();
  if (algorithm.startsWith('RSA')) return { mechanism: pkcs11js.CKM_RSA_PKCS, input: Buffer.concat([SHA256_DIGEST_INFO, hash]), output: (s: Buffer) => s };
  // Tokens answer ECDSA as raw r‖s; the JDK and node:crypto expect DER.
  return { mechanism: pkcs11js.CKM_ECDSA, input: hash, output: rawToDer };
}

/** The mechanism and public-key template that generate a key pair of the algorithm. */
function generation(algorithm: Algorithm) {
  if (algorithm === 'ED25519') return { mechanism: CKM_EC_EDWARDS_KEY_PAIR_GEN, publicTemplate: [{ type: pkcs11js.CKA_EC_PARAMS, value: ED25519_OID }] };
  if (algorithm.startsWith('RSA')) {
    const bits = (ALGORITHM_INFO[algorithm].keyGeneration.options as { modulusLength: number }).modulusLength;
    return {
      mechanism: pkcs11js.CKM_RSA_PKCS_KEY_PAIR_GEN,
      publicTemplate: [
        { type: pkcs11js.CKA_MODULUS_BITS, value: bits },
        { type: pkcs11js.CKA_PUBLIC_EXPONENT, value: Buffer.from([1, 0, 1]) },
      ],
    };
  }
  const oid = Object.keys(CURVE_OIDS).find((hex) => CURVE_OIDS[hex] === algorithm)!;
  return { mechanism: pkcs11js.CKM_EC_KEY_PAIR_GEN, publicTemplate: [{ type: pkcs11js.CKA_EC_PARAMS, value: Buffer.from(oid, 'hex') }] };
}

/**
 * One token as this process uses it: its slot, the login (PKCS#11 logs a whole application in,
 * not a session), a small pool of sessions, and the handles of keys already found.
 */
class Token {
  private idle: Handle[] = [];
  private opened = 0;
  private busy = 0;
  private waiting: Array<(session: Handle) => void> = [];
  // A change of login waits for every session to be idle and keeps new work out meanwhile.
  private gate: Promise<void> | null = null;
  private pin: string | null = null;
  private loginSession: Handle | null = null;
  private readonly refused = new Set<string>();
  private readonly handles = new Map<string, Handle>();

  constructor(
    private readonly module: Module,
    readonly label: string,
    readonly slot: Handle,
  ) {}

  close() {
    for (const session of [...this.idle, ...(this.loginSession ? [this.loginSession] : [])]) {
      try {
        this.module.C_CloseSession(session);
      } catch {
        // The token is gone; its sessions went with it.
      }
    }
    this.idle = [];
  }

  private async acquire(): Promise<Handle> {
    while (this.gate) await this.gate;
    this.busy++;
    const idle = this.idle.pop();
    if (idle) return idle;
    if (this.opened < SESSIONS) {
      this.opened++;
      try {
        return this.module.C_OpenSession(this.slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
      } catch (err) {
        this.opened--;
        this.busy--;
        throw err;
      }
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(session: Handle) {
    this.busy--;
    const next = this.waiting.shift();
    if (next) next(session);
    else this.idle.push(session);
  }

  /** Runs work on a pooled session, logged in with this PIN. */
  async use<T>(pin: string, work: (session: Handle) => Promise<T> | T): Promise<T> {
    await this.login(pin);
    const session = await this.acquire();
    try {
      return await work(session);
    } finally {
      this.release(session);
    }
  }

  /**
   * Logs the process in with this PIN unless it already is. A PIN the token refused is never
   * tried again (a token locks after a few wrong PINs); another PIN logs out the first, which is
   * logged in again when the new one is refused, so the keys that use it go on signing.
   */
  private async login(pin: string) {
    if (this.pin === pin) return;
    const hash = pinHash(pin);
    if (this.refused.has(hash)) throw new TokenUnavailable(`the PIN does not log in to token "${this.label}"`, 'pin');
    while (this.gate) await this.gate;
    if (this.pin === pin) return;
    let open!: () => void;
    this.gate = new Promise((resolve) => (open = resolve));
    try {
      while (this.busy > 0) await new Promise((resolve) => setTimeout(resolve, 5));
      // The login lasts while one of the application's sessions on the token is open: this one.
      this.loginSession ??= this.module.C_OpenSession(this.slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
      const session = this.loginSession;
      const previous = this.pin;
      if (previous !== null) this.module.C_Logout(session);
      // A logout ends the handles of private objects.
      this.forgetHandles();
      this.pin = null;
      try {
        this.module.C_Login(session, pkcs11js.CKU_USER, pin);
        this.pin = pin;
      } catch (err) {
        if (errorCode(err) === pkcs11js.CKR_USER_ALREADY_LOGGED_IN) {
          this.pin = pin;
          return;
        }
        if (previous !== null) {
          this.module.C_Login(session, pkcs11js.CKU_USER, previous);
          this.pin = previous;
        }
        if (errorCode(err) === pkcs11js.CKR_PIN_INCORRECT || errorCode(err) === pkcs11js.CKR_PIN_LEN_RANGE) {
          this.refused.add(hash);
          throw new TokenUnavailable(`the PIN does not log in to token "${this.label}"`, 'pin');
        }
        if (errorCode(err) === pkcs11js.CKR_PIN_LOCKED) throw new TokenUnavailable(`token "${this.label}" has locked its PIN`, 'pin');
        throw err;
      }
    } finally {
      this.gate = null;
      open();
    }
  }

  private find(session: Handle, template: pkcs11js.Template): Handle[] {
    this.module.C_FindObjectsInit(session, template);
    try {
      return this.module.C_FindObjects(session, 2);
    } finally {
      this.module.C_FindObjectsFinal(session);
    }
  }

  forgetHandles() {
    this.handles.clear();
  }

  /** The private key's handle (found by label and CKA_ID), kept until the token fails. */
  keyHandle(session: Handle, ref: TokenKeyRef): Handle {
    const name = `${ref.label}\0${ref.id}`;
    let handle = this.handles.get(name);
    if (!handle) {
      const [found] = this.find(session, [
        { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
        { type: pkcs11js.CKA_LABEL, value: ref.label },
        { type: pkcs11js.CKA_ID, value: Buffer.from(ref.id, 'hex') },
      ]);
      if (!found) throw new TokenUnavailable(`no key labelled "${ref.label}" is on token "${this.label}"`, 'keyLabel');
      handle = found;
      this.handles.set(name, handle);
    }
    return handle;
  }

  /** Finds the key pair labelled so, for a save: exactly one private key, and its public key. */
  describe(session: Handle, label: string): TokenKey {
    const privates = this.find(session, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
      { type: pkcs11js.CKA_LABEL, value: label },
    ]);
    if (privates.length === 0) throw invalid('pkcs11.keyLabel', `no private key labelled "${label}" is on token "${this.label}"`);
    if (privates.length > 1) throw invalid('pkcs11.keyLabel', `several private keys are labelled "${label}" on token "${this.label}"`);
    const [{ value: id }, { value: type }] = this.module.C_GetAttributeValue(session, privates[0]!, [
      { type: pkcs11js.CKA_ID },
      { type: pkcs11js.CKA_KEY_TYPE },
    ]) as [pkcs11js.AttributeResult, pkcs11js.AttributeResult];
    const keyType = (type as Buffer).readUInt32LE(0);
    const [publicHandle] = this.find(session, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PUBLIC_KEY },
      { type: pkcs11js.CKA_ID, value: id as Buffer },
    ]);
    if (!publicHandle) throw invalid('pkcs11.keyLabel', `the key labelled "${label}" has no public key on the token`);
    const wanted = keyType === pkcs11js.CKK_RSA ? [pkcs11js.CKA_MODULUS, pkcs11js.CKA_PUBLIC_EXPONENT] : [pkcs11js.CKA_EC_PARAMS, pkcs11js.CKA_EC_POINT];
    const values = this.module.C_GetAttributeValue(
      session,
      publicHandle,
      wanted.map((t) => ({ type: t })),
    );
    let publicKey: KeyObject;
    try {
      publicKey = publicKeyOf(keyType, new Map(values.map((a) => [a.type, a.value as Buffer])));
    } catch (err) {
      throw invalid('pkcs11.keyLabel', `${err instanceof TokenUnavailable ? err.message : 'the public key on the token is not readable'}`);
    }
    const algorithm = algorithmOfKey(publicKey);
    if (algorithm === null) throw invalid('pkcs11.keyLabel', 'the key is not Ed25519, RSA 2048/3072/4096, ECDSA P-256 or ECDSA P-384');
    return { token: this.label, label, id: (id as Buffer).toString('hex'), algorithm, publicKey };
  }

  async sign(session: Handle, ref: TokenKeyRef, algorithm: Algorithm, data: Buffer): Promise<Buffer> {
    const { mechanism, input, output } = signing(algorithm, data);
    this.module.C_SignInit(session, { mechanism }, this.keyHandle(session, ref));
    return output(await this.module.C_SignAsync(session, input, Buffer.alloc(512)));
  }

  async generate(session: Handle, algorithm: Algorithm, label: string): Promise<TokenKeyRef> {
    const id = randomBytes(16);
    const { mechanism, publicTemplate } = generation(algorithm);
    const common = [
      { type: pkcs11js.CKA_TOKEN, value: true },
      { type: pkcs11js.CKA_LABEL, value: label },
      { type: pkcs11js.CKA_ID, value: id },
    ];
    await this.module.C_GenerateKeyPairAsync(
      session,
      { mechanism },
      [...common, ...publicTemplate, { type: pkcs11js.CKA_VERIFY, value: true }, { type: pkcs11js.CKA_PRIVATE, value: false }],
      [
        ...common,
        { type: pkcs11js.CKA_SIGN, value: true },
        { type: pkcs11js.CKA_PRIVATE, value: true },
        { type: pkcs11js.CKA_SENSITIVE, value: true },
        { type: pkcs11js.CKA_EXTRACTABLE, value: false },
      ],
    );
    return { token: this.label, label, id: id.toString('hex') };
  }
}

interface Library {
  module: Module | null;
  loadError: string | null;
  tokens: Map<string, Token>;
  failed: Map<string, { at: number; message: string }>;
}

// Codes after which the token's sessions, login and handles are dropped and found afresh.
const LOST = new Set([
  pkcs11js.CKR_SESSION_HANDLE_INVALID,
  pkcs11js.CKR_SESSION_CLOSED,
  pkcs11js.CKR_DEVICE_REMOVED,
  pkcs11js.CKR_DEVICE_ERROR,
  pkcs11js.CKR_TOKEN_NOT_PRESENT,
  pkcs11js.CKR_USER_NOT_LOGGED_IN,
  pkcs11js.CKR_SLOT_ID_INVALID,
]);

/**
 * The deployment's PKCS#11 module (DESIGN.md 10): which tokens each organisation may use, the
 * save-time checks, signing and key generation on the token. The private key is never read out.
 */
export class Hsm {
  // A module is loaded and logged in once per process (PKCS#11 state is the application's), whatever uses it.
  private static readonly libraries = new Map<string, Library>();
  private readonly lib: Library;

  constructor(
    private readonly modulePath: string,
    private readonly allowed: ReadonlyMap<string, readonly string[]>,
  ) {
    let lib = Hsm.libraries.get(modulePath);
    if (!lib) Hsm.libraries.set(modulePath, (lib = { module: null, loadError: null, tokens: new Map(), failed: new Map() }));
    this.lib = lib;
  }

  /** The module, loaded once per process; null with `unavailableReason` when it does not load. */
  private loaded(): Module | null {
    if (this.lib.module === null && this.lib.loadError === null) {
      const module = new pkcs11js.PKCS11();
      try {
        module.load(this.modulePath);
        // Signatures run on libuv's threads: the module must lock for itself.
        module.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
        this.lib.module = module;
      } catch (err) {
        if (errorCode(err) === pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) this.lib.module = module;
        else this.lib.loadError = `the PKCS#11 module ${this.modulePath} does not load`;
      }
    }
    return this.lib.module;
  }

  get unavailableReason(): string | null {
    this.loaded();
    return this.lib.loadError;
  }

  tokensOf(slug: string): readonly string[] {
    return this.allowed.get(slug) ?? [];
  }

  private token(label: string): Token {
    const module = this.loaded();
    if (!module) throw new TokenUnavailable(this.lib.loadError!);
    let token = this.lib.tokens.get(label);
    if (token) return token;
    const failure = this.lib.failed.get(label);
    if (failure && Date.now() - failure.at < RETRY_MS) throw new TokenUnavailable(failure.message);
    const slot = module.C_GetSlotList(true).find((s) => module.C_GetTokenInfo(s).label.trimEnd() === label);
    if (!slot) {
      const message = `token "${label}" is not present`;
      this.lib.failed.set(label, { at: Date.now(), message });
      throw new TokenUnavailable(message);
    }
    token = new Token(module, label, slot);
    this.lib.tokens.set(label, token);
    return token;
  }

  /** Runs work on the token, dropping the token's state when the token was lost, so the next call finds it afresh. */
  private async on<T>(label: string, pin: string, work: (token: Token, session: Handle) => Promise<T> | T): Promise<T> {
    const token = this.token(label);
    for (let attempt = 0; ; attempt++) {
      try {
        return await token.use(pin, (session) => work(token, session));
      } catch (err) {
        const code = errorCode(err);
        if (code === null) throw err;
        // A key deleted or replaced on the token: look for it again, once.
        if (attempt === 0 && (code === pkcs11js.CKR_KEY_HANDLE_INVALID || code === pkcs11js.CKR_OBJECT_HANDLE_INVALID)) {
          token.forgetHandles();
          continue;
        }
        const message = `token "${label}" failed: ${err instanceof Error ? err.message : code}`;
        if (LOST.has(code)) {
          this.lib.tokens.delete(label);
          token.close();
          this.lib.failed.set(label, { at: Date.now(), message });
        }
        throw new TokenUnavailable(message);
      }
    }
  }

  /** What a save asks of the token: a failure is a 400 naming the field at fault, and nothing is saved. */
  private async atSave<T>(slug: string, tokenLabel: string, work: () => Promise<T>): Promise<T> {
    if (!this.tokensOf(slug).includes(tokenLabel))
      throw forbidden(`${fieldName('pkcs11.tokenLabel')}: token "${tokenLabel}" is not one of this organisation's`);
    try {
      return await work();
    } catch (err) {
      if (!(err instanceof TokenUnavailable)) throw err;
      throw invalid(`pkcs11.${err.field}`, err.message);
    }
  }

  /**
   * The save-time check of DESIGN.md 10: the token is one of the organisation's and is there, the
   * PIN logs in, the labelled key pair is there and signs what its public key verifies.
   */
  async find(slug: string, tokenLabel: string, keyLabel: string, pin: string): Promise<TokenKey> {
    return this.atSave(slug, tokenLabel, async () => {
      const key = await this.on(tokenLabel, pin, (token, session) => token.describe(session, keyLabel));
      await this.proveSigns(key, pin);
      return key;
    });
  }

  private async proveSigns(key: TokenKey, pin: string) {
    const probe = randomBytes(32);
    const signature = await this.sign(key, pin, key.algorithm, probe);
    if (!verifyBytes(key.publicKey, probe, signature))
      throw new TokenUnavailable(`the key labelled "${key.label}" makes no signature its public key verifies`, 'keyLabel');
  }

  /** Logs in and finds the key, as a signature would, without signing. */
  async reach(ref: TokenKeyRef, pin: string): Promise<void> {
    await this.on(ref.token, pin, (token, session) => token.keyHandle(session, ref));
  }

  async sign(ref: TokenKeyRef, pin: string, algorithm: Algorithm, data: Buffer): Promise<Buffer> {
    return this.on(ref.token, pin, (token, session) => token.sign(session, ref, algorithm, data));
  }

  /** A new key pair on the token, sensitive and not extractable, for `regenerateKey`. */
  async generate(slug: string, tokenLabel: string, pin: string, algorithm: Algorithm, label: string): Promise<TokenKey> {
    const ref = await this.atSave(slug, tokenLabel, () => this.on(tokenLabel, pin, (token, session) => token.generate(session, algorithm, label)));
    return this.find(slug, ref.token, ref.label, pin);
  }
}
