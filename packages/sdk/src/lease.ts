import { parseLicence } from '@licensor/protocol';
import { LicensorError } from './errors.js';
import type { CheckResult, LicenceClient, NoAnswer, ReleaseResult, VerifiedAnswer } from './client.js';

/**
 * How far the remembered clock offset is believed when judging a lease end (DESIGN.md 13): an
 * edited or odd offset cannot stretch a lease by more than a minute.
 */
const LEASE_OFFSET_LIMIT_MS = 60_000;

/** The service's time now for a lease, from this machine's clock and the answer's offset clamped to ±60 s. */
export function leaseNow(offsetMs: number | null, now: number): number {
  return now + Math.max(-LEASE_OFFSET_LIMIT_MS, Math.min(LEASE_OFFSET_LIMIT_MS, offsetMs ?? 0));
}

/** True while a floating licence's verified answer counts: before its signed `leaseEndsAt`. */
export function leaseLive(leaseEndsAt: string, offsetMs: number | null, now: number): boolean {
  return leaseNow(offsetMs, now) < Date.parse(leaseEndsAt);
}

/** The checks' interval, from the licence's lease length: max(lse / 3, 60 s). */
export function leaseInterval(licence: string): number {
  const lse = parseLicence(licence).claims.lse ?? 0;
  return Math.max(lse / 3, 60) * 1000;
}

export interface LeaseOptions {
  /**
   * A renewal got no answer (and its immediate retry neither): the lease still holds until
   * `leaseEndsAt`, and the helper keeps trying, more often as the end nears.
   */
  onAtRisk?: (event: { leaseEndsAt: Date; noAnswer: NoAnswer }) => void;
  /**
   * The lease is lost: `LAPSED` when its end passed without a renewal (the service was out of
   * reach for a whole lease), `REFUSED` when a verified answer gave this machine no lease (every
   * seat taken, revoked, expired). The helper keeps checking, and `onCheck` reports a lease regained.
   */
  onLost?: (event: { reason: 'LAPSED' | 'REFUSED'; result: CheckResult | null }) => void;
  /** Every check the helper makes, for the application's own display. */
  onCheck?: (result: CheckResult) => void;
  /** Release on SIGINT and SIGTERM, then let the signal end the process as it would have (default true). */
  releaseOnSignals?: boolean;
  /** A number in [0, 1) for the ±10% jitter (default Math.random). */
  random?: () => number;
}

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Holds a floating licence's lease while the application runs (DESIGN.md 13), through a
 * LicenceClient: made by `client.keepLease()`. The lease length is the longest outage of the
 * service the application survives: without a renewal, the lease ends at its signed end.
 */
export class LeaseKeeper {
  readonly #client: LicenceClient;
  readonly #clock: () => number;
  readonly #options: LeaseOptions;
  readonly #onSignal = (signal: NodeJS.Signals) => void this.#exitOn(signal);
  #result: CheckResult | null = null;
  #held = false;
  #heldUntil = new Date(0);
  #atRisk = false;
  #stopped = false;
  #tickTimer: NodeJS.Timeout | undefined;
  #lapseTimer: NodeJS.Timeout | undefined;

  constructor(client: LicenceClient, clock: () => number, options: LeaseOptions) {
    this.#client = client;
    this.#clock = clock;
    this.#options = options;
  }

  /** The latest check's result. */
  get result(): CheckResult | null {
    return this.#result;
  }

  /** True while this machine holds the lease: a verified answer granted it and its end has not passed. */
  get held(): boolean {
    return this.#held;
  }

  /** The signed end of the lease held, null when none is. */
  get leaseEndsAt(): Date | null {
    return this.#held ? this.#heldUntil : null;
  }

