import { Type, type Static } from 'typebox';
import { ALGORITHMS } from '@licensor/protocol';
import { Nullable, NullableTimestamp, outputOnly, Timestamp } from '../core/schemas.js';

export const LICENCE_TYPES = ['OFFLINE', 'ONLINE', 'HYBRID'] as const;
export const CERTIFICATE_TYPES = ['SELF_SIGNED', 'NONE', 'IMPORTED'] as const;
export const KEY_ORIGINS = ['managed', 'imported', 'pkcs11'] as const;
export const PARAM_TYPES = ['STRING', 'INTEGER', 'BOOLEAN', 'DATE', 'STRING_LIST', 'ENUM'] as const;
export const SEAT_MODELS = ['NODE_LOCKED', 'FLOATING'] as const;

export type LicenceType = (typeof LICENCE_TYPES)[number];
export type CertificateType = (typeof CERTIFICATE_TYPES)[number];
export type KeyOrigin = (typeof KEY_ORIGINS)[number];
export type SeatModel = (typeof SEAT_MODELS)[number];
export const SeatModelSchema = Type.Enum([...SEAT_MODELS], {
  description:
    'NODE_LOCKED: a seat is a machine, bound until released. FLOATING: a seat is a lease that lapses when the application stops checking in (DESIGN.md 13).',
});

const LicenceTypeSchema = Type.Enum([...LICENCE_TYPES]);
const DAY = 86_400;
const TEN_YEARS = 3650 * DAY;

export const ProductParam = Type.Object({
  key: Type.String({ description: 'Claim name in the signed JSON.' }),
  label: Type.String(),
  type: Type.Enum([...PARAM_TYPES]),
  required: Type.Boolean(),
  defaultValue: Nullable(Type.String({ description: 'Text, parsed by type when the product is saved.' })),
  options: Type.Array(Type.String(), { description: 'Allowed values, for ENUM.' }),
  help: Nullable(Type.String()),
});
export type ProductParam = Static<typeof ProductParam>;

const ProductParamInput = Type.Object(
  {
    key: Type.String({
      maxLength: 64,
      pattern: '^[A-Za-z][A-Za-z0-9_.-]{0,63}$',
      description:
        'The claim name: 1 to 64 of letters, digits, `_`, `.` and `-`, starting with a letter; not one of the issuer claims (v lid prd org typ act lic iat nbf exp grace fp fpn mm chk max; for a FLOATING product also lse brw), nor upd, mtr or trl unless the product had that parameter before those claims existed.',
    }),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Defaults to the key.' })),
    type: Type.Enum([...PARAM_TYPES]),
    required: Type.Optional(Type.Boolean()),
    defaultValue: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 200, uniqueItems: true })),
    help: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  },
  { additionalProperties: false },
);

export const METER_PERIODS = ['NONE', 'DAY', 'MONTH', 'YEAR'] as const;
export type MeterPeriod = (typeof METER_PERIODS)[number];
const MeterPeriodSchema = Type.Enum([...METER_PERIODS], {
  description: 'NONE (the licence’s life), DAY, MONTH or YEAR: calendar periods in the organisation’s timezone.',
});
const TERA = 1_000_000_000_000;
export const MeterKeyText = Type.String({
  maxLength: 64,
  pattern: '^[A-Za-z][A-Za-z0-9_.-]{0,63}$',
  description: 'As a parameter key: 1 to 64 of letters, digits, `_`, `.` and `-`, starting with a letter.',
});
export const MeterCount = (description: string) => Nullable(Type.Integer({ minimum: 0, maximum: TERA, description }));

/** A meter as a product declares it and a licence copies it (DESIGN.md 19). */
export const ProductMeter = Type.Object({
  key: Type.String(),
  label: Type.String(),
  limit: Nullable(Type.Integer({ description: 'Per period; null = unlimited.' })),
  period: MeterPeriodSchema,
  overage: Nullable(Type.Integer({ description: 'Accepted past the limit; null = no ceiling.' })),
});
export type ProductMeter = Static<typeof ProductMeter>;

