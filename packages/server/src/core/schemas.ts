import { Type, type TSchema } from 'typebox';

export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    reason: Type.Optional(Type.String({ description: 'Where a route names one: why it refused, for a program to tell apart.' })),
    matched: Type.Optional(
      Type.Array(Type.String(), { description: 'TRIAL_USED (DESIGN.md 18): the components this machine shares with the trial it matched.' }),
    ),
  },
  { $id: 'Error', description: 'Every failure has this shape.' },
);

const ERROR_MEANINGS: Record<number, string> = {
  400: 'The request is wrong: the message names the field in words and as the API spells it.',
  401: 'No credential, or one that no longer resolves. Replace the credential.',
  403: 'The credential is right; the action is not permitted.',
  404: 'No such organisation or record.',
  409: 'Conflicts with the current state.',
  413: 'Body too large.',
  415: 'Body is not JSON.',
  429: 'Too many requests; see Retry-After.',
  502: 'A service this one relies on (an identity provider) could not be reached.',
  503: 'The service cannot do this now: the message says why.',
};

/** A route's response schemas: its success answer plus the errors it may give. */
export function responses(success: Record<number, TSchema>, errors: number[] = []) {
  const out: Record<number, TSchema> = { ...success };
  for (const code of [400, 401, 403, 404, ...errors]) {
    out[code] = Type.Ref('Error', { description: ERROR_MEANINGS[code] ?? 'Error.' }) as unknown as TSchema;
  }
  return out;
}

/** The largest id the service can represent exactly (JSON numbers are doubles). */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/** A record id: a positive integer the service can represent. In a path, one out of range is a 404. */
export const Id = (options: { description?: string } = {}) => Type.Integer({ minimum: 1, maximum: MAX_ID, ...options });

/** The organisation's slug, routed by the server variable and left out of the document. */
export const Slug = Type.String({ maxLength: 64 });

/** Path parameters of a record addressed by its 64-bit integer id. */
export const IdParams = Type.Object({ slug: Slug, id: Id() });

export const NoContent = Type.Null({ description: 'No content.' });

export const Timestamp = Type.String({ format: 'date-time' });
export const NullableTimestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** JSON times: ISO 8601 UTC with milliseconds (DESIGN.md 2). */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export const Paged = <T extends TSchema>(item: T) =>
  Type.Object({ items: Type.Array(item), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() });

export const PageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_ID, default: 0 })),
  },
  { additionalProperties: false },
);

/** Body fields a record shows but an edit cannot set: accepted and ignored (read, change, send back). */
export function outputOnly<K extends string>(names: readonly K[]) {
  const field = Type.Optional(Type.Unknown({ description: 'Output-only: accepted and ignored.' }));
  return Object.fromEntries(names.map((name) => [name, field])) as Record<K, typeof field>;
}

/** The input without the output-only fields a read record carries. */
export function withoutOutputOnly<T extends object>(input: T, names: readonly string[]): T {
  const kept = { ...input } as Record<string, unknown>;
  for (const name of names) delete kept[name];
  return kept as T;
}
