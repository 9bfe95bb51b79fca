/** Scopes a token may carry (DESIGN.md 4); `:write` implies `:read`. */
export const SCOPES = [
  'licenses:read',
  'licenses:write',
  'products:read',
  'products:write',
  'customers:read',
  'customers:write',
  'users:read',
  'users:write',
  'analytics:read',
  'activity:read',
  'webhooks:read',
  'webhooks:write',
  'releases:read',
  'releases:write',
  'integrations:read',
  'integrations:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ['VIEWER', 'ISSUER', 'ORG_ADMIN'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a route demands of its caller: a scope (judged against a token's scopes or a person's
 * role), any credential of the organisation (`member`), a signed-in person (`session`), a
 * signed-in organisation administrator (`admin-session`), a product's check token (`check`,
 * judged by the check routes themselves: check/routes.ts), the customer portal's own cookie
 * (`portal`, DESIGN.md 12), a token in the path (`path-token`, DESIGN.md 20's download grants and
 * feeds, which resolve the organisation themselves after the token), or nothing (`public`).
 */
export type Access = Scope | 'public' | 'member' | 'session' | 'admin-session' | 'check' | 'portal' | 'path-token';

// Webhook endpoints and payment connections are an administrator's (DESIGN.md 15 and 22): not among the reads every role has.
const READS: Scope[] = SCOPES.filter((s) => s.endsWith(':read') && s !== 'webhooks:read' && s !== 'integrations:read');
const ROLE_SCOPES: Record<Role, ReadonlySet<Scope>> = {
  VIEWER: new Set(READS),
  ISSUER: new Set<Scope>([...READS, 'licenses:write', 'products:write', 'customers:write', 'releases:write']),
  ORG_ADMIN: new Set<Scope>(SCOPES),
};

export function roleAllows(role: Role, scope: Scope): boolean {
  return ROLE_SCOPES[role].has(scope);
}

export function scopesAllow(scopes: readonly string[], scope: Scope): boolean {
  return scopes.includes(scope) || (scope.endsWith(':read') && scopes.includes(scope.replace(/:read$/, ':write')));
}

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
