import { Type } from 'typebox';

export const Identity = Type.Object({
  username: Type.String({ description: 'A token appears as `token/<name>`.' }),
  displayName: Type.String(),
  role: Type.String({ description: '`VIEWER`, `ISSUER`, `ORG_ADMIN`, or `TOKEN` for an API token.' }),
  platform: Type.Boolean(),
  platformRole: Type.Optional(Type.String()),
  version: Type.String(),
  organization: Type.Object({ slug: Type.String(), name: Type.String() }),
  tenant: Type.Union([Type.String(), Type.Null()]),
});
