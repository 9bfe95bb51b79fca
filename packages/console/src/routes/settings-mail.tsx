import { Alert, Button, Card, Code, Group, SimpleGrid, Stack, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { besideField, fieldOf } from '../api/client';
import { useIsAdmin } from '../api/session';
import { mailOff, useSaveMail, useSettings, useTestMail, type MailBody, type MailSettings } from '../api/settings';
import { Field } from '../components/display';
import { ErrorText, Guarded, Loading } from '../components/feedback';

type Name = keyof MailBody;
const FIELDS: Array<{ name: Name; label: string; description: string; rows?: number; maxLength: number }> = [
  { name: 'senderName', label: 'Sender name', description: 'Shown before “via …” in From; by default the organisation’s name', maxLength: 100 },
  { name: 'replyTo', label: 'Reply-to address', description: 'Where the customer’s replies go; empty for none', maxLength: 254 },
  { name: 'subject', label: 'Subject', description: 'By default “Your licence for {{product}}”', maxLength: 200 },
  { name: 'text', label: 'Plain text', description: 'The message for mail readers without HTML', rows: 6, maxLength: 20_000 },
  { name: 'html', label: 'HTML', description: 'The message as mail readers with HTML show it; the values put in are escaped', rows: 6, maxLength: 100_000 },
];

const PLACEHOLDERS: Array<[string, string]> = [
  ['{{licensee}}', 'the customer’s name'],
  ['{{product}}', 'the product’s name'],
  ['{{expiry}}', 'the expiry date, or “never”'],
  ['{{portalLink}}', 'a fresh link to the customer portal'],
  ['{{organisation}}', 'your organisation’s name'],
  ['{{lid}}', 'the licence id'],
];

/** The one value of a field as saved: an empty reply-to is none. */
const savedValue = (name: Name, text: string) => (name === 'replyTo' && text.trim() === '' ? null : text);

/** Settings → Email (DESIGN.md 22): the organisation's licence email, the relay's facts, and a test email to oneself. */
export function MailSettingsCard() {
  const settings = useSettings();
  const admin = useIsAdmin();
  const save = useSaveMail();
  const reset = useSaveMail();
  const test = useTestMail();
  const [draft, setDraft] = useState<Partial<Record<Name, string>>>({});
  const [saved, setSaved] = useState(false);
  const [testedTo, setTestedTo] = useState<string | null>(null);
  if (settings.error) return <ErrorText error={settings.error} />;
  if (!settings.data) return <Loading />;
  const mail = settings.data.mail;
  const testBlocked = admin.allowed ? mailOff(mail) : admin.reason;
  const shown = (name: Name) => draft[name] ?? mail[name] ?? '';
  const changes = Object.fromEntries(
    (Object.entries(draft) as Array<[Name, string]>)
      .filter(([name, text]) => savedValue(name, text) !== mail[name])
      .map(([name, text]) => [name, savedValue(name, text)]),
  ) as MailBody;
  const refused = fieldOf(save.error) ?? fieldOf(reset.error);
  const error = save.error ?? reset.error;
  const errorOf = (name: Name) => (refused === `mail.${name}` ? besideField((error as Error).message) : undefined);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    if (await save.run(changes)) {
      setDraft({});
      setSaved(true);
    }
  };
  const restore = async (name: Name) => {
    setSaved(false);
    if (await reset.run({ [name]: null })) setDraft(({ [name]: _, ...rest }) => rest);
  };

  return (
    <Card withBorder maw={640} component="section" aria-labelledby="mail-heading">
      <form onSubmit={submit} noValidate>
        <Stack gap="sm">
          <div>
            <Title order={2} size="h4" id="mail-heading">
              Email
            </Title>
            <Text size="sm" c="dimmed">
              The email that takes a licence to its customer, with the licence file attached.
            </Text>
          </div>
          <Relay mail={mail} />
          {FIELDS.map((f) => {
            const Input = f.rows ? Textarea : TextInput;
            return (
              <Stack key={f.name} gap={4}>
                <Input
                  label={f.label}
                  description={f.description}
                  maxLength={f.maxLength}
                  {...(f.rows ? { autosize: true, minRows: f.rows, maxRows: 16 } : {})}
                  readOnly={!admin.allowed}
                  value={shown(f.name)}
                  onChange={(e) => setDraft({ ...draft, [f.name]: e.currentTarget.value })}
                  error={errorOf(f.name)}
                  styles={f.rows ? { input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 13 } } : undefined}
                />
                {admin.allowed && (
                  <Group justify="flex-end">
                    <Button
                      size="compact-xs"
                      variant="subtle"
                      aria-label={`Reset to default: ${f.label}`}
                      loading={reset.busy}
                      onClick={() => void restore(f.name)}
                    >
                      Reset to default
                    </Button>
                  </Group>
                )}
              </Stack>
            );
          })}
          <div>
            <Text size="sm" fw={500}>
              Placeholders
            </Text>
            <Text size="sm" c="dimmed" mb={4}>
              Written exactly so in the subject, the plain text or the HTML; the email carries each value in its place.
            </Text>
            <SimpleGrid cols={{ base: 1, sm: 2 }} spacing={4} verticalSpacing={4}>
              {PLACEHOLDERS.map(([name, meaning]) => (
                <Text key={name} size="sm">
                  <Code>{name}</Code> {meaning}
                </Text>
              ))}
            </SimpleGrid>
          </div>
          {!refused && <ErrorText error={error} title="Email settings not saved" />}
          {saved && (
            <Alert color="green" variant="light" role="status">
              Email settings saved.
            </Alert>
          )}
          <ErrorText error={test.error} title="Test email not sent" />
          {testedTo && (
            <Alert color="green" variant="light" role="status">
              Test email sent to {testedTo}: the mail relay accepted it.
            </Alert>
          )}
          <Group>
            <Guarded allowed={admin.allowed} reason={admin.reason}>
              {(disabled) => (
                <Button type="submit" loading={save.busy} disabled={disabled || Object.keys(changes).length === 0}>
                  Save
                </Button>
              )}
            </Guarded>
            <Guarded allowed={testBlocked === null} reason={testBlocked ?? ''}>
              {(disabled) => (
                <Button
                  variant="default"
                  loading={test.busy}
                  disabled={disabled}
                  onClick={async () => {
                    setTestedTo(null);
                    setTestedTo((await test.run())?.value.to ?? null);
                  }}
                >
                  Send test email
                </Button>
              )}
            </Guarded>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

/** What the deployment and the control plane decide: read here, changed by their operators. */
function Relay({ mail }: { mail: MailSettings }) {
  return (
    <SimpleGrid cols={{ base: 1, xs: 2 }} spacing="md" verticalSpacing="xs">
      <Field label="Mail relay">{mail.configured ? 'set up' : 'not set up (the service’s operator sets one up)'}</Field>
      <Field label="Email for this organisation">{mail.enabled ? 'on' : 'switched off by the platform’s operator'}</Field>
      <Field label="Sent from">{mail.from ?? '—'}</Field>
      <Field label="Emails in the last 24 hours">
        {mail.dailyUsed.toLocaleString()} of {mail.dailyLimit.toLocaleString()} allowed
      </Field>
    </SimpleGrid>
  );
}
