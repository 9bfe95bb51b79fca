import { Type } from 'typebox';
import { Id, Nullable, Slug, Timestamp } from '../core/schemas.js';
import { Email } from '../users/schemas.js';

export const CheckParams = Type.Object({ slug: Slug, checkId: Type.String({ maxLength: 64 }) });
const licenceText = (description: string) => Type.String({ minLength: 1, maxLength: 100_000, description });
const Fingerprint = Type.String({ maxLength: 512, description: "The machine's fingerprint, `SVC1.<hashed parts>.<checksum>`." });
// Fields beyond these are ignored, so clients may send more without breaking older services.
export const CheckBody = Type.Object({
  license: licenceText('The complete signed licence string.'),
  fingerprint: Fingerprint,
  nonce: Type.String({ maxLength: 128, pattern: '^[A-Za-z0-9_-]{16,128}$', description: 'Fresh per request: 16 to 128 URL-safe characters.' }),
  machineLabel: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^\\P{C}+$',
      description: 'Optional: a name for this machine that its user agreed to share (1 to 64 printable characters); shown to the operator beside the seat.',
    }),
  ),
});
export const FetchBody = Type.Object({
  license: licenceText('A licence string of this licence: the current term or a superseded one.'),
  fingerprint: Fingerprint,
});

export const CheckAnswer = Type.Object({
  status: Type.Optional(
    Type.Enum(['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED'], {
      description: 'Signed. Omitted for UNKNOWN_LICENCE; for SUPERSEDED, the presented term’s own calendar status.',
    }),
  ),
  valid: Type.Boolean({
    description: 'Not signed: true exactly when the signed status is ACTIVE or GRACE and boundAt is present (except SUPERSEDED, always false).',
  }),
  lid: Type.String(),
  boundAt: Type.Optional(Type.String({ format: 'date-time', description: "Signed. When this machine's seat was bound; omitted when it holds none." })),
  checkedAt: Type.String({ format: 'date-time', description: 'Signed; equals serverTime.' }),
  serverTime: Timestamp,
  nonce: Type.String({ description: 'The nonce sent (signed).' }),
  leaseEndsAt: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        "Signed (SVCR2). A floating licence: when this machine's lease ends unless renewed; omitted when it holds none or the status is not ACTIVE or GRACE.",
    }),
  ),
  receipt: Type.String({
    description:
      'Base64url signature, with the key that signed the presented licence, over `SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest` (␟ = 0x1F; absent fields empty) for a presented term of `v` 3 or 4, or over `SVCR2␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest␟leaseEndsAt` for `v` 5 (a floating licence).',
  }),
  expiresAt: Type.Optional(Timestamp),
  graceEndsAt: Type.Optional(Timestamp),
  revokedAt: Type.Optional(Timestamp),
  revokedReason: Type.Optional(Type.String()),
  renewed: Type.Optional(Type.Boolean({ description: 'The presented term was renewed: fetch the current one.' })),
  checkEverySeconds: Type.Optional(Type.Integer()),
  checkMaxSeconds: Type.Optional(Type.Integer()),
  retryAfterSeconds: Type.Optional(Type.Integer({ description: 'SEATS_FULL on a floating licence: whole seconds until the earliest lease ends.' })),
  converted: Type.Optional(Type.Boolean({ description: 'Not signed (DESIGN.md 18): this trial was converted to a paid licence; ask the user for it.' })),
  reason: Type.Optional(
    Type.Enum(['UNKNOWN_LICENCE', 'REVOKED', 'SUPERSEDED', 'NOT_YET_VALID', 'EXPIRED', 'FINGERPRINT_MISMATCH', 'SEATS_FULL'], {
      description: 'Why valid is false: the first that applies, in this order.',
    }),
  ),
});
export const ReleaseBody = Type.Object({ license: CheckBody.properties.license, fingerprint: Fingerprint, nonce: CheckBody.properties.nonce });
export const ReleaseAnswer = Type.Object({
  lid: Type.String(),
  released: Type.Boolean(),
  releasedAt: Type.Optional(Timestamp),
  nonce: Type.String({ description: 'The nonce sent.' }),
  reason: Type.Optional(
    Type.Enum(['NO_SEAT', 'AT_ISSUE', 'UNKNOWN_LICENCE', 'BORROWED'], {
      description:
        'Why nothing was released: this machine holds no seat (an exact fingerprint match is needed), its seat is in the signature, the licence is unknown, or (floating) its lease is borrowed until a later time, which only an operator ends sooner. These never count towards the limit.',
    }),
  ),
});
export const BorrowBody = Type.Object({
  ...ReleaseBody.properties,
  until: Type.String({ maxLength: 64, description: 'ISO 8601 time: keep the lease until then (at most maxBorrowSeconds ahead).' }),
});
const USAGE_RESULTS = ['ACCEPTED', 'LIMIT_REACHED', 'UNKNOWN_METER', 'NOT_LICENSED', 'TOO_OLD', 'EVENT_LIMIT', 'ID_REUSED'] as const;
export const UsageEventInput = Type.Object(
  {
    id: Type.String({
      maxLength: 128,
      pattern: '^[A-Za-z0-9_-]{1,128}$',
      description: "The client's id for the event, unique in the request: a retry with it never counts twice.",
    }),
    meter: Type.String({ maxLength: 64, pattern: '^[A-Za-z][A-Za-z0-9_.-]{0,63}$', description: 'A meter key.' }),
    amount: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
    at: Type.Optional(
      Type.String({
        maxLength: 24,
        pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{3})?Z$',
        description: 'When it happened, by the client’s clock (UTC).',
      }),
    ),
  },
  { additionalProperties: false },
);
/**
 * What the usage route's work validates once the licence verified and the per-licence limit
 * passed (DESIGN.md 19's order): its route schema takes any `events` so those refusals come first.
 */
