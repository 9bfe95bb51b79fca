import { Type } from 'typebox';
import { Id, Nullable, NullableTimestamp, Slug, Timestamp } from '../http/schemas.js';

const LicenceTypeSchema = Type.Enum(['OFFLINE', 'ONLINE', 'HYBRID']);
const ActivationSchema = Type.Enum(['ONLINE', 'OFFLINE']);
const DateText = Type.String({ maxLength: 10, description: 'YYYY-MM-DD in the organisation timezone.' });
const Fingerprint = Type.String({ maxLength: 512, description: '`SVC1.<hashed parts>.<checksum>`' });
const Params = Type.Record(Type.String(), Type.Unknown(), { description: "Values for the product's declared parameters." });

export const LidParams = Type.Object({ slug: Slug, lid: Type.String({ maxLength: 64 }) });
export const VersionParams = Type.Object({ slug: Slug, lid: Type.String({ maxLength: 64 }), versionNo: Type.Integer({ minimum: 1, maximum: 1_000_000 }) });

export const IssueBody = Type.Object(
  {
    productId: Id(),
    customerId: Type.Optional(Nullable(Id())),
    customer: Type.Optional(
      Type.Object(
        { name: Type.String({ minLength: 1, maxLength: 200 }), email: Type.String({ format: 'email', maxLength: 254 }) },
        { additionalProperties: false },
      ),
    ),
    licensee: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Legacy: pair with licenseeEmail.' })),
    licenseeEmail: Type.Optional(Type.String({ format: 'email', maxLength: 254 })),
    issueDate: Type.Optional(DateText),
    startsOn: Type.Optional(DateText),
    validityMonths: Type.Optional(Type.Integer({ minimum: 0, maximum: 1200, description: '0 = perpetual.' })),
    graceDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 3650 })),
    licenceType: Type.Optional(LicenceTypeSchema),
    activation: Type.Optional(ActivationSchema),
    fingerprint: Type.Optional(Fingerprint),
    fingerprints: Type.Optional(Type.Array(Fingerprint, { maxItems: 100 })),
    maxMachines: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    params: Type.Optional(Params),
    notes: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
  },
  { additionalProperties: false },
);

export const RenewBody = Type.Object(
  {
    issueDate: Type.Optional(DateText),
    startsOn: Type.Optional(DateText),
    validityMonths: Type.Optional(Type.Integer({ minimum: 0, maximum: 1200 })),
    graceDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 3650 })),
    params: Type.Optional(Params),
  },
  { additionalProperties: false },
);

export const RevokeBody = Type.Object({ reason: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))) }, { additionalProperties: false });
export const NotesBody = Type.Object(
  { notes: Nullable(Type.String({ maxLength: 10_000, description: 'Replaces the notes; null clears them. Never signed.' })) },
  { additionalProperties: false },
);
export const ReleaseBody = Type.Object({ machineId: Type.Optional(Id()) }, { additionalProperties: false });
export const VerifyBody = Type.Object({ license: Type.String({ maxLength: 100_000 }) }, { additionalProperties: false });

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
  seatModel: Type.Enum(['NODE_LOCKED', 'FLOATING'], { description: "The product's seat model when the licence was issued; the licence keeps it (DESIGN.md 13)." }),
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
};

export const LicenceListItem = Type.Object(listFields, { description: 'A licence in list form: every field but claims and licenseString.' });

export const Licence = Type.Object({
  ...listFields,
  claims: Type.Record(Type.String(), Type.Unknown(), { description: 'The signed payload, decoded.' }),
  licenseString: Type.String({ description: '`payloadB64url.signatureB64url`' }),
});

const versionFields = {
  versionNo: Type.Integer(),
  issuedAt: Timestamp,
  startsAt: NullableTimestamp,
  expiresAt: NullableTimestamp,
  graceDays: Type.Integer(),
  issuedBy: Type.String(),
  revokedReason: Nullable(Type.String()),
};
export const LicenceVersionListItem = Type.Object(versionFields);
export const LicenceVersion = Type.Object({
  ...versionFields,
  claims: Type.Record(Type.String(), Type.Unknown()),
  licenseString: Type.String(),
});

export const MachineBinding = Type.Object({
  id: Type.Integer(),
  parts: Type.Record(Type.String(), Type.String(), { description: 'Truncated hashes, never raw values.' }),
  boundAt: Timestamp,
  releasedAt: NullableTimestamp,
  releasedBy: Nullable(Type.String()),
  live: Type.Boolean(),
  atIssue: Type.Boolean(),
  label: Nullable(Type.String({ description: 'The name the application sent with its checks (`machineLabel`), if any.' })),
  lastSeenAt: Nullable(Type.String({ format: 'date-time', description: 'Its last valid check (stamped at most once a minute).' })),
  airGapped: Type.Boolean({ description: 'True while an air-gapped activation (DESIGN.md 14) holds this seat.' }),
  activationId: Nullable(Type.String({ description: 'That activation’s id (the `aid` of its response).' })),
  until: NullableTimestamp,
  leaseEndsAt: Nullable(Type.String({ format: 'date-time', description: 'FLOATING: when this lease ends (or ended) unless renewed. A node-locked seat: an air-gapped activation\'s seat ends by itself then (as `until`), otherwise null.' })),
  borrowedUntil: Nullable(
    Type.String({ format: 'date-time', description: 'FLOATING: the end of a borrow. Until then the application works offline, even after an operator frees the seat.' }),
  ),
});

export const LeasePeak = Type.Object({
  date: Type.String({ description: 'A UTC day, YYYY-MM-DD.' }),
  peak: Type.Integer({ description: 'The most live leases seen at once that day.' }),
});

export const VerifyResult = Type.Object({
  valid: Type.Boolean(),
  whitespaceRemoved: Type.Boolean({
    description: 'True when spaces, tabs or line breaks (an email client wrapping the string) were removed before judging it: a signed string never contains any.',
  }),
  reason: Nullable(Type.String({ description: 'MALFORMED, UNKNOWN_PRODUCT, BAD_SIGNATURE, NOT_YET_VALID or EXPIRED.' })),
  claims: Nullable(Type.Record(Type.String(), Type.Unknown())),
  product: Nullable(Type.Object({ id: Type.Integer(), productKey: Type.String(), name: Type.String() })),
  signature: Type.String({ description: 'VALID, INVALID or UNCHECKED.' }),
  signatureAlgorithm: Nullable(Type.String()),
  expiry: Nullable(
    Type.Object({ expiresAt: NullableTimestamp, graceEndsAt: NullableTimestamp, status: Type.String() }),
  ),
  ledger: Type.Object({
    known: Type.Boolean(),
    lid: Type.Optional(Type.String()),
    licensee: Type.Optional(Type.String()),
    customerId: Type.Optional(Nullable(Type.Integer())),
    status: Type.Optional(Type.String()),
    revoked: Type.Optional(Type.Boolean()),
    archived: Type.Optional(Type.Boolean()),
    superseded: Type.Optional(Type.Boolean({ description: 'Whether a renewal replaced this term.' })),
    currentExpiresAt: Type.Optional(NullableTimestamp),
  }),
});
