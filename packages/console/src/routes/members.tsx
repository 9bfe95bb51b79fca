import { Badge, Button, Group, PasswordInput, Select, SimpleGrid, Stack, Switch, Text, TextInput, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap, type Answer } from '../api/client';
import { key, useIsAdmin, useMe } from '../api/queries';
import { DateTime } from '../components/display';
import { ConfirmButton, Guarded } from '../components/feedback';
import { ModalForm } from '../components/modal-form';
import { RecordTable } from '../components/record-table';

type Member = Answer<'/users', 'get'>[number];
type Role = 'VIEWER' | 'ISSUER' | 'ORG_ADMIN';
const ROLES: Array<{ value: Role; label: string }> = [
  { value: 'VIEWER', label: 'VIEWER: reads everything' },
  { value: 'ISSUER', label: 'ISSUER: also issues licences, edits products and customers' },
  { value: 'ORG_ADMIN', label: 'ORG_ADMIN: also manages members, API tokens and settings' },
];

export default function Members() {
  const admin = useIsAdmin();
  const me = useMe().data;
  const queryClient = useQueryClient();
  const members = useQuery({ queryKey: key('members'), queryFn: () => unwrap(api().GET('/users')) });
  const [editing, setEditing] = useState<Member | 'new' | null>(null);
  const remove = (member: Member) => async () => {
    await unwrap(api().DELETE('/users/{id}', { params: { path: { id: member.id } } }));
    await queryClient.invalidateQueries({ queryKey: key('members') });
  };
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
                <Text size="xs" c="dimmed">
                  {m.username}
                  {m.email && ` · ${m.email}`}
                </Text>
              </>
            ),
          ],
          ['Role', (m) => <Badge variant="default">{m.role}</Badge>],
          ['Active', (m) => <Badge color={m.active ? 'green' : 'gray'} variant="dot">{m.active ? 'active' : 'inactive'}</Badge>],
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
                    onConfirm={remove(m)}
                  />
                </Group>
              ),
          ],
        ]}
      />
      {editing && <MemberForm member={editing === 'new' ? undefined : editing} onClose={() => setEditing(null)} />}
    </Stack>
  );
}

function MemberForm({ member, onClose }: { member?: Member; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [username, setUsername] = useState(member?.username ?? '');
  const [displayName, setDisplayName] = useState(member?.displayName ?? '');
  const [email, setEmail] = useState(member?.email ?? '');
  const [role, setRole] = useState<Role>((member?.role as Role | undefined) ?? 'VIEWER');
  const [active, setActive] = useState(member?.active ?? true);
  const [password, setPassword] = useState('');
  const work = async () => {
    const body = {
      username: username.trim(),
      displayName: displayName.trim() || username.trim(),
      email: email.trim() || null,
      role,
      active,
      ...(password ? { password } : {}),
    };
    if (member) await unwrap(api().PUT('/users/{id}', { params: { path: { id: member.id } }, body }));
    else await unwrap(api().POST('/users', { body }));
    await queryClient.invalidateQueries({ queryKey: key('members') });
  };
  return (
    <ModalForm title={member ? `Edit ${member.displayName}` : 'Add member'} submit={member ? 'Save changes' : 'Add member'} onClose={onClose} work={work}>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput label="Username" required maxLength={64} value={username} onChange={(e) => setUsername(e.currentTarget.value)} description="Letters, digits, . _ @ and -" />
        <TextInput label="Display name" maxLength={200} value={displayName} onChange={(e) => setDisplayName(e.currentTarget.value)} />
        <TextInput label="Email" type="email" maxLength={254} value={email} onChange={(e) => setEmail(e.currentTarget.value)} />
        <PasswordInput
          label={member ? 'New password' : 'Password'}
          description={member ? 'Leave empty to keep theirs' : 'At least 12 characters'}
          required={!member}
          minLength={12}
          maxLength={1024}
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          autoComplete="new-password"
        />
      </SimpleGrid>
      <Select label="Role" data={ROLES} value={role} onChange={(value) => setRole((value ?? role) as Role)} allowDeselect={false} comboboxProps={{ withinPortal: false }} />
      <Switch label="Active" description="An inactive member cannot sign in; their sessions end at once" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />
    </ModalForm>
  );
}
