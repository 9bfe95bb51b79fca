import { Badge, Button, Group, PasswordInput, Select, SimpleGrid, Stack, Switch, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { bound } from '../api/action';
import { useDeleteMember, useMembers, useSaveMember, useUnlinkMember, type Member } from '../api/members';
import { roleName, useIsAdmin, useMe, type Role } from '../api/session';
import { useSso, type SsoConfig } from '../api/sso';
import { DateTime } from '../components/display';
import { ConfirmButton, Guarded } from '../components/feedback';
import { ModalForm, notEmail, useProblems } from '../components/modal-form';
import { RecordTable } from '../components/record-table';

const ROLES: Array<{ value: Role; label: string }> = [
  { value: 'VIEWER', label: 'Viewer: reads everything' },
  { value: 'ISSUER', label: 'Issuer: also issues licences, edits products and customers' },
  { value: 'ORG_ADMIN', label: 'Administrator: also manages members, API tokens, webhooks and settings' },
];

/**
 * The identity provider whose role mapping sets this member's role at each sign-in (DESIGN.md 21):
 * a linked member while single sign-on maps roles, but never a break-glass one, who keeps theirs.
 */
export function roleManagedBy(sso: SsoConfig | null | undefined, member: Member): string | null {
  if (!sso?.enabled || sso.roleClaim === null || !member.ssoLinkedAt || sso.breakGlass.includes(member.username)) return null;
  return sso.displayName;
}

export default function Members() {
  const admin = useIsAdmin();
  const me = useMe().data;
  const members = useMembers();
  // Only an administrator reads the configuration; only an administrator edits roles.
  const sso = useSso(admin.allowed).data;
  const remove = useDeleteMember();
  const unlink = useUnlinkMember();
  const [editing, setEditing] = useState<Member | 'new' | null>(null);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Members</Title>
        <Guarded allowed={admin.allowed} reason={admin.reason}>
          {(disabled) => (
            <Button onClick={() => setEditing('new')} disabled={disabled}>
              Add member
            </Button>
          )}
        </Guarded>
      </Group>
      {!admin.allowed && (
        <Text size="sm" c="dimmed">
          {admin.reason}
        </Text>
      )}
      <RecordTable
        error={members.error}
        label="Members"
        card={{ badge: 'Active', actions: 'Actions' }}
        rows={members.data}
        rowKey={(m) => m.id}
        empty="No member."
        minWidth={900}
        columns={[
          [
            'Name',
            (m) => (
              <>
                <Text fw={500} span>
                  {m.displayName}
                </Text>
                {m.username === me?.username && (
                  <Badge size="xs" variant="light" ml={6}>
                    you
                  </Badge>
                )}
                {m.ssoLinkedAt && (
                  <Badge size="xs" variant="light" color="grape" ml={6} tt="none">
                    Single sign-on
                  </Badge>
                )}
                <Text size="xs" c="dimmed">
                  {m.username}
                  {m.email && ` · ${m.email}`}
                </Text>
              </>
            ),
          ],
          [
            'Role',
            (m) => {
              const managedBy = roleManagedBy(sso, m);
              return (
                <>
                  <Badge variant="default" tt="none">
                    {roleName(m.role)}
                  </Badge>
                  {managedBy && (
                    <Text size="xs" c="dimmed">
                      role managed by {managedBy}
                    </Text>
                  )}
                </>
              );
            },
          ],
          [
            'Active',
            (m) => (
              <Badge color={m.active ? 'green' : 'gray'} variant="dot">
                {m.active ? 'active' : 'inactive'}
              </Badge>
            ),
          ],
          ['Last sign-in', (m) => <DateTime value={m.lastLoginAt} />],
          [
            'Actions',
            (m) =>
              admin.allowed && (
                <Group gap={6}>
                  <Button size="compact-sm" variant="light" onClick={() => setEditing(m)} aria-label={`Edit ${m.username}`}>
                    Edit
                  </Button>
                  <ConfirmButton
                    compact
                    label="Delete"
                    title={`Delete ${m.displayName}`}
                    color="red"
                    consequence={`${m.username} can no longer sign in and their sessions end. Their name stays in the activity trail. The service refuses to delete the last active administrator.`}
                    action={bound(remove, m.id)}
                  />
                  {m.ssoLinkedAt && (
                    <ConfirmButton
                      compact
                      label="Unlink single sign-on"
                      title={`Unlink ${m.displayName} from single sign-on`}
                      consequence={`${m.username}'s single sign-on sessions end. Their next single sign-on links them again only if they have neither a password nor a passkey.`}
                      action={bound(unlink, m.id)}
                    />
                  )}
                </Group>
              ),
          ],
        ]}
      />
      {editing && (
        <MemberForm
          member={editing === 'new' ? undefined : editing}
          managedBy={editing === 'new' ? null : roleManagedBy(sso, editing)}
          onClose={() => setEditing(null)}
        />
      )}
    </Stack>
  );
}