const ProductMeterInput = Type.Object(
  {
    key: MeterKeyText,
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Defaults to the key.' })),
    limit: MeterCount('An integer 0 to 10^12 per period, or null for unlimited. Required.'),
    period: Type.Optional(MeterPeriodSchema),
    overage: Type.Optional(MeterCount('Accepted past `limit`: 0 to 10^12 (default 0), or null for no ceiling; 0 when `limit` is null.')),
  },
  { additionalProperties: false },
);

const ProductKeyText = Type.String({ maxLength: 64, pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'Signed into every licence as `prd`.' });
const ProductName = Type.String({ minLength: 1, maxLength: 200 });

// Fields a create sets and an edit may change; absent ones take their defaults (create) or stay (edit).
const editable = {
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  active: Type.Optional(Type.Boolean()),
  algorithm: Type.Optional(Type.Enum([...ALGORITHMS], { description: 'Default ED25519. Changes only with a new key.' })),
  keyOrigin: Type.Optional(
    Type.Enum([...KEY_ORIGINS], {
      description:
        '`managed` (generated here, the default), `imported` (with `privateKeyPem` or `keystorePkcs12`) or `pkcs11` (with `pkcs11`: the key stays on the token).',
    }),
  ),
  certificateType: Type.Optional(Type.Enum([...CERTIFICATE_TYPES], { description: 'Default SELF_SIGNED; IMPORTED with `certificatePem`.' })),
  privateKeyPem: Type.Optional(Type.String({ minLength: 1, maxLength: 20_000, description: 'Write-only. PKCS#8 or traditional PEM, optionally encrypted.' })),
  privateKeyPassphrase: Type.Optional(Type.String({ maxLength: 1024, description: 'Write-only. Opens an encrypted `privateKeyPem`.' })),
  keystorePkcs12: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200_000,
      description:
        "Write-only. Base64 of a PKCS#12 keystore (.p12, .pfx) holding one private key and optionally its certificate chain; its leaf certificate becomes the product's.",
    }),
  ),
  keystorePassword: Type.Optional(Type.String({ maxLength: 1024, description: 'Write-only. Opens `keystorePkcs12`; used once, never stored.' })),
  pkcs11: Type.Optional(
    Nullable(
      Type.Object(
        {
          tokenLabel: Type.String({
            minLength: 1,
            maxLength: 32,
            description: "The token's label: one of the organisation's tokens (LICENSOR_PKCS11_TOKENS).",
          }),
          keyLabel: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 128,
              description: "The private key's CKA_LABEL. Without it (or with `regenerateKey`) a new key pair is generated on the token.",
            }),
          ),
          pin: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 128,
              description: "Write-only. The token's user PIN, sealed like a private key. Required unless the token and key are the current ones.",
            }),
          ),
        },
        {
          additionalProperties: false,
          description: "A key on a PKCS#11 token (`keyOrigin` `pkcs11`). A record's `pkcs11` sent back as it is (or its null) changes nothing.",
        },
      ),
    ),
  ),
  certificatePem: Type.Optional(
    Nullable(
      Type.String({
        minLength: 1,
        maxLength: 50_000,
        description: "One PEM certificate over the product's key. Sending back the current one (or null, as a record without one shows) changes nothing.",
      }),
    ),
  ),
  licenceType: Type.Optional(LicenceTypeSchema),
  allowedLicenceTypes: Type.Optional(Type.Array(LicenceTypeSchema, { minItems: 1, uniqueItems: true })),
  licenceFetchEnabled: Type.Optional(Type.Boolean()),
  checkIntervalSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 120, maximum: TEN_YEARS, description: 'null = the default, 86,400.' }))),
  maxOfflineSeconds: Type.Optional(
    Nullable(Type.Integer({ minimum: 120, maximum: TEN_YEARS, description: 'At least checkIntervalSeconds; null = the default, 604,800.' })),
  ),
  fingerprintNeed: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 5, description: 'null = the default, 3.' }))),
  maxMachines: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  defaultValidityMonths: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 1200, description: '0 = perpetual; null = required at issue.' }))),
  defaultGraceDays: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 3650, description: 'null = the default, 0.' }))),
  selfReleaseLimit: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description: 'Seats one licence may release by itself (application or customer portal) in any 30 days; 0 = off, null = no limit. Default 3.',
      }),
    ),
  ),
  seatModel: Type.Optional(Nullable(SeatModelSchema)),
  leaseSeconds: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 60,
        maximum: 3_600,
        description:
          'FLOATING: how long a lease lasts without a check, signed as `lse`; the longest outage of the service a floating site survives. null = the default, 900.',
      }),
    ),
  ),
  maxBorrowSeconds: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 0,
        maximum: 2_592_000,
        description: 'FLOATING: the longest a machine may borrow its lease ahead, signed as `brw`; 0 = no borrowing (the default).',
      }),
    ),
  ),
  maxBorrowedSeats: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        description: 'FLOATING: how many leases of one licence may be borrowed at once, at most maxMachines; null = the default, maxMachines.',
      }),
    ),
  ),
  airGapActivation: Type.Optional(
    Nullable(
      Type.Boolean({
        description: 'Licences (ONLINE and HYBRID) may be activated on machines that never reach the service (DESIGN.md 14); null = the default, false.',
      }),
    ),
  ),
  airGapActivationDays: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 1,
        maximum: 3650,
        description: 'How long an air-gapped activation lasts (at most to the licence’s grace end); null = the default, 90.',
      }),
    ),
  ),
  trialDays: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 0,
        maximum: 90,
        description: "DESIGN.md 18: days an application's trial lasts (ONLINE, one machine); 0 = no trials (the default, null too).",
      }),
    ),
  ),
  trialParams: Type.Optional(
    Nullable(
      Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), {
        maxProperties: 100,
        description:
          "Parameter values of trials, checked as issue's `params`; absent ones take their defaults. A parameter removed from `params` is dropped here in the same save.",
      }),
    ),
  ),
  trialMeters: Type.Optional(
    Nullable(
      Type.Record(
        Type.String({ maxLength: 64 }),
        Type.Object(
          {
            limit: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000 }))),
            overage: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000 }))),
          },
          { additionalProperties: false },
        ),
        {
          maxProperties: 20,
          description:
            "A trial's limits of the product's meters (DESIGN.md 19), by meter key, checked as issue's `meters`. A meter removed from `meters` is dropped here in the same save.",
        },
      ),
    ),
  ),
  trialDailyLimit: Type.Optional(
    Nullable(Type.Integer({ minimum: 1, maximum: 100_000, description: 'New trials of the product in any 86,400 s; null = no limit (the default).' })),
  ),
  trialAddressDailyLimit: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 1,
        maximum: 10_000,
        description:
          'New trials of the product from one client address in any 86,400 s (IPv6: per /64, and per /48 five times this); null = no limit. Default 20.',
      }),
    ),
  ),
  updatesMonths: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 0,
        maximum: 1200,
        description:
          "DESIGN.md 20: the maintenance window a licence gets when its issue doesn't say, in months from the issue date (signed as `upd`); null = no window (the default): every release.",
      }),
    ),
  ),
  params: Type.Optional(Type.Array(ProductParamInput, { maxItems: 100 })),
  meters: Type.Optional(
    Type.Array(ProductMeterInput, {
      maxItems: 20,
      description: 'Usage meters (DESIGN.md 19), at most 20, keys unique; replaces the list. Licences copy them at issue and renewal, signed as `mtr`.',
    }),
  ),
};

