// The TypeScript SDK's driver (DESIGN.md 16, docs/protocol.md): one JSON request a line on stdin,
// one JSON answer a line on stdout, in order; logs go to stderr. Started by `packages/sdk/driver`.
// A test program: it is not in the package's `files`.
import { createInterface } from 'node:readline';
import {
  collectFingerprint,
  fileStore,
  LicenceClient,
  LicensorError,
  verifyLicence,
  type CheckResult,
  type Update,
  type UpdateOptions,
  type UsageReport,
} from '../src/index.js';

type Request = Record<string, unknown>;
type Answer =
  | { ok: true; result: unknown }
  | { ok: false; error: { code: string; message: string; status?: number; reason?: string; matched?: string[]; retryAfterSeconds?: number } };

interface Config {
  baseUrl: string;
  slug: string;
  productKey?: string;
  checkId: string;
  checkToken: string;
  publicKeys: string[];
  /** Absent until a licence is held (DESIGN.md 18: startTrial gets one). */
  licence?: string;
  stateDir: string;
  timeoutMs?: number;
}

/** The driver's own refusals: INVALID_OPTIONS, or NO_UPDATE (a download with no update held). */
class DriverError extends Error {
  constructor(
    message: string,
    readonly code: 'INVALID_OPTIONS' | 'NO_UPDATE' = 'INVALID_OPTIONS',
  ) {
    super(message);
  }
}

let config: Config | null = null;
let client: LicenceClient | null = null;
let offsetMs = 0;
let fingerprint: string | undefined;
/** The update the last checkForUpdate answered; none after one that failed, or a new configure. */
let update: Update | null = null;

const clock = () => Date.now() + offsetMs;

function text(request: Request, name: string, optional = false): string | undefined {
  const value = request[name];
  if (value === undefined && optional) return undefined;
  if (typeof value !== 'string' || value === '') throw new DriverError(`${name} must be a non-empty string`);
  return value;
}

function readConfig(request: Request): Config {
  const publicKeys = request.publicKeys;
  if (!Array.isArray(publicKeys) || publicKeys.length === 0 || !publicKeys.every((key) => typeof key === 'string')) {
    throw new DriverError('publicKeys must be a non-empty list of PEM strings');
  }
  const timeoutMs = request.timeoutMs;
  if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || (timeoutMs as number) < 1)) throw new DriverError('timeoutMs must be a positive integer');
  return {
    baseUrl: text(request, 'baseUrl')!,
    slug: text(request, 'slug')!,
    productKey: text(request, 'productKey', true),
    checkId: text(request, 'checkId')!,
    checkToken: text(request, 'checkToken')!,
    publicKeys: publicKeys as string[],
    licence: text(request, 'licence', true),
    stateDir: text(request, 'stateDir')!,
    timeoutMs: timeoutMs as number | undefined,
  };
}

function configured(): Config {
  if (config === null) throw new DriverError('send configure first');
  return config;
}

/** The client for the current configuration, built on first use (a later configure or setFingerprint replaces it). */
function clientOptions() {
  const { publicKeys, stateDir, licence: _licence, ...options } = configured();
  return { ...options, publicKeyPem: publicKeys, store: fileStore(stateDir), clock, fingerprint };
}

function heldLicence(): string {
  const { licence } = configured();
  if (licence === undefined) throw new DriverError('no licence is held: configure one or start a trial');
  return licence;
}

function currentClient(): LicenceClient {
  client ??= new LicenceClient({ ...clientOptions(), licence: heldLicence() });
  return client;
}

/** `{code, status?}`: the driver's no answer, without the SDK's message. */
const noAnswerOf = (noAnswer: CheckResult['noAnswer']) =>
  noAnswer && { code: noAnswer.code, ...(noAnswer.status !== undefined ? { status: noAnswer.status } : {}) };

/** DESIGN.md 16's check result. */
function checkAnswer(result: CheckResult) {
  return {
    state: result.state,
    reasons: result.reasons,
    fresh: result.answer?.fresh ?? null,
    clockRollback: result.clockRollback,
    ageSeconds: result.ageSeconds,
    noAnswer: noAnswerOf(result.noAnswer),
    renewed: result.renewed,
    airGapped: result.airGapped,
    leaseEndsAt: result.answer?.leaseEndsAt || null,
    trial: result.trial,
  };
}

/** DESIGN.md 19's usage result. */
function usageAnswer(report: UsageReport) {
  const { licensed, reason, events, meters, fresh, pending, noAnswer } = report;
  return { licensed, reason, events, meters, fresh, pending, noAnswer: noAnswerOf(noAnswer) };
}