function MemberForm({ member, managedBy = null, onClose }: { member?: Member; managedBy?: string | null; onClose: () => void }) {
  const save = useSaveMember(member?.id);
  const [username, setUsername] = useState(member?.username ?? '');
  const [displayName, setDisplayName] = useState(member?.displayName ?? '');
  const [email, setEmail] = useState(member?.email ?? '');
  const [role, setRole] = useState<Role>((member?.role as Role | undefined) ?? 'VIEWER');
  const [active, setActive] = useState(member?.active ?? true);
  const [password, setPassword] = useState('');
  const problems = useProblems({
    username: !username.trim()
      ? 'Enter a username'
      : !/^[A-Za-z0-9._@-]{1,64}$/.test(username.trim()) && 'Letters, digits, dot, underscore, @ and dash, at most 64 characters',
    email: notEmail(email),
    password: (member ? password !== '' : true) && password.length < 12 && 'At least 12 characters',
  });
  const submit = () =>
    problems.check() &&
    save.run({
      username: username.trim(),
      displayName: displayName.trim() || username.trim(),
      email: email.trim() || null,
      role,
      active,
      ...(password ? { password } : {}),
    });
  return (
    <ModalForm
      title={member ? `Edit ${member.displayName}` : 'Add member'}
      submit={member ? 'Save changes' : 'Add member'}
      onClose={onClose}
      action={save}
      onSubmit={submit}
    >
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput
          label="Username"
          required
          maxLength={64}
          value={username}
          onChange={(e) => setUsername(e.currentTarget.value)}
          description="Letters, digits, . _ @ and -"
          error={problems.of('username')}
        />
        <TextInput label="Display name" maxLength={200} value={displayName} onChange={(e) => setDisplayName(e.currentTarget.value)} />
        <TextInput label="Email" type="email" maxLength={254} value={email} onChange={(e) => setEmail(e.currentTarget.value)} error={problems.of('email')} />
        <PasswordInput
          label={member ? 'New password' : 'Password'}
          description={member ? 'Leave empty to keep theirs' : 'At least 12 characters'}
          required={!member}
          minLength={12}
          maxLength={1024}
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          autoComplete="new-password"
          error={problems.of('password')}
        />
      </SimpleGrid>
      <Select
        label="Role"
        data={ROLES}
        value={role}
        onChange={(value) => setRole((value ?? role) as Role)}
        allowDeselect={false}
        comboboxProps={{ withinPortal: false }}
        description={managedBy ? `Role managed by ${managedBy}: their next sign-in with it sets the role its rules give, whatever you choose here.` : undefined}
      />
      <Switch
        label="Active"
        description="An inactive member cannot sign in; their sessions end at once"
        checked={active}
        onChange={(e) => setActive(e.currentTarget.checked)}
      />
    </ModalForm>
  );
}
