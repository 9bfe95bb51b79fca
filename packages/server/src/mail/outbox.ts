import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { recordAudit } from '../audit/audit.js';
import { localDate } from '../core/calendar.js';
import { newSecret, sha256Hex } from '../core/secrets.js';
import { iso } from '../core/schemas.js';
import { lockRow, transaction, type Database, type Db } from '../db/database.js';
import { tenant } from '../db/tenant.js';
import { insertLink, revokeLink } from '../portal/repo.js';
import { mailConfigured } from './config.js';
import { DAILY_LIMIT_HELD } from './queue.js';
import {
  admitEmails,
  admittedSince,
  DAY_MS,
  deleteEmailsBefore,
  dueEmailId,
  type EmailRow,
  extendLease,
  heldEmailIds,
  licenceForMailById,
  orgMailState,
  orgsHoldingEmails,
  recordAttempt,
  takeLease,
} from './repo.js';
import { templateOf } from './settings.js';
import { render, type Values } from './template.js';
import { fromOf, sendOnce, type SendOutcome } from './transport.js';

/** DESIGN.md 22: the waits after the 1st to 8th failed attempt; the 9th failure is final. */
export const RETRY_DELAYS_MS = [10_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000];
export const LEASE_MS = 60_000;
const EXTEND_MS = 20_000;
const POLL_MS = 1_000;
const PRUNE_MS = 3_600_000;
/** Email records are kept a year (DESIGN.md 22 "Personal data"). */
export const KEEP_MS = 365 * DAY_MS;
const LINK_LIFETIME_MS = 24 * 60 * 60 * 1000;

/**
 * The mail outbox every service process runs (DESIGN.md 22): it admits emails the daily limit
 * held once the count allows, claims one due email at a time with a 60 s lease (extended every
 * 20 s while its attempt runs; `FOR UPDATE SKIP LOCKED` and a conditional update on PostgreSQL, the
 * write lock on SQLite), makes one attempt and writes its outcome only while it still holds the
 * lease, so no two instances ever attempt one email at once. Organisations whose mail the control
 * plane turned off are held; suspended ones go on sending. Time is `Date.now()`, so tests move it
 * with fake timers and call `drain()`.
 */
export class MailOutbox {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private stopped = false;
  private lastPrune = 0;
  private readonly id = randomBytes(8).toString('hex');

  constructor(
    private readonly database: Database,
    private readonly config: Pick<Config, 'mail' | 'publicUrl'>,
    private readonly log: { error(obj: unknown, msg: string): void },
  ) {}

  start(): void {
    if (!mailConfigured(this.config.mail)) return;
    const loop = () => {
      this.timer = setTimeout(async () => {
        await this.turn().catch((err: unknown) => this.log.error({ err }, 'mail outbox turn failed'));
        if (!this.stopped) loop();
      }, POLL_MS);
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => {});
  }

  /** Turns until nothing is due now: every due email attempted once. Returns the attempts made. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const made = await this.turn();
      total += made;
      if (made === 0) return total;
    }
  }

  /** One turn, never two at once in this process. */
  turn(): Promise<number> {
    const previous = this.running ?? Promise.resolve(0);
    const next = previous.catch(() => 0).then(() => this.work());
    this.running = next;
    return next;
  }

  private async work(): Promise<number> {
    if (!mailConfigured(this.config.mail)) return 0;
    const now = Date.now();
    if (now - this.lastPrune >= PRUNE_MS) {
      this.lastPrune = now;
      await deleteEmailsBefore(this.database.db, now - KEEP_MS);
    }
    await this.admitHeld(now);
    let made = 0;
    for (;;) {
      const claimed = await this.claim(Date.now());
      if (!claimed) return made;
      await this.attempt(claimed.row, claimed.lease);
      made++;
    }
  }

  /** Admits held emails, oldest first, as far as each organisation's count allows. */
  private async admitHeld(now: number): Promise<void> {
    for (const orgId of await orgsHoldingEmails(this.database.db)) {
      await transaction(this.database, async (trx) => {
        await lockRow(this.database, trx, 'organisations', orgId);
        const org = await orgMailState(trx, orgId);
        if (!org || Number(org.mail_enabled) !== 1) return;
        const t = tenant(trx, orgId);
        const free = this.config.mail.dailyLimit - (await admittedSince(t, now)).count;
        if (free <= 0) return;
        const ids = await heldEmailIds(t, free);
        if (ids.length > 0) await admitEmails(t, ids, now, DAILY_LIMIT_HELD);
      });
    }
  }

  private async claim(now: number): Promise<{ row: EmailRow; lease: string } | null> {
    return transaction(this.database, async (trx) => {
      const found = await dueEmailId(trx, now, this.database.dialect);
      if (found === undefined) return null;
      const lease = `${this.id}:${randomBytes(8).toString('hex')}`;
      const taken = await takeLease(trx, found, lease, now, now + LEASE_MS);
      return taken ? { row: taken, lease } : null;
    });
  }

