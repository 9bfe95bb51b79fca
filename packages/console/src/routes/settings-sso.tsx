import { Alert, Button, Card, Checkbox, Group, PasswordInput, Select, Stack, Switch, TagsInput, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { useMembers } from '../api/members';
import { roleName, useIsAdmin } from '../api/session';
import { useRemoveSso, useSaveSso, useSso, useTestSso, type SsoBody, type SsoConfig, type SsoTest } from '../api/sso';
import { CopyBox, DateTime } from '../components/display';
import { ConfirmButton, ErrorText, Guarded, Loading } from '../components/feedback';

type Rule = { value: string; role: 'ORG_ADMIN' | 'ISSUER' | 'VIEWER' };
const ROLE_OPTIONS = (['VIEWER', 'ISSUER', 'ORG_ADMIN'] as const).map((r) => ({ value: r, label: roleName(r) }));
const REFUSE = 'REFUSE';

interface Draft {
  displayName: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  allowedDomains: string[];
  roleClaim: string;
  roleRules: Rule[];
  defaultRole: string;
  enabled: boolean;
  jitProvisioning: boolean;
  enforce: boolean;
  breakGlass: string[];
}

const draftOf = (c: SsoConfig | null): Draft => ({
  displayName: c?.displayName ?? '',
  issuer: c?.issuer ?? '',
  clientId: c?.clientId ?? '',
  clientSecret: '',
  scopes: c?.scopes ?? ['openid', 'email', 'profile'],
  allowedDomains: c?.allowedDomains ?? [],
  roleClaim: c?.roleClaim ?? '',
  roleRules: (c?.roleRules ?? []) as Rule[],
  defaultRole: c ? (c.defaultRole ?? REFUSE) : 'VIEWER',
  enabled: c?.enabled ?? true,
  jitProvisioning: c?.jitProvisioning ?? false,
  enforce: c?.enforce ?? false,
  breakGlass: c?.breakGlass ?? [],
});

function bodyOf(d: Draft): SsoBody {
  return {
    displayName: d.displayName.trim(),
    issuer: d.issuer.trim(),
    clientId: d.clientId.trim(),
    ...(d.clientSecret ? { clientSecret: d.clientSecret } : {}),
    scopes: d.scopes,
    allowedDomains: d.allowedDomains.map((x) => x.trim().toLowerCase()),
    roleClaim: d.roleClaim.trim() === '' ? null : d.roleClaim.trim(),
    roleRules: d.roleRules,
    defaultRole: d.defaultRole === REFUSE ? null : (d.defaultRole as Rule['role']),
    enabled: d.enabled,
    jitProvisioning: d.jitProvisioning,
    enforce: d.enforce,
    breakGlass: d.breakGlass,
  };
}

/** DESIGN.md 21: Settings → Single sign-on, an administrator's. */
export function SingleSignOn() {
  const admin = useIsAdmin();
  const config = useSso(admin.allowed);
  if (!admin.allowed) return null;
  if (config.error) return <ErrorText error={config.error} />;
  if (config.data === undefined) return <Loading />;
  return <SsoForm config={config.data} />;
}

function SsoForm({ config }: { config: SsoConfig | null }) {
  const [draft, setDraft] = useState(() => draftOf(config));
  useEffect(() => setDraft(draftOf(config)), [config]);
  const save = useSaveSso();
  const test = useTestSso();
  const remove = useRemoveSso();
  const members = useMembers();
  const [saved, setSaved] = useState(false);
  const [tested, setTested] = useState<SsoTest | null>(null);
  const runTest = async () => setTested((await test.run())?.value ?? null);
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => {
    setSaved(false);
    setDraft((d) => ({ ...d, [k]: v }));
  };
  const admins = (members.data ?? []).filter((m) => m.role === 'ORG_ADMIN' && m.active).map((m) => m.username);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (await save.run(bodyOf(draft))) setSaved(true);
  };
  const rule = (i: number, change: Partial<Rule>) =>
    set(
      'roleRules',
      draft.roleRules.map((r, j) => (j === i ? { ...r, ...change } : r)),
    );
  const verified = config?.verifiedAt != null;
  const attempt = config?.lastAttempt;
  return (
    <Card withBorder maw={640} component="section" aria-labelledby="sso-heading">
      <form onSubmit={submit}>
        <Stack gap="sm">
          <div>
            <Title order={2} size="h4" id="sso-heading">
              Single sign-on
            </Title>
            <Text size="sm" c="dimmed">
              Members sign in through your OpenID Connect identity provider (Keycloak, Entra ID, Okta, Google Workspace). Register the redirect URI below as the
              client&apos;s redirect URI there.
            </Text>
          </div>
          <Stack gap={4}>
            <Text size="sm" fw={500}>
              Redirect URI
            </Text>
            <CopyBox
              value={config?.redirectUri ?? `${window.location.origin}/o/${window.location.pathname.split('/')[2]}/api/sso/callback`}
              label="Redirect URI"
            />
          </Stack>
          <TextInput
            label="Name on the sign-in page"
            required
            maxLength={64}
            value={draft.displayName}
            onChange={(e) => set('displayName', e.currentTarget.value)}
            description="The button says “Sign in with” this name."
          />
          <TextInput
            label="Issuer URL"
            required
            maxLength={512}
            value={draft.issuer}
            onChange={(e) => set('issuer', e.currentTarget.value)}
            placeholder="https://idp.example.com/realms/staff"
          />
          <Group grow align="flex-start" wrap="wrap">
            <TextInput label="Client ID" required maxLength={255} value={draft.clientId} onChange={(e) => set('clientId', e.currentTarget.value)} miw={220} />
            <PasswordInput
              label="Client secret"
              required={!config}
              maxLength={1024}
              value={draft.clientSecret}
              onChange={(e) => set('clientSecret', e.currentTarget.value)}
              description={config ? 'Stored. Leave empty to keep it.' : undefined}
              miw={220}
              autoComplete="off"
            />
          </Group>
          <TagsInput
            label="Scopes"
            value={draft.scopes}
            onChange={(v) => set('scopes', v)}
            description="Press Enter after each; openid is needed."
            maxTags={20}
          />
          <TagsInput
            label="Allowed email domains"
            value={draft.allowedDomains}
            onChange={(v) => set('allowedDomains', v)}
            description="Only people whose verified email is at one of these domains (exactly) sign in."
            maxTags={50}
          />
          <TextInput
            label="Role claim"
            maxLength={128}
            value={draft.roleClaim}
            onChange={(e) => set('roleClaim', e.currentTarget.value)}
            description="A claim name or path such as groups or realm_access.roles; empty: roles are not mapped."
          />
          {draft.roleClaim.trim() !== '' && (
            <Stack gap="xs" role="group" aria-label="Role rules">
              {draft.roleRules.map((r, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: rules have no id of their own; their order is their meaning
                <Group key={i} align="flex-end" wrap="wrap">
                  <TextInput
                    label="Claim value"
                    value={r.value}
                    maxLength={256}
                    onChange={(e) => rule(i, { value: e.currentTarget.value })}
                    style={{ flex: 1 }}
                    miw={180}
                  />
                  <Select
                    label="Role"
                    data={ROLE_OPTIONS}
                    value={r.role}
                    onChange={(v) => v && rule(i, { role: v as Rule['role'] })}
                    allowDeselect={false}
                    w={180}
                  />
                  <Button
                    variant="subtle"
                    color="red"
                    onClick={() =>
                      set(
                        'roleRules',
                        draft.roleRules.filter((_, j) => j !== i),
                      )
                    }
                  >
                    Remove rule
                  </Button>
                </Group>
              ))}
              <Group>
                <Button
                  variant="default"
                  size="xs"
                  onClick={() => set('roleRules', [...draft.roleRules, { value: '', role: 'VIEWER' }])}
                  disabled={draft.roleRules.length >= 50}
                >
                  Add rule
                </Button>
              </Group>
            </Stack>
          )}
          <Select
            label="Role when no rule matches"
            data={[...ROLE_OPTIONS, { value: REFUSE, label: 'Refuse sign-in' }]}
            value={draft.defaultRole}
            onChange={(v) => v && set('defaultRole', v)}
            allowDeselect={false}
            w={260}
            maw="100%"
          />
          <Switch label="Enabled" checked={draft.enabled} onChange={(e) => set('enabled', e.currentTarget.checked)} />
          <Switch label="Create members at first sign-in" checked={draft.jitProvisioning} onChange={(e) => set('jitProvisioning', e.currentTarget.checked)} />
          <Guarded allowed={verified} reason="An administrator must sign in once with single sign-on before it can be required.">
            {(disabled) => (
              <Switch
                label="Require single sign-on"
                description="Passwords and passkeys then work only for the break-glass administrators."
                checked={draft.enforce}
                disabled={disabled}
                onChange={(e) => set('enforce', e.currentTarget.checked)}
              />
            )}
          </Guarded>
          <Checkbox.Group
            label="Break-glass administrators"
            description="Administrators who may still sign in with a password or passkey while single sign-on is required (at most 10)."
            value={draft.breakGlass}
            onChange={(v) => set('breakGlass', v)}
          >
            <Group gap="md" mt={6}>
              {admins.map((username) => (
                <Checkbox key={username} value={username} label={username} disabled={!draft.breakGlass.includes(username) && draft.breakGlass.length >= 10} />
              ))}
            </Group>
          </Checkbox.Group>
          <ErrorText error={save.error} title="Single sign-on not saved" />
          {saved && !save.error && (
            <Alert color="green" variant="light" role="status">
              Single sign-on saved.
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={save.busy}>
              Save single sign-on
            </Button>
            {config && (
              <>
                <Button variant="default" loading={test.busy} onClick={() => void runTest()}>
                  Test connection
                </Button>
                <ConfirmButton
                  label="Remove single sign-on"
                  title="Remove single sign-on?"
                  color="red"
                  consequence="Members sign in with passwords and passkeys only; every member's link to the identity provider is removed and single sign-on sessions end."
                  action={remove}
                />
              </>
            )}
          </Group>
          <ErrorText error={test.error} title="Connection not tested" />
          {tested && <TestOutcome result={tested} />}
          {attempt && (
            <Text size="sm" c="dimmed">
              Last attempt <DateTime value={attempt.at} />:{' '}
              {attempt.outcome === 'SIGNED_IN' ? `${attempt.member} signed in as ${roleName(attempt.role ?? undefined)}` : `refused (${attempt.outcome})`}
              {attempt.emailDomain ? `, from ${attempt.emailDomain}` : ''}.
            </Text>
          )}
        </Stack>
      </form>
    </Card>
  );
}

function TestOutcome({ result }: { result: SsoTest }) {
  return (
    <Alert
      color={result.ok ? 'green' : 'red'}
      variant="light"
      role="status"
      title={result.ok ? 'The identity provider answers' : 'The identity provider cannot be used yet'}
    >
      <Stack gap={4}>
        {result.ok && (
          <Text size="sm">
            {result.signingKeys} signing {result.signingKeys === 1 ? 'key' : 'keys'}; PKCE S256{' '}
            {result.pkceS256 === null ? 'not advertised' : result.pkceS256 ? 'offered' : 'not offered'}.
          </Text>
        )}
        {result.problems.map((p) => (
          <Text size="sm" key={p.code}>
            {p.severity === 'warning' ? 'Warning: ' : ''}
            {p.message}
          </Text>
        ))}
      </Stack>
    </Alert>
  );
}
