import { Type } from 'typebox';
import { Id, MAX_ID, Nullable, NullableTimestamp, Timestamp } from '../core/schemas.js';
import { SORTS, WINDOWS } from './filter.js';

export const LicenceTypeSchema = Type.Enum(['OFFLINE', 'ONLINE', 'HYBRID']);
export const ActivationSchema = Type.Enum(['ONLINE', 'OFFLINE']);

/** A licence's meter (DESIGN.md 19), copied from its product at issue and renewal. */
export const LicenceMeterSchema = Type.Object({
  key: Type.String(),
  label: Type.String(),
  period: Type.Enum(['NONE', 'DAY', 'MONTH', 'YEAR']),
  limit: Nullable(Type.Integer({ description: 'Per period; null = unlimited.' })),
  overage: Nullable(Type.Integer({ description: 'Accepted past the limit; null = no ceiling.' })),
});

const listFields = {
  lid: Type.String({ format: 'uuid' }),
  customerId: Nullable(Type.Integer()),
  licensee: Type.String(),
  licenseeEmail: Nullable(Type.String()),
  productId: Type.Integer(),
  productName: Nullable(Type.String()),
  productKey: Nullable(Type.String()),
  issuedAt: Timestamp,
  startsAt: NullableTimestamp,
  expiresAt: NullableTimestamp,
  graceDays: Type.Integer(),
  licenceType: LicenceTypeSchema,
  activation: Nullable(ActivationSchema),
  seatModel: Type.Enum(['NODE_LOCKED', 'FLOATING'], {
    description: "The product's seat model when the licence was issued; the licence keeps it (DESIGN.md 13).",
  }),
  activated: Type.Boolean(),
  boundAt: NullableTimestamp,
  rebindCount: Type.Integer(),
  maxMachines: Type.Integer(),
  seatsUsed: Type.Integer({ description: 'Live seats: for a FLOATING licence, live leases.' }),
  status: Type.Enum(['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED']),
  checkHealth: Type.Enum(['NOT_APPLICABLE', 'NEVER', 'OK', 'DUE', 'OVERDUE']),
  checkMaxSeconds: Nullable(Type.Integer()),
  checkEverySeconds: Nullable(Type.Integer()),
  revoked: Type.Boolean(),
  revokedAt: NullableTimestamp,
  revokedReason: Nullable(Type.String()),
  archived: Type.Boolean(),
  archivedAt: NullableTimestamp,
  issuedBy: Type.String(),
  lastCheckedAt: NullableTimestamp,
  renewedAt: NullableTimestamp,
  notes: Nullable(Type.String()),
  meters: Type.Array(LicenceMeterSchema, { description: 'Usage meters (DESIGN.md 19), signed as `mtr`; [] for none.' }),
  trial: Type.Boolean({ description: "DESIGN.md 18: a trial the service started on a machine's request." }),
  trialStartedAt: Nullable(Type.String({ format: 'date-time', description: "A trial's first term's iat." })),
  trialConvertedTo: Nullable(Type.String({ description: 'The paid licence a trial was converted to.' })),
  trialConvertedAt: NullableTimestamp,
  trialLedgerResetAt: NullableTimestamp,
  trialInstallations: Nullable(Type.Integer({ description: 'Distinct device keys a trial was answered to (at most 100).' })),
  convertedFromTrial: Nullable(Type.String({ description: 'The trial this paid licence was converted from.' })),
  updatesMonths: Nullable(Type.Integer({ description: "DESIGN.md 20: the licence's maintenance window in months, kept through renewals; null = none." })),
  updatesUntil: Nullable(
    Type.String({
      format: 'date-time',
      description:
        "DESIGN.md 20: releases published until then are covered: the current term's `upd`, else its grace end (a trial's end), else null (every release).",
    }),
  ),
  feedGeneration: Type.Integer({
    minimum: 1,
    description: 'DESIGN.md 20: raised by reset-download-links; feed URLs made under an earlier generation answer 403.',
  }),
};

export const LicenceListItem = Type.Object(listFields, { description: 'A licence in list form: every field but claims and licenseString.' });

export const Licence = Type.Object({
  ...listFields,
  claims: Type.Record(Type.String(), Type.Unknown(), { description: 'The signed payload, decoded.' }),
  licenseString: Type.String({ description: '`payloadB64url.signatureB64url`' }),
});

const filterFields = {
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of licensee, email, lid, product name or notes.' })),
  status: Type.Optional(
    Type.Array(Type.String({ maxLength: 100 }), {
      maxItems: 5,
      description: 'One status, a comma list, or the parameter repeated: PENDING, ACTIVE, GRACE, EXPIRED, REVOKED.',
    }),
  ),
  window: Type.Optional(Type.Enum([...WINDOWS], { description: 'Default `all` (archived licences excluded).' })),
  productId: Type.Optional(Id({ description: "Only this product's licences." })),
  customerId: Type.Optional(Id({ description: "Only this customer's licences." })),
  trial: Type.Optional(Type.Boolean({ description: 'true: trials only (DESIGN.md 18); false: without trials.' })),
  sort: Type.Optional(Type.Enum([...SORTS], { description: 'Default `issuedAt`. Nulls last; ties by lid.' })),
  asc: Type.Optional(Type.Boolean({ description: 'Default false.' })),
};
export const ListingQuery = Type.Object(
  {
    ...filterFields,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_ID, description: 'Default 0; not with `cursor`.' })),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: "A page's `nextCursor`: the page after it, with the same filters and sort." }),
    ),
  },
  { additionalProperties: false },
);

export const LicencePage = Type.Object({
  items: Type.Array(LicenceListItem),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Nullable(Type.Integer({ description: 'null when the page was asked for by `cursor`.' })),
  nextCursor: Nullable(Type.String({ description: 'Opaque: asks for the next page; null on the last page.' })),
});
