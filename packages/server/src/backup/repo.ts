import type { Db } from '../db/database.js';

/** DESIGN.md 22: a restored outbox does not resend (the mail may have gone after the snapshot); send sends again. */
export async function failPendingEmails(db: Db): Promise<void> {
  await db
    .updateTable('emails')
    .set({ status: 'failed', last_error: 'restored', next_attempt_at: null, lease: null, lease_until: null })
    .where('status', '=', 'pending')
    .execute();
}
