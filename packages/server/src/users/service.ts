import type { Static } from 'typebox';
import { recordAudit } from '../audit/audit.js';
import { hashPassword } from '../core/passwords.js';
import { isUniqueViolation } from '../db/database.js';
import type { Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import type { Tenant } from '../db/tenant.js';
import { conflict, forbidden, notFound } from '../core/errors.js';
import { breakGlassLeft, countActiveAdmins, deleteUser, endSessions, findUser, insertUser, listUsers, toMember, updateUser } from './repo.js';
import type { CreateMemberBody, UpdateMemberBody } from './schemas.js';
import { retireInitialPassword } from './initial-password.js';

type CreateInput = Static<typeof CreateMemberBody>;
type UpdateInput = Static<typeof UpdateMemberBody>;

// A token may manage members but never set a password (DESIGN.md 4).
function refusePasswordFromToken(ctx: Ctx, input: { password?: string | undefined }) {
  if (input.password !== undefined && ctx.actor.kind === 'token') {
    throw forbidden('an API token may not set a password: an ORG_ADMIN session or the CLI sets it');
  }
  // Nothing a platform account does inside an organisation outlives its session (DESIGN.md 8).
  if (input.password !== undefined && ctx.actor.kind === 'platform') {
    throw forbidden('a platform account may not set a member password inside an organisation');
  }
}

/** Whether this member is an administrator who can sign in (the last-administrator rule, DESIGN.md 4). */
const adminWhoCanSignIn = (row: { role: string; active: number; password_hash: string | null }) =>
  row.role === 'ORG_ADMIN' && row.active === 1 && row.password_hash !== null;

/**
 * Refuses a change that took away the last administrator who can sign in, or, while single sign-on
 * is enforced, the last break-glass administrator who can sign in without it (DESIGN.md 21).
 */
async function guardLastAdmin(t: Tenant, before: Parameters<typeof adminWhoCanSignIn>[0]) {
  if (adminWhoCanSignIn(before) && (await countActiveAdmins(t)) === 0) {
    throw conflict('the organisation must keep at least one active ORG_ADMIN who can sign in');
  }
  if ((await breakGlassLeft(t)) === 0) {
    throw conflict('single sign-on is required: at least one break-glass administrator must keep a way to sign in without it');
  }
}

export async function listMembers(ctx: Ctx) {
  return (await listUsers(ctx.tenant)).map(toMember);
}

export async function createMember(ctx: Ctx, input: CreateInput) {
  refusePasswordFromToken(ctx, input);
  // Hashing is deliberately slow: it happens before the transaction, never inside it.
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
  try {
    return await inTransaction(ctx, (t) => insertMember(t, ctx, input, passwordHash));
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`username "${input.username}" is already taken`);
    throw err;
  }
}

/** Inserts a member and its audit entry inside the caller's transaction. */
export async function insertMember(t: Tenant, ctx: Pick<Ctx, 'actor' | 'now'>, input: CreateInput, passwordHash: string | null) {
  const row = await insertUser(t, {
    username: input.username,
    display_name: input.displayName ?? input.username,
    email: input.email ?? null,
    role: input.role,
    active: input.active === false ? 0 : 1,
    password_hash: passwordHash,
    created_at: ctx.now,
    created_by: ctx.actor.name,
    last_login_at: null,
  });
  await recordAudit(t, ctx, {
    action: 'user.created',
    subjectType: 'user',
    subjectId: row.id,
    summary: `Created ${row.role} ${row.username}`,
    details: { username: row.username, role: row.role, active: row.active === 1 },
  });
  return toMember(row);
}

/** `dataDir`: where the first start may have left a password this change replaces (orgs/initial-password.ts). */
export async function updateMember(ctx: Ctx, id: number, input: UpdateInput, dataDir: string) {
  refusePasswordFromToken(ctx, input);
  const passwordHash = input.password === undefined ? undefined : await hashPassword(input.password);
  let replacedHash: string | null = null;
  try {
    const member = await inTransaction(
      ctx,
      async (t) => {
        const before = await findUser(t, id);
        if (!before) throw notFound(`no member ${id}`);
        if (passwordHash !== undefined) replacedHash = before.password_hash;
        const row = await updateUser(t, id, {
          username: input.username,
          display_name: input.displayName,
          email: input.email,
          role: input.role,
          active: input.active === undefined ? undefined : input.active ? 1 : 0,
          password_hash: passwordHash,
        });
        await guardLastAdmin(t, before);
        // Deactivation and a new password end the member's sessions at once.
        if (row.active === 0 || passwordHash !== undefined) {
          await endSessions(t, id, ctx.actor.kind === 'user' ? ctx.actor.sessionId : undefined);
        }
        const changed = Object.keys(input).filter((k) => k !== 'password');
        await recordAudit(t, ctx, {
          action: 'user.updated',
          subjectType: 'user',
          subjectId: id,
          summary: `Updated ${row.username}${passwordHash === undefined ? '' : ' (password changed)'}`,
          details: { changed: passwordHash === undefined ? changed : [...changed, 'password'] },
        });
        return toMember(row);
      },
      { lockOrganisation: true },
    );
    await retireInitialPassword(dataDir, replacedHash);
    return member;
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`username "${input.username}" is already taken`);
    throw err;
  }
}

export async function deleteMember(ctx: Ctx, id: number): Promise<void> {
  await inTransaction(
    ctx,
    async (t) => {
      const row = await findUser(t, id);
      if (!row) throw notFound(`no member ${id}`);
      await endSessions(t, id);
      await deleteUser(t, id);
      await guardLastAdmin(t, row);
      await recordAudit(t, ctx, {
        action: 'user.deleted',
        subjectType: 'user',
        subjectId: id,
        summary: `Removed ${row.username}`,
        details: { username: row.username, role: row.role },
      });
    },
    { lockOrganisation: true },
  );
}
