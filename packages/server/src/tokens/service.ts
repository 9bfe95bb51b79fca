import { recordAudit } from '../audit/audit.js';
import { isScope } from '../core/access.js';
import { newPublicId, newSecret, sha256Hex } from '../core/secrets.js';
import { isUniqueViolation } from '../db/database.js';
import type { Ctx } from '../core/context.js';
import { inTransaction } from '../core/transaction.js';
import { conflict, forbidden, invalid, notFound } from '../core/errors.js';
import { iso } from '../core/schemas.js';
import { deleteTokenRow, insertToken, listTokenRows, revokeTokenRow, toTokenRecord } from './repo.js';

export async function listTokens(ctx: Ctx) {
  return (await listTokenRows(ctx.tenant)).map(toTokenRecord);
}

export async function createToken(ctx: Ctx, input: { name: string; scopes: string[]; expiresAt?: string | null | undefined }) {
  // A token would outlive the platform session that made it (DESIGN.md 8).
  if (ctx.actor.kind === 'platform') throw forbidden('a platform account may not create tokens inside an organisation');
  const unknown = input.scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw invalid('scopes', `unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}`);
  const expiresAt = input.expiresAt ? Date.parse(input.expiresAt) : null;
  if (expiresAt !== null && expiresAt <= ctx.now) throw invalid('expiresAt', 'must be in the future');
  const id = newPublicId(16);
  const secret = newSecret();
  try {
    return await inTransaction(ctx, async (t) => {
      const row = await insertToken(t, {
        id,
        name: input.name,
        scopes: JSON.stringify(input.scopes),
        // Only the digest is kept: the secret exists in this one answer.
        secret_hash: sha256Hex(secret),
        created_at: ctx.now,
        created_by: ctx.actor.name,
        expires_at: expiresAt,
        last_used_at: null,
        revoked_at: null,
      });
      await recordAudit(t, ctx, {
        action: 'token.created',
        subjectType: 'token',
        subjectId: id,
        summary: `Created API token ${input.name}`,
        details: { name: input.name, scopes: input.scopes, expiresAt: iso(expiresAt) },
      });
      return { ...toTokenRecord(row), token: `svc_${id}_${secret}` };
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`an API token named "${input.name}" already exists`);
    throw err;
  }
}

export async function revokeToken(ctx: Ctx, id: string) {
  return inTransaction(ctx, async (t) => {
    const row = await revokeTokenRow(t, id, ctx.now);
    if (!row) throw notFound(`no API token ${id}`);
    await recordAudit(t, ctx, {
      action: 'token.revoked',
      subjectType: 'token',
      subjectId: id,
      summary: `Revoked API token ${row.name}`,
    });
    return toTokenRecord(row);
  });
}

export async function deleteToken(ctx: Ctx, id: string): Promise<void> {
  await inTransaction(ctx, async (t) => {
    const row = await deleteTokenRow(t, id);
    if (!row) throw notFound(`no API token ${id}`);
    await recordAudit(t, ctx, {
      action: 'token.deleted',
      subjectType: 'token',
      subjectId: id,
      summary: `Deleted API token ${row.name}`,
    });
  });
}
