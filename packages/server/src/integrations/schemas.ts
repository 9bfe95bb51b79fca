import { Type, type Static } from 'typebox';
import { Id, Nullable, NullableTimestamp, Timestamp } from '../core/schemas.js';
import { MeterOverrides, Params, UpdatesMonths } from '../licences/schemas.js';
import { LicenceTypeSchema } from '../listings/schemas.js';

export const Mapping = Type.Object(
  {
    match: Type.String({
      maxLength: 260,
      description: 'A Stripe price (`price_…`) or Payment Link (`plink_…`) id, or a Paddle price id (`pri_…`); unique in the connection.',
    }),
    productId: Id(),
    licenceType: Type.Optional(Nullable(LicenceTypeSchema)),
    validityMonths: Type.Optional(
      Nullable(Type.Integer({ minimum: 0, maximum: 1200, description: "null (the default): the term follows the subscription's period; 0 = perpetual." })),
    ),
    graceDays: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 3650 }))),
    maxMachines: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000, description: "Per unit of the line's quantity." }))),
    params: Type.Optional(Params),
    meters: Type.Optional(Nullable(MeterOverrides)),
    updatesMonths: Type.Optional(UpdatesMonths),
  },
  { additionalProperties: false },
);
export type MappingInput = Static<typeof Mapping>;

const Mappings = Type.Array(Mapping, { minItems: 1, maxItems: 100 });
const Name = Type.String({ maxLength: 63, description: '`^[a-z0-9][a-z0-9-]{0,62}$`, unique in the organisation.' });
const SigningSecret = Type.String({
  maxLength: 255,
  description: "The provider's endpoint secret (`whsec_…` Stripe, `pdl_ntfset_…` Paddle): write-only, never answered.",
});
const Provider = Type.Enum(['stripe', 'paddle']);

export const CreateBody = Type.Object(
  {
    provider: Provider,
    name: Name,
    signingSecret: SigningSecret,
    mappings: Mappings,
    enabled: Type.Optional(Type.Boolean()),
    sendOnIssue: Type.Optional(Type.Boolean()),
    sendOnRenew: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type CreateInput = Static<typeof CreateBody>;

export const ChangeBody = Type.Object(
  {
    provider: Type.Optional(Provider),
    name: Type.Optional(Name),
    signingSecret: Type.Optional(SigningSecret),
    mappings: Type.Optional(Mappings),
    enabled: Type.Optional(Type.Boolean()),
    sendOnIssue: Type.Optional(Type.Boolean()),
    sendOnRenew: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ChangeInput = Static<typeof ChangeBody>;

export const Integration = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  provider: Type.String(),
  enabled: Type.Boolean(),
  sendOnIssue: Type.Boolean(),
  sendOnRenew: Type.Boolean(),
  mappings: Type.Array(Mapping),
  secretSet: Type.Boolean(),
  hookUrl: Type.String({ description: 'Where the provider sends its events.' }),
  createdAt: Timestamp,
  createdBy: Type.String(),
  updatedAt: Timestamp,
  lastEventAt: NullableTimestamp,
  lastFailureAt: NullableTimestamp,
  lastFailure: Nullable(Type.String({ description: '`SIGNATURE` or `TIMESTAMP`: why a delivery was last refused.' })),
  failedEvents: Type.Integer(),
  waitingEvents: Type.Integer(),
});

export const HookAnswer = Type.Object({
  eventId: Type.String(),
  outcome: Type.String({ description: '`ISSUED`, `RENEWED`, `REVOKED`, `REINSTATED`, `UNCHANGED`, `IGNORED`, `WAITING` or `FAILED`.' }),
  duplicate: Type.Boolean(),
  lids: Type.Array(Type.String()),
});

export const OUTCOMES = ['ISSUED', 'RENEWED', 'REVOKED', 'REINSTATED', 'UNCHANGED', 'IGNORED', 'WAITING', 'FAILED'] as const;

export const EventEntry = Type.Object({
  id: Type.Integer(),
  eventId: Type.String(),
  type: Type.String(),
  receivedAt: Timestamp,
  outcome: Type.String(),
  error: Nullable(Type.String()),
  lids: Type.Array(Type.String()),
  deliveries: Type.Integer(),
  lastDeliveryAt: NullableTimestamp,
});

export const EventQuery = Type.Object(
  {
    outcome: Type.Optional(Type.Union(OUTCOMES.map((o) => Type.Literal(o)))),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 })),
  },
  { additionalProperties: false },
);