export const CreateProductBody = Type.Object({ productKey: ProductKeyText, name: ProductName, ...editable }, { additionalProperties: false });
export type CreateProductInput = Static<typeof CreateProductBody>;

/**
 * A product's output-only fields: an edit accepts and ignores them, so a record read with GET can
 * be changed and sent back whole.
 */
export const PRODUCT_OUTPUT_ONLY = [
  'id',
  'createdAt',
  'createdBy',
  'updatedAt',
  'licenseCount',
  'paramCount',
  'algorithmLabel',
  'signatureAlgorithm',
  'keyFingerprint',
  'keyState',
  'keyError',
  'publicKeyPem',
  'certificateSubject',
  'certificateExpiresAt',
  'certificateExpired',
  'checkId',
  'checkTokenSet',
  'checkRotatedAt',
] as const;

export const UpdateProductBody = Type.Object(
  {
    productKey: Type.Optional(ProductKeyText),
    name: Type.Optional(ProductName),
    ...editable,
    regenerateKey: Type.Optional(
      Type.Boolean({
        description: '`true` replaces a managed key, or a key on a token with a new pair on that token; the old key is kept to verify what it signed.',
      }),
    ),
    ...outputOnly(PRODUCT_OUTPUT_ONLY),
  },
  { additionalProperties: false },
);
export type UpdateProductInput = Static<typeof UpdateProductBody>;

