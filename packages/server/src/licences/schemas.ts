import { Type } from 'typebox';
import { Id, Nullable, NullableTimestamp, Slug, Timestamp } from '../core/schemas.js';
import { ActivationSchema, LicenceTypeSchema } from '../listings/schemas.js';

const DateText = Type.String({ maxLength: 10, description: 'YYYY-MM-DD in the organisation timezone.' });
const Fingerprint = Type.String({ maxLength: 512, description: '`SVC1.<hashed parts>.<checksum>`' });
export const Params = Type.Record(Type.String(), Type.Unknown(), { description: "Values for the product's declared parameters." });

export const MeterOverrides = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.Object(
    {
      limit: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000, description: 'null = unlimited.' }))),
      overage: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000, description: 'null = no ceiling.' }))),
    },
    { additionalProperties: false },
  ),
  {
    maxProperties: 20,
    description:
      "Per-licence limits for the product's meters (DESIGN.md 19), by meter key; absent ones take the product's (at renewal, the licence's own). Not for OFFLINE licences.",
  },
);

export const UpdatesMonths = Nullable(
  Type.Integer({
    minimum: 0,
    maximum: 1200,
    description:
      "DESIGN.md 20: months of updates (the `upd` claim) from the term's date; null = no window: updates until the grace end (perpetual: every release). Left out: at issue the product's `updatesMonths`, at renewal the licence's own.",
  }),
);

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
    meters: Type.Optional(MeterOverrides),
    updatesMonths: Type.Optional(UpdatesMonths),
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
    meters: Type.Optional(MeterOverrides),
    updatesMonths: Type.Optional(UpdatesMonths),
  },
  { additionalProperties: false },
);

/** DESIGN.md 18: `POST /licenses`' body without `productId` (the trial's), plus `keepMachine`. */
export const ConvertBody = Type.Object(
  {
    ...Type.Omit(IssueBody, ['productId']).properties,
    keepMachine: Type.Optional(
      Type.Boolean({
        description:
          "Default false. True: the paid licence takes the trial's machine (ONLINE: a seat as a first check would; OFFLINE or offline-activated HYBRID: its fingerprint signed in, first).",
      }),
    ),
  },
  { additionalProperties: false },
);

/** DESIGN.md 18: exactly one of `days` and `expiresAt`. */
export const ExtendTrialBody = Type.Object(
  {
    days: Type.Optional(Type.Integer({ minimum: 1, maximum: 365, description: 'Days added to the later of now and the current end.' })),
    expiresAt: Type.Optional(
      Type.String({ format: 'date-time', maxLength: 64, description: 'The new end: zero milliseconds, after now and the current end.' }),
    ),
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

export const VerifyResult = Type.Object({
  valid: Type.Boolean(),
  whitespaceRemoved: Type.Boolean({
    description:
      'True when spaces, tabs or line breaks (an email client wrapping the string) were removed before judging it: a signed string never contains any.',
  }),
  reason: Nullable(Type.String({ description: 'MALFORMED, UNKNOWN_PRODUCT, BAD_SIGNATURE, NOT_YET_VALID or EXPIRED.' })),
  claims: Nullable(Type.Record(Type.String(), Type.Unknown())),
  product: Nullable(Type.Object({ id: Type.Integer(), productKey: Type.String(), name: Type.String() })),
  signature: Type.String({ description: 'VALID, INVALID or UNCHECKED.' }),
  signatureAlgorithm: Nullable(Type.String()),
  expiry: Nullable(Type.Object({ expiresAt: NullableTimestamp, graceEndsAt: NullableTimestamp, status: Type.String() })),
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