  /** Takes the lease with a first check and starts renewing it. */
  async start(): Promise<void> {
    if (parseLicence(this.#client.licence).claims.v !== 5) throw new LicensorError('NOT_CHECKABLE', 'keepLease() needs a floating licence (v 5)');
    if (this.#options.releaseOnSignals !== false) for (const signal of SIGNALS) process.on(signal, this.#onSignal);
    await this.#tick();
  }

  /**
   * Stops renewing and releases the lease, unless it is borrowed (a borrowed lease is kept until
   * its end, for the trip it was borrowed for). Answers the release's result, null when nothing
   * was released; a release that fails is thrown (the lease then ends at its signed end).
   */
  async stop(): Promise<ReleaseResult | null> {
    if (this.#stopped) return null;
    this.#stopped = true;
    clearTimeout(this.#tickTimer);
    clearTimeout(this.#lapseTimer);
    for (const signal of SIGNALS) process.off(signal, this.#onSignal);
    const held = this.#held;
    this.#held = false;
    if (!held || this.#client.borrowedUntil > this.#clock()) return null;
    return this.#client.release();
  }

  /** Releases, then lets the signal do what it would have done had nobody listened: end the process. */
  async #exitOn(signal: NodeJS.Signals): Promise<void> {
    try {
      await this.stop();
    } catch {
      // Unreachable service: the lease ends at its signed end anyway.
    }
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  }

  async #tick(retrying = false): Promise<void> {
    if (this.#stopped) return;
    let result = await this.#client.check();
    if (result.renewed) {
      // A renewed term: fetch it, and renew the lease under it at once.
      try {
        await this.#client.fetch();
        result = await this.#client.check();
      } catch {
        // The old term keeps its lease until its own grace end; fetch is tried on the next check.
      }
    }
    if (this.#stopped) return;
    this.#result = result;
    this.#options.onCheck?.(result);
    const interval = this.#jittered(leaseInterval(this.#client.licence));
    const answer = result.answer;
    if (result.noAnswer === null && answer?.fresh) {
      this.#atRisk = false;
      if (result.state === 'VALID') this.#hold(answer);
      else this.#lose('REFUSED', result);
      return this.#schedule(interval);
    }
    if (!retrying && result.noAnswer !== null) return this.#tick(true);
    const end = this.leaseEndsAt;
    if (end !== null && result.noAnswer !== null) {
      if (!this.#atRisk) this.#options.onAtRisk?.({ leaseEndsAt: end, noAnswer: result.noAnswer });
      this.#atRisk = true;
      // Tries again before the end, by halves, rather than a whole interval later.
      const left = end.getTime() - leaseNow(this.#result!.answer?.offsetMs ?? null, this.#clock());
      return this.#schedule(Math.min(interval, Math.max(1_000, left / 2)));
    }
    this.#schedule(interval);
  }

  /** A granted answer: the lease is held until its signed end, when it lapses unless renewed first. */
  #hold(answer: VerifiedAnswer) {
    this.#held = true;
    this.#heldUntil = new Date(answer.leaseEndsAt);
    clearTimeout(this.#lapseTimer);
    const left = Date.parse(answer.leaseEndsAt) - leaseNow(answer.offsetMs, this.#clock());
    this.#lapseTimer = setTimeout(() => this.#lose('LAPSED', null), Math.max(0, left));
    this.#lapseTimer.unref();
  }

  #lose(reason: 'LAPSED' | 'REFUSED', result: CheckResult | null) {
    clearTimeout(this.#lapseTimer);
    if (!this.#held) return;
    this.#held = false;
    this.#options.onLost?.({ reason, result });
  }

  #schedule(ms: number) {
    if (this.#stopped) return;
    this.#tickTimer = setTimeout(() => void this.#tick().catch(() => this.#schedule(this.#jittered(leaseInterval(this.#client.licence)))), ms);
    // Holding a lease never keeps the process alive by itself.
    this.#tickTimer.unref();
  }

  /** ±10%, so that a site's machines started together do not check together. */
  #jittered(ms: number): number {
    return Math.round(ms * (0.9 + 0.2 * (this.#options.random ?? Math.random)()));
  }
}