export const UsageBodyStrict = Type.Object(
  {
    license: CheckBody.properties.license,
    fingerprint: Fingerprint,
    nonce: CheckBody.properties.nonce,
    events: Type.Array(UsageEventInput, { maxItems: 100, description: 'Up to 100 events, applied in order; [] reads the balances.' }),
  },
  { additionalProperties: false },
);
const UsageBody = Type.Object({
  license: CheckBody.properties.license,
  fingerprint: Fingerprint,
  nonce: CheckBody.properties.nonce,
  events: Type.Optional(
    Type.Unknown({
      description:
        'Up to 100 objects of exactly `{id, meter, amount, at?}`: `id` 1 to 128 of `[A-Za-z0-9_-]`, unique in the request; `meter` a meter key; `amount` an integer 1 to 10^9; `at` `YYYY-MM-DDTHH:MM:SS[.mmm]Z`. [] reads the balances. Checked after the licence (400 with nothing applied).',
    }),
  ),
});
export const UsageAnswer = Type.Object({
  lid: Type.String(),
  valid: Type.Boolean({ description: 'Not signed: true exactly when the signed status is ACTIVE or GRACE and boundAt is present.' }),
  reason: Type.Optional(Type.Enum(['UNKNOWN_LICENCE', 'REVOKED', 'NOT_YET_VALID', 'EXPIRED', 'NO_SEAT'])),
  renewed: Type.Optional(Type.Boolean({ description: 'The presented term was renewed: it is judged by the licence’s current meters.' })),
  status: Type.Optional(Type.Enum(['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED'], { description: 'Signed, as a check’s.' })),
  nonce: Type.String(),
  checkedAt: Type.String({ format: 'date-time' }),
  serverTime: Timestamp,
  boundAt: Type.Optional(
    Type.String({ format: 'date-time', description: "Signed: when this machine's seat (or lease) was bound; omitted when it holds none." }),
  ),
  events: Type.Array(
    Type.Object({
      id: Type.String(),
      result: Type.Enum([...USAGE_RESULTS]),
      duplicate: Type.Boolean({ description: 'The id was recorded before: its first result (or ID_REUSED), nothing counted now.' }),
    }),
  ),
  meters: Type.Array(
    Type.Object({
      key: Type.String(),
      label: Type.String(),
      period: Type.Enum(['NONE', 'DAY', 'MONTH', 'YEAR']),
      used: Type.Integer(),
      limit: Type.Union([Type.Integer(), Type.Null()]),
      overage: Type.Union([Type.Integer(), Type.Null()]),
      remaining: Type.Union([Type.Integer(), Type.Null()], { description: '`limit + overage − used`, at least 0; null without a ceiling.' }),
      periodStart: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      resetsAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    }),
  ),
  receipt: Type.String({
    description:
      'Base64url signature, with the key that signed the presented licence, over `SVCU1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest␟E␟(id␟result)…␟M␟(key␟used␟limit␟overage␟remaining␟resetsAt)…` (␟ = 0x1F; E and M the counts; null or absent fields empty).',
  }),
});

export const FetchAnswer = Type.Object({ license: Type.String({ description: 'The current signed licence string.' }) });

/** DESIGN.md 18: a trial's start. Unlike a check's, another field is a 400. */
export const TrialBody = Type.Object(
  {
    fingerprint: Fingerprint,
    nonce: CheckBody.properties.nonce,
    devicePublicKey: Type.String({
      maxLength: 43,
      pattern: '^[A-Za-z0-9_-]{43}$',
      description: "The installation's device key (DESIGN.md 14), base64url of exactly 32 bytes. Unsigned: it counts installations and proves nothing.",
    }),
    email: Type.Optional({
      ...Email,
      description: "Optional, with the user's consent: kept on the trial until its personal data is erased. Ignored on a later request.",
    }),
    machineLabel: CheckBody.properties.machineLabel,
  },
  { additionalProperties: false },
);
export const TrialAnswer = Type.Object({
  license: Type.String({ description: "The trial's current signed term: `trl` true, this machine's fingerprint in `fp`." }),
  ...CheckAnswer.properties,
});