const ops: Record<string, (request: Request) => Promise<unknown> | unknown> = {
  configure(request) {
    config = readConfig(request);
    client = null;
    update = null;
    if (config.licence !== undefined) currentClient();
    return {};
  },
  verify(request) {
    const { publicKeys, productKey, slug } = configured();
    // A given string goes to verify as it is, the empty one included (DESIGN.md 16).
    const given = request.licence;
    if (given !== undefined && typeof given !== 'string') throw new DriverError('licence must be a string');
    const licence = given ?? heldLicence();
    const result = verifyLicence(licence, publicKeys, { now: clock(), fingerprint, productKey, organisation: slug });
    return { valid: result.valid, reasons: result.reasons, claims: result.claims };
  },
  async check() {
    return checkAnswer(await currentClient().check());
  },
  async release() {
    const result = await currentClient().release();
    return result.released ? { released: true } : { released: false, reason: result.reason };
  },
  async fetch() {
    const licence = await currentClient().fetch();
    configured().licence = licence;
    return { licence };
  },
  async clearCache() {
    await currentClient().clearCache();
    return {};
  },
  setClock(request) {
    if (!Number.isSafeInteger(request.offsetMs)) throw new DriverError('offsetMs must be an integer');
    offsetMs = request.offsetMs as number;
    return {};
  },
  setFingerprint(request) {
    fingerprint = text(request, 'fingerprint');
    client = null;
    return {};
  },
  fingerprint() {
    return { fingerprint: collectFingerprint().fingerprint };
  },
  async startTrial(request) {
    const email = text(request, 'email', true);
    const start = await LicenceClient.startTrial(clientOptions(), email === undefined ? {} : { email });
    configured().licence = start.licence;
    client = start.client;
    const { state, reasons } = start.result;
    return { licence: start.licence, lid: start.result.licence.claims!.lid, created: start.created, endsAt: start.endsAt, state, reasons };
  },
  async borrow(request) {
    return checkAnswer(await currentClient().borrow(text(request, 'until')!));
  },
  async recordUsage(request) {
    // Handed over as given, so the SDK itself refuses a bad meter or amount.
    return usageAnswer(await currentClient().recordUsage(request.meter as string, request.amount as number | undefined));
  },
  async usage() {
    return usageAnswer(await currentClient().usage());
  },
  async checkForUpdate(request) {
    update = null;
    // Handed over as given, so the SDK itself refuses a bad version, platform, arch or channel.
    const { currentVersion, platform, arch, channel } = request;
    const answer = await currentClient().checkForUpdate({ currentVersion, platform, arch, channel } as UpdateOptions);
    update = answer.update;
    return answer;
  },
  async download(request) {
    if (update === null) throw new DriverError('no update is held: checkForUpdate found none', 'NO_UPDATE');
    const { path, size, sha256 } = await currentClient().download(update, text(request, 'filename')!, text(request, 'to')!);
    return { path, size, sha256 };
  },
  feedUrls() {
    return currentClient().feedUrls();
  },
  activationRequest() {
    return currentClient().createAirGapRequest();
  },
  async activateAirGap(request) {
    const { until } = await currentClient().activateAirGapped(text(request, 'response')!);
    return { until };
  },
  async deactivateAirGap() {
    const { code } = await currentClient().deactivateAirGapped();
    return { code };
  },
};

async function answer(line: string): Promise<Answer> {
  try {
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch {
      throw new DriverError('the request is not JSON');
    }
    if (request === null || typeof request !== 'object' || Array.isArray(request)) throw new DriverError('the request is not a JSON object');
    const op = (request as Request).op;
    if (typeof op !== 'string' || !Object.hasOwn(ops, op)) throw new DriverError(`unknown op ${JSON.stringify(op)}`);
    return { ok: true, result: await ops[op]!(request as Request) };
  } catch (error) {
    if (error instanceof LicensorError) {
      const { code, message, status, reason, matched, retryAfterSeconds } = error;
      return {
        ok: false,
        error: {
          code,
          message,
          ...(status !== undefined ? { status } : {}),
          ...(reason !== undefined ? { reason } : {}),
          ...(matched ? { matched } : {}),
          ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
        },
      };
    }
    if (error instanceof DriverError) return { ok: false, error: { code: error.code, message: error.message } };
    console.error(error);
    return { ok: false, error: { code: 'INVALID_OPTIONS', message: (error as Error).message } };
  }
}

// One request at a time, answered in order; the process ends when stdin closes.
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === '') continue;
  process.stdout.write(`${JSON.stringify(await answer(line))}\n`);
}
