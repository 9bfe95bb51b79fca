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
 * - `QUEUE_FULL`: recordUsage() found 1,000 events of this licence still waiting to be sent.
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
  | 'QUEUE_FULL';

/** The SDK's one error type. `check()` never throws it for the service's answers: they are data. */
export class LicensorError extends Error {
  /** With a 429: the seconds its Retry-After asked to wait. */
  retryAfterSeconds?: number;

  constructor(
    readonly code: LicensorErrorCode,
    message: string,
    /** The HTTP status, for `HTTP_STATUS`. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LicensorError';
  }
}
