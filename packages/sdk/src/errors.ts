/**
 * What went wrong, as a constant an application can switch on:
 * - `INVALID_KEY`: a public key could not be read, or none was given.
 * - `INVALID_OPTIONS`: a client option is missing or malformed.
 * - `NOT_CHECKABLE`: the licence is OFFLINE (or unreadable), so it has no check path.
 * - `TIMEOUT`, `NETWORK`: the service did not answer in time, or could not be reached.
 * - `HTTP_STATUS`: the service answered with something other than 200 (`status` says which).
 * - `BAD_RESPONSE`: a 200 whose body is not the documented JSON.
 * - `BAD_RECEIPT`: a check answer whose receipt does not verify for this licence, nonce and machine.
 * - `BAD_LICENCE`: a fetched licence does not verify with the product's key(s).
 * - `LID_MISMATCH`: a fetched licence verifies but is another licence than the one presented.
 * - `OLDER_TERM`: a fetched term is older (`iat`) than one this machine has already seen.
 * - `BAD_ACTIVATION`: an air-gapped activation response that is not for this installation,
 *   machine, pending request or product, is for an activation deactivated here, or does not verify;
 *   or a deactivation with no activation to end.
 * - `TRIALS_OFF`: startTrial() was refused: the product offers no trials now (DESIGN.md 18).
 * - `TRIAL_USED`: startTrial() was refused: a machine like this one already had a trial
 *   (`matched` names the equal fingerprint components).
 * - `QUEUE_FULL`: recordUsage() found 1,000 events of this licence still waiting to be sent.
 * - `BAD_MANIFEST`: checkForUpdate() was answered an update whose signed manifest does not verify
 *   with a key this application knows, or is not this product's, version, channel and files, or
 *   not above the running version (DESIGN.md 20).
 * - `DIGEST_MISMATCH`: download() got bytes whose size or SHA-256 are not the manifest's: the
 *   file was deleted.
 */
export type LicensorErrorCode =
  | 'INVALID_KEY'
  | 'INVALID_OPTIONS'
  | 'NOT_CHECKABLE'
  | 'TIMEOUT'
  | 'NETWORK'
  | 'HTTP_STATUS'
  | 'BAD_RESPONSE'
  | 'BAD_RECEIPT'
  | 'BAD_LICENCE'
  | 'LID_MISMATCH'
  | 'OLDER_TERM'
  | 'BAD_ACTIVATION'
  | 'TRIALS_OFF'
  | 'TRIAL_USED'
  | 'QUEUE_FULL'
  | 'BAD_MANIFEST'
  | 'DIGEST_MISMATCH';

/** What some refusals add: `matched` for TRIAL_USED, `retryAfterSeconds` for an HTTP 429, `reason` for an answer that named one. */
export interface LicensorErrorDetails {
  matched?: string[];
  retryAfterSeconds?: number;
  reason?: string;
}

/** The SDK's one error type. `check()` never throws it for the service's answers: they are data. */
export class LicensorError extends Error {
  constructor(
    readonly code: LicensorErrorCode,
    message: string,
    /** The HTTP status, for `HTTP_STATUS`. */
    readonly status?: number,
    details: LicensorErrorDetails = {},
  ) {
    super(message);
    this.name = 'LicensorError';
    if (details.matched !== undefined) this.matched = details.matched;
    if (details.retryAfterSeconds !== undefined) this.retryAfterSeconds = details.retryAfterSeconds;
    if (details.reason !== undefined) this.reason = details.reason;
  }

  /** TRIAL_USED: the components of this machine's fingerprint equal to the earlier trial's (machine, host, mac, cpu, disk order). */
  readonly matched?: string[];
  /** An HTTP 429 (a trial limit, a usage rate): the seconds its Retry-After asked to wait. */
  readonly retryAfterSeconds?: number;
  /** `HTTP_STATUS`: the answer's `reason` when it had one (a download's `UPDATES_EXPIRED`, `NO_SEAT`, …). */
  readonly reason?: string;
}
