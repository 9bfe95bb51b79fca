/**
 * Raised for any wire input that is not exactly in the agreed form. The service turns it
 * into a 400 (or a MALFORMED verdict); the SDK treats the input as unusable.
 */
export class MalformedError extends Error {
  readonly code = 'MALFORMED' as const;

  constructor(message: string) {
    super(message);
    this.name = 'MalformedError';
  }
}