  /** Builds the message at the attempt (the licence's current string, a fresh portal link), sends it once, and writes what came of it. */
  private async attempt(row: EmailRow, lease: string): Promise<void> {
    const db = this.database.db;
    const orgId = Number(row.org_id);
    const extend = setInterval(() => {
      void extendLease(db, row.id, lease, Date.now() + LEASE_MS).catch(() => {});
    }, EXTEND_MS);
    let linkId: number | null = null;
    let termIssuedAt: number | null = null;
    let outcome: SendOutcome;
    try {
      const prepared = await this.prepare(db, row, orgId);
      termIssuedAt = prepared.termIssuedAt;
      linkId = prepared.linkId;
      outcome = prepared.message ? await sendOnce(this.config.mail, prepared.message) : { sent: false, error: prepared.error!, permanent: true };
    } catch (err) {
      outcome = { sent: false, error: err instanceof Error ? err.message : String(err), permanent: false };
    } finally {
      clearInterval(extend);
    }
    await this.record(row, lease, outcome, linkId, termIssuedAt);
  }

  private async prepare(db: Db, row: EmailRow, orgId: number) {
    const t = tenant(db, orgId);
    const org = await orgMailState(db, orgId);
    if (!org) throw new Error(`no organisation ${orgId}`);
    const licence = await licenceForMailById(t, Number(row.licence_id));
    const termIssuedAt = Number(licence.issued_at);
    if (row.to_address === null) return { message: null, error: 'erased', linkId: null, termIssuedAt };
    const template = await templateOf(db, orgId, org.name);
    let portalLink = '';
    let linkId: number | null = null;
    if (`${template.text}\n${template.html}`.includes('{{portalLink}}') && licence.customer_id !== null) {
      const code = newSecret();
      const now = Date.now();
      await transaction(this.database, async (trx) => {
        const tt = tenant(trx, orgId);
        const link = await insertLink(tt, {
          customer_id: Number(licence.customer_id),
          code_hash: sha256Hex(code),
          created_at: now,
          created_by: row.created_by,
          expires_at: now + LINK_LIFETIME_MS,
          used_at: null,
          revoked_at: null,
        });
        linkId = Number(link.id);
        await recordAudit(
          tt,
          { actor: { name: row.created_by }, now },
          {
            action: 'portal_link.created',
            subjectType: 'customer',
            subjectId: Number(licence.customer_id),
            summary: `Created portal link ${linkId} for email ${row.id} of ${licence.lid}`,
            details: { linkId, expiresAt: iso(now + LINK_LIFETIME_MS), emailId: Number(row.id) },
          },
        );
      });
      portalLink = `${this.config.publicUrl}/o/${org.slug}/portal/${code}`;
    }
    const values: Values = {
      licensee: licence.licensee,
      product: licence.product_name,
      expiry: licence.expires_at === null ? 'never' : localDate(Number(licence.expires_at), org.timezone),
      portalLink,
      organisation: org.name,
      lid: licence.lid,
    };
    const content = render(template, values);
    const host = new URL(this.config.publicUrl).hostname.replace(/^\[|\]$/g, '');
    return {
      message: {
        from: fromOf(this.config.mail, template.senderName),
        to: row.to_address,
        ...(template.replyTo ? { replyTo: template.replyTo } : {}),
        subject: content.subject,
        text: content.text,
        html: content.html,
        messageId: `<email-${row.id}@${host}>`,
        headers: { 'X-Licensor-Lid': licence.lid, 'X-Licensor-Email-Id': String(row.id), 'Auto-Submitted': 'auto-generated' },
        attachments: [
          {
            filename: `${licence.product_key}-${licence.lid}.lic`,
            content: Buffer.from(licence.licence_string, 'utf8'),
            contentType: 'application/octet-stream',
            contentTransferEncoding: 'base64' as const,
          },
        ],
      },
      error: null,
      linkId,
      termIssuedAt,
    };
  }

  private async record(row: EmailRow, lease: string, outcome: SendOutcome, linkId: number | null, termIssuedAt: number | null): Promise<void> {
    const now = Date.now();
    const attempts = Number(row.attempts) + 1;
    await transaction(this.database, async (trx) => {
      const t = tenant(trx, Number(row.org_id));
      const common = { attempts, lease: null, lease_until: null, portal_link_id: linkId, term_issued_at: termIssuedAt };
      const change = outcome.sent
        ? { ...common, status: 'sent' as const, sent_at: now, last_error: null, next_attempt_at: null }
        : outcome.permanent || attempts > RETRY_DELAYS_MS.length
          ? { ...common, status: 'failed' as const, last_error: outcome.error, next_attempt_at: null }
          : { ...common, last_error: outcome.error, next_attempt_at: now + RETRY_DELAYS_MS[attempts - 1]! };
      await recordAttempt(t, row.id, lease, change);
      if (!outcome.sent && linkId !== null) await revokeLink(t, linkId, now);
    });
  }
}
