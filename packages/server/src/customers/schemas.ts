import { Type, type Static } from 'typebox';
import { Nullable, outputOnly, Timestamp } from '../core/schemas.js';
import { Email } from '../users/schemas.js';

export const Customer = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  email: Nullable(Type.String({ format: 'email' })),
  notes: Nullable(Type.String()),
  licenseCount: Type.Integer(),
  createdAt: Timestamp,
  createdBy: Nullable(Type.String()),
});

/** Create and edit alike: an edit replaces name, email and notes (absent ones become null). */
export const CustomerBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.Optional(Nullable(Email)),
    notes: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
  },
  { additionalProperties: false },
);
export type CustomerInput = Static<typeof CustomerBody>;

/** A customer's output-only fields: an edit accepts and ignores them (read, change, send back). */
export const CUSTOMER_OUTPUT_ONLY = ['id', 'createdAt', 'createdBy', 'licenseCount'] as const;

export const CustomerEditBody = Type.Object({ ...CustomerBody.properties, ...outputOnly(CUSTOMER_OUTPUT_ONLY) }, { additionalProperties: false });
