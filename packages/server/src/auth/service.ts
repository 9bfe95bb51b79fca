import type { Ctx, Organisation } from '../core/context.js';
import { badRequest, forbidden, invalid } from '../core/errors.js';
import { hashPassword, verifyPassword } from '../core/passwords.js';
import { inTransaction } from '../core/transaction.js';
import { recordAudit } from '../audit/audit.js';
import { retireInitialPassword } from '../users/initial-password.js';
import { endSessions, findUser, setPasswordHash } from '../users/repo.js';
import { deleteSession } from './repo.js';

export function identity(org: Organisation, who: { username: string; displayName: string; role: string; platformRole?: string }, version: string) {
  return {
    ...who,
    platform: who.platformRole !== undefined,
    version,
    organization: { slug: org.slug, name: org.name },
    tenant: org.slug,
  };
}

/** Who this credential is: a member, a platform account inside the organisation, or a token. */
export function whoIs(ctx: Ctx, version: string) {
  const { actor, org } = ctx;
  const who =
    actor.kind === 'user'
      ? { username: actor.name, displayName: actor.displayName, role: actor.role }
      : actor.kind === 'platform'
        ? { username: actor.name, displayName: actor.displayName, role: actor.role, platformRole: actor.platformRole }
        : { username: actor.name, displayName: actor.kind === 'token' ? actor.tokenName : actor.name, role: 'TOKEN' };
  return identity(org, who, version);
}

/** Ends this session (a member's; a platform account's session is the control plane's). */
export async function signOut(ctx: Ctx): Promise<void> {
  if (ctx.actor.kind === 'user') await deleteSession(ctx.tenant, ctx.actor.sessionId);
}

/**
 * A member's own new password, given the current one; their other sessions end. `dataDir`: where
 * the first start may have left the password this replaces (users/initial-password.ts).
 */
export async function changeOwnPassword(ctx: Ctx, currentPassword: string, newPassword: string, dataDir: string): Promise<void> {
  if (ctx.actor.kind === 'platform') throw forbidden('a platform account changes its password with the CLI, not inside an organisation');
  if (ctx.actor.kind !== 'user') throw badRequest('only a signed-in person has a password');
  const { userId, sessionId } = ctx.actor;
  const user = (await findUser(ctx.tenant, userId))!;
  if (!(await verifyPassword(currentPassword, user.password_hash))) {
    throw invalid('currentPassword', 'this is not your password');
  }
  const hash = await hashPassword(newPassword);
  await inTransaction(ctx, async (t) => {
    await setPasswordHash(t, userId, hash);
    await endSessions(t, userId, sessionId);
    await recordAudit(t, ctx, {
      action: 'user.password_changed',
      subjectType: 'user',
      subjectId: userId,
      summary: `${user.username} changed their password`,
    });
  });
  await retireInitialPassword(dataDir, user.password_hash);
}
