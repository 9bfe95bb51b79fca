const ISSUER_CLAIMS = new Set(['v', 'lid', 'prd', 'org', 'typ', 'act', 'lic', 'iat', 'nbf', 'exp', 'grace', 'fp', 'fpn', 'mm', 'chk', 'max']);

/** A licence's signed claims: the issuer's (DESIGN.md 2), then the product's parameters apart. */
export function splitClaims(claims: Record<string, unknown>) {
  const issuer: Record<string, unknown> = {};
  const params: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(claims)) (ISSUER_CLAIMS.has(name) ? issuer : params)[name] = value;
  return { ...issuer, params };
}
