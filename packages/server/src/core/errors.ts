import { fieldName } from './fields.js';

/** The one error type services throw: its status and message become `{ "error": message }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Fields the answer carries beside `error` (a refusal's machine-readable `reason`). */
    readonly extra: Record<string, string | string[]> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
/**
 * A 400 about one body field (issue 45): "Max offline seconds (maxOfflineSeconds): must be at
 * least …"; `label` where the field has a name of its own, as a parameter has its label.
 */
export const invalid = (field: string, problem: string, label?: string) => badRequest(`${fieldName(field, label)}: ${problem}`);
export const unauthorized = (message = 'authentication required') => new ApiError(401, message);
export const forbidden = (message: string) => new ApiError(403, message);
/** A 403 `{ error, reason }`: a refusal an application tells apart by its reason. */
export const refused = (message: string, reason: string) => new ApiError(403, message, {}, { reason });
export const notFound = (message: string) => new ApiError(404, message);
export const conflict = (message: string) => new ApiError(409, message);
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new ApiError(429, message, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
