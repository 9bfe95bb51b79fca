/**
 * DESIGN.md 21: while single sign-on is enforced, a password or passkey signs in (and a session
 * they opened lasts) only for a break-glass member who is still an active ORG_ADMIN.
 */
export function shutOutBySso(
  sso: { enforce: number | null; break_glass: string | null } | undefined,
  member: { id: number; role: string; active: number },
): boolean {
  if (sso?.enforce !== 1) return false;
  const breakGlass = JSON.parse(sso.break_glass ?? '[]') as number[];
  return !(breakGlass.includes(member.id) && member.role === 'ORG_ADMIN' && member.active === 1);
}

/** Whether the organisation enforces single sign-on now (a sign-in that passes it is a break-glass one, audited). */
export const ssoEnforced = (sso: { enforce: number | null } | undefined) => sso?.enforce === 1;