/** DESIGN.md 20: a licence presented to download. Unlike a check's, another field (`nonce` included) is a 400. */
const downloader = {
  license: licenceText('A licence string of this licence: the current term or a superseded one; OFFLINE licences too.'),
  fingerprint: Type.Optional({
    ...Fingerprint,
    description: "This machine's fingerprint: required for ONLINE and HYBRID licences, whose machine must hold a live seat.",
  }),
};
export const DownloadBody = Type.Object(
  { ...downloader, artifactId: Id({ description: 'The artifact to download (from latest.json or the release).' }) },
  { additionalProperties: false },
);
export const FeedTokenBody = Type.Object(downloader, { additionalProperties: false });

const ManifestSignature = Type.Object({ keyFingerprint: Type.String(), signature: Type.String() });
export const GrantAnswer = Type.Object({
  url: Type.String({
    description: '`{public URL}/o/{slug}/api/public/downloads/{SVCG1 grant}/{filename}`: GET or HEAD until `expiresAt`, no credential header.',
  }),
  expiresAt: Timestamp,
  artifact: Type.Object({
    id: Type.Integer(),
    filename: Type.String(),
    platform: Type.String(),
    arch: Type.String(),
    size: Type.Integer(),
    sha256: Type.String(),
    sha512: Type.String(),
    contentType: Type.String(),
  }),
  release: Type.Object({
    version: Type.String(),
    channel: Type.String(),
    publishedAt: Timestamp,
    notes: Type.String(),
    manifest: Nullable(Type.String({ description: 'The SVCM1 text the signatures cover (docs/protocol.md).' })),
    manifestSignatures: Type.Array(ManifestSignature),
    manifestSignature: Nullable(Type.String()),
    manifestKeyFingerprint: Nullable(Type.String()),
  }),
});
export const FeedTokenAnswer = Type.Object({
  token: Type.String({ description: '`SVCF1.<B64U(JSON)>.<MAC>` (docs/protocol.md): a secret; it dies with the licence, the seat or a reset.' }),
  urls: Type.Object({
    electron: Type.String({ description: "electron-updater's generic provider `url`: `…/electron/`." }),
    tauri: Type.String({ description: 'Tauri v2 endpoint, braces literal: `…/tauri/{{target}}/{{arch}}/{{current_version}}`.' }),
    sparkle: Type.String({ description: 'Sparkle 2 feed URL: `…/sparkle/appcast.xml`.' }),
    json: Type.String({ description: 'The SDKs’ `…/latest.json`.' }),
  }),
});

/**
 * The check API's routes, one row each: the path's last segment, the body, the answer and what the
 * document says. Its Fastify routes (routes.ts) and its lean handler (lean.ts) both read them.
 */
export const CHECK_ROUTES = {
  check: {
    body: CheckBody,
    answer: CheckAnswer,
    summary: 'Check a licence',
    description:
      'Every verdict about a correctly signed licence is a 200 whose receipt carries it; refusals come in the order 404 (organisation), 429 (address), 401, 429 (product), 403 (inactive product), 415, 400.',
    errors: [415, 429, 503],
  },
  fetch: {
    body: FetchBody,
    answer: FetchAnswer,
    summary: 'Fetch the current licence string',
    description: 'For a machine bound to the licence (fetch never binds: check first); 404 unless the product enables licence fetch.',
    errors: [415, 429],
  },
  release: {
    body: ReleaseBody,
    answer: ReleaseAnswer,
    summary: 'Release this machine’s own seat',
    description: `DESIGN.md 12: frees the live seat whose recorded fingerprint equals this one exactly, so the licence can be used on another machine. Refusals come in the order of a check; past the product's \`selfReleaseLimit\` in 30 days, 403 "self-service release limit reached". On a floating licence it ends this machine's lease at once and never counts towards the limit, except a borrowed lease (\`BORROWED\`).`,
    errors: [415, 429],
  },
  borrow: {
    body: BorrowBody,
    answer: CheckAnswer,
    summary: 'Borrow this machine’s lease',
    description: `DESIGN.md 13: a machine holding a live lease of a floating licence keeps it until \`until\` (at most the licence's \`brw\` seconds ahead: 400 beyond; 403 "borrowing is off" when 0), to work offline. 403 "no live lease on this machine: check first" without one; 403 "all borrowable seats are borrowed" past the product's \`maxBorrowedSeats\`. Answers like a check, with \`leaseEndsAt\` the borrowed end.`,
    errors: [415, 429],
  },
  usage: {
    body: UsageBody,
    answer: UsageAnswer,
    summary: 'Report usage events and read the balances',
    description: `DESIGN.md 19: the check's refusals in its order, then 429 past LICENSOR_USAGE_RATE_LICENCE requests a minute for the licence, then 400 for a body other than {license, fingerprint, nonce, events}; a 400 or 429 applies nothing. Each event's result is signed in the receipt; an id sent again answers its first result. Never binds a machine or takes a lease.`,
    errors: [415, 429],
  },
} as const;

export type CheckRoute = keyof typeof CHECK_ROUTES;
