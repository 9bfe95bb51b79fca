import { Type } from 'typebox';
import { Nullable, NullableTimestamp, Timestamp } from '../core/schemas.js';

export const Username = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._@-]+$' });
export const Password = Type.String({ minLength: 12, maxLength: 1024, description: 'At least 12 characters.' });
export const Email = Type.String({ format: 'email', maxLength: 254 });
export const RoleSchema = Type.Enum(['VIEWER', 'ISSUER', 'ORG_ADMIN']);

export const Member = Type.Object({
  id: Type.Integer(),
  username: Type.String(),
  displayName: Type.String(),
  email: Nullable(Type.String()),
  role: Type.String(),
  active: Type.Boolean(),
  createdAt: Timestamp,
  lastLoginAt: NullableTimestamp,
  ssoLinkedAt: { ...NullableTimestamp, description: 'When the member was linked to the single sign-on identity provider; null: not linked.' },
  ssoSignedInAt: { ...NullableTimestamp, description: 'The last single sign-on sign-in.' },
});

export const CreateMemberBody = Type.Object(
  {
    username: Username,
    displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    email: Type.Optional(Nullable(Email)),
    password: Type.Optional(Password),
    role: RoleSchema,
    active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const UpdateMemberBody = Type.Partial(CreateMemberBody, { additionalProperties: false, minProperties: 1 });
