const ISSUER_CLAIMS = new Set(['v', 'lid', 'prd', 'org', 'typ', 'act', 'lic', 'iat', 'nbf', 'exp', 'grace', 'fp', 'fpn', 'mm', 'chk', 'max']);
// Issuer claims of floating licences (v 5) only: elsewhere they may be parameters.
const FLOATING_CLAIMS = new Set([...ISSUER_CLAIMS, 'lse', 'brw']);

/** A licence's signed claims: the issuer's (DESIGN.md 2), then the product's parameters apart. */
export function splitClaims(claims: Record<string, unknown>) {
  const issuer: Record<string, unknown> = {};
  const params: Record<string, unknown> = {};
  const names = claims.v === 5 ? FLOATING_CLAIMS : ISSUER_CLAIMS;
  for (const [name, value] of Object.entries(claims)) (names.has(name) ? issuer : params)[name] = value;
  return { ...issuer, params };
}
