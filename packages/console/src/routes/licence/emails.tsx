import { Badge, Card, Group, Stack, Text, Title } from '@mantine/core';
import { useEmails, useSendLicence, type Email, type Licence } from '../../api/licences';
import { mailOff, useSettings } from '../../api/settings';
import { DateTime } from '../../components/display';
import { ConfirmButton, Guarded } from '../../components/feedback';
import { RecordTable } from '../../components/record-table';

const TRIGGER_WORDS: Record<Email['trigger'], string> = { manual: 'Sent by hand', issued: 'On issue', renewed: 'On renewal' };
const STATUS: Record<Email['status'], { word: string; color: string }> = {
  pending: { word: 'waiting', color: 'yellow' },
  sent: { word: 'sent', color: 'green' },
  failed: { word: 'failed', color: 'red' },
};

/** Why `Send to customer` cannot run, in the order the API refuses (DESIGN.md 22), or null. */
function whyNot(licence: Licence, write: { allowed: boolean; reason: string }, mail: { configured: boolean; enabled: boolean } | undefined) {
  if (!write.allowed) return write.reason;
  const off = mailOff(mail);
  if (off) return off;
  if (licence.trial) return 'A trial has no customer to send it to.';
  if (!licence.licenseeEmail) return 'The customer has no email address: add one on the customer’s page.';
  if (licence.revoked) return 'A revoked licence cannot be sent.';
  if (licence.archived) return 'An archived licence cannot be sent.';
  return null;
}

/** What became of an email, beyond its status: the relay's last answer and when the outbox tries again. */
function Progress({ email: e }: { email: Email }) {
  if (e.status === 'sent')
    return (
      <>
        Sent <DateTime value={e.sentAt} />
      </>
    );
  return (
    <Stack gap={2}>
      {e.lastError && <Text size="sm">{e.lastError}</Text>}
      {e.status === 'pending' && (
        <Text size="xs" c="dimmed">
          {e.nextAttemptAt ? (
            <>
              Next attempt <DateTime value={e.nextAttemptAt} />
            </>
          ) : (
            'Held until it can be admitted'
          )}
        </Text>
      )}
    </Stack>
  );
}

/** `Send to customer` and the licence's emails, newest first. */
export function Emails({ licence, write }: { licence: Licence; write: { allowed: boolean; reason: string } }) {
  const emails = useEmails(licence.lid);
  const mail = useSettings().data?.mail;
  const send = useSendLicence(licence.lid);
  const reason = whyNot(licence, write, mail);
  return (
    <Card withBorder component="section" aria-labelledby="emails-heading">
      <Group justify="space-between" mb="sm">
        <Title order={2} size="h4" id="emails-heading">
          Emails
        </Title>
        <Guarded allowed={reason === null} reason={reason ?? ''}>
          {(disabled) => (
            <ConfirmButton
              label="Send to customer"
              title="Send the licence to its customer"
              confirmLabel="Send"
              disabled={disabled}
              consequence={`The licence file and a fresh link to the customer portal go to ${licence.licenseeEmail}. If the mail relay is away, the email waits and is tried again.`}
              action={send}
            />
          )}
        </Guarded>
      </Group>
      {reason !== null && write.allowed && (
        <Text size="sm" c="dimmed" mb="sm">
          {reason}
        </Text>
      )}
      <RecordTable
        label="Emails"
        card={{ heading: 'Why', badge: 'Status' }}
        error={emails.error}
        rows={emails.data}
        rowKey={(e) => e.id}
        empty="No email sent yet."
        minWidth={720}
        columns={[
          [
            'To',
            (e) =>
              e.to ?? (
                <Text span c="dimmed" inherit>
                  erased
                </Text>
              ),
          ],
          ['Why', (e) => TRIGGER_WORDS[e.trigger]],
          [
            'Status',
            (e) => (
              <Badge variant="dot" color={STATUS[e.status].color}>
                {STATUS[e.status].word}
              </Badge>
            ),
          ],
          ['Attempts', (e) => e.attempts.toLocaleString()],
          ['Outcome', (e) => <Progress email={e} />],
          [
            'Queued',
            (e) => (
              <>
                <DateTime value={e.createdAt} />
                <Text size="xs" c="dimmed">
                  by {e.createdBy}
                </Text>
              </>
            ),
          ],
        ]}
      />
    </Card>
  );
}