export const Product = Type.Object({
  id: Type.Integer(),
  productKey: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  active: Type.Boolean(),
  algorithm: Type.Enum([...ALGORITHMS]),
  algorithmLabel: Type.String(),
  signatureAlgorithm: Type.String({ description: 'JDK name, e.g. Ed25519, SHA256withRSA, SHA256withECDSA.' }),
  certificateType: Type.String(),
  keyOrigin: Type.String({ description: 'Where the private key lives: `managed`, `imported` or `pkcs11`.' }),
  pkcs11: Nullable(
    Type.Object({ tokenLabel: Type.String(), keyLabel: Type.String() }, { description: 'The token and key label of a `pkcs11` key; never its PIN.' }),
  ),
  keyFingerprint: Nullable(Type.String({ description: "SHA-256 of the public key's SPKI DER, lowercase hex." })),
  certificateExpiresAt: NullableTimestamp,
  certificateExpired: Type.Boolean(),
  paramCount: Type.Integer(),
  licenseCount: Type.Integer(),
  licenceType: LicenceTypeSchema,
  allowedLicenceTypes: Type.Array(LicenceTypeSchema),
  checkId: Nullable(Type.String({ description: 'Public: part of the check URL.' })),
  checkTokenSet: Type.Boolean({ description: 'Whether a check token exists; never the token.' }),
  checkRotatedAt: NullableTimestamp,
  licenceFetchEnabled: Type.Boolean(),
  checkIntervalSeconds: Nullable(Type.Integer()),
  maxOfflineSeconds: Nullable(Type.Integer()),
  fingerprintNeed: Nullable(Type.Integer()),
  maxMachines: Type.Integer(),
  defaultValidityMonths: Nullable(Type.Integer()),
  defaultGraceDays: Nullable(Type.Integer()),
  selfReleaseLimit: Nullable(Type.Integer({ description: 'Self-service releases per licence in any 30 days; 0 = off, null = no limit.' })),
  seatModel: SeatModelSchema,
  leaseSeconds: Type.Integer(),
  maxBorrowSeconds: Type.Integer(),
  maxBorrowedSeats: Type.Integer(),
  airGapActivation: Type.Boolean({ description: 'Whether licences may be activated on air-gapped machines.' }),
  airGapActivationDays: Type.Integer({ description: 'Days an air-gapped activation lasts, at most to the licence’s grace end.' }),
  trialDays: Type.Integer({ description: 'Days a trial lasts; 0 = no trials.' }),
  trialParams: Type.Record(Type.String(), Type.Unknown(), { description: 'Parameter values of trials.' }),
  trialMeters: Type.Record(Type.String(), Type.Object({ limit: Type.Optional(Nullable(Type.Integer())), overage: Type.Optional(Nullable(Type.Integer())) }), {
    description: "A trial's meter limits, by meter key.",
  }),
  trialDailyLimit: Nullable(Type.Integer({ description: 'New trials per 86,400 s; null = no limit.' })),
  trialAddressDailyLimit: Nullable(Type.Integer({ description: 'New trials per 86,400 s from one address; null = no limit.' })),
  updatesMonths: Nullable(Type.Integer({ description: "Months of updates a licence gets when its issue doesn't say; null = no window." })),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  params: Type.Array(ProductParam),
  meters: Type.Array(ProductMeter),
  publicKeyPem: Nullable(Type.String()),
  certificatePem: Nullable(Type.String()),
  certificateSubject: Nullable(Type.String()),
  keyState: Nullable(
    Type.Enum(['OK', 'ERROR'], { description: 'Whether the service can open the private key (for a `pkcs11` key: reach the token, log in and find the key).' }),
  ),
  keyError: Nullable(Type.String()),
  createdBy: Nullable(Type.String()),
});

export const ProductKeyRecord = Type.Object({
  keyFingerprint: Type.String(),
  algorithm: Type.Enum([...ALGORITHMS]),
  publicKeyPem: Type.String(),
  createdAt: Timestamp,
  retiredAt: NullableTimestamp,
  current: Type.Boolean(),
});

export const CheckCredential = Type.Object({
  checkId: Type.String(),
  checkToken: Type.String({ description: '`svcc_<checkId>_<secret>`, shown once: only its hash is kept.' }),
  rotatedAt: Timestamp,
});

const Choice = Type.Object({
  value: Type.String(),
  label: Type.String(),
  available: Type.Boolean(),
  reason: Type.Optional(Type.String()),
});

export const ProductOptions = Type.Object({
  algorithms: Type.Array(
    Type.Object({
      value: Type.String(),
      label: Type.String(),
      signatureAlgorithm: Type.String(),
      available: Type.Boolean(),
      reason: Type.Optional(Type.String()),
    }),
  ),
  certificateTypes: Type.Array(Choice),
  keyOrigins: Type.Array(Choice),
  keyFormats: Type.Array(Choice, { description: 'How an imported key may be sent: `PEM` (`privateKeyPem`) or `PKCS12` (`keystorePkcs12`).' }),
  pkcs11Tokens: Type.Array(Type.String(), { description: "The tokens this organisation's products may keep keys on (LICENSOR_PKCS11_TOKENS)." }),
  licenceTypes: Type.Array(Choice),
  paramTypes: Type.Array(Choice),
  reservedParamKeys: Type.Array(Type.String(), { description: 'The issuer claims, and upd, mtr and trl: parameter keys a new parameter may not use.' }),
  reservedFloatingParamKeys: Type.Array(Type.String(), { description: 'Further parameter keys a FLOATING product may not use.' }),
  seatModels: Type.Array(Choice),
  meterPeriods: Type.Array(Choice),
  checkRateAddress: Type.Integer({
    description:
      'Checks allowed per minute from one address (LICENSOR_CHECK_RATE_ADDRESS; 0 = no limit): a floating site behind one address needs maxMachines × 180 / leaseSeconds.',
  }),
});

export const ProductForm = Type.Object({
  productId: Type.Integer(),
  licenceTypes: Type.Array(LicenceTypeSchema),
  defaults: Type.Object({
    licenceType: LicenceTypeSchema,
    activation: Nullable(Type.Enum(['ONLINE', 'OFFLINE'], { description: 'ONLINE when the product allows HYBRID.' })),
    validityMonths: Nullable(Type.Integer()),
    graceDays: Type.Integer(),
    maxMachines: Type.Integer(),
    updatesMonths: Nullable(Type.Integer({ description: 'The update window an issue gets without `updatesMonths`; null = none.' })),
  }),
  params: Type.Array(ProductParam),
  meters: Type.Array(ProductMeter),
});
