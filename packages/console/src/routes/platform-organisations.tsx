import { Anchor, Badge, Button, Divider, Group, NumberInput, PasswordInput, Progress, Select, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap } from '../api/client';
import { platformApi, usePlatformMe, type Organisation } from '../api/platform';
import { DateTime } from '../components/display';
import { ConfirmButton, Guarded } from '../components/feedback';
import { ModalForm } from '../components/modal-form';
import { RecordTable } from '../components/record-table';
import { useZones } from '../components/zones';

const ORGS = ['platform', 'organisations'];
type Role = 'VIEWER' | 'ISSUER' | 'ORG_ADMIN';

function useIsPlatformAdmin() {
  const me = usePlatformMe().data;
  const allowed = me?.platformRole === 'PLATFORM_ADMIN';
  return { allowed, reason: allowed ? '' : `Only a PLATFORM_ADMIN changes organisations; your role is ${me?.platformRole ?? '…'}.` };
}

function PlanUsage({ org }: { org: Organisation }) {
  const used = org.counts.countingLicences;
  if (org.planLimit === null) return <Text size="sm">{used.toLocaleString()} <Text span c="dimmed" size="xs">(no limit)</Text></Text>;
  const share = org.planLimit === 0 ? 100 : Math.min(100, (used / org.planLimit) * 100);
  return (
    <Stack gap={2} miw={120}>
      <Text size="sm">
        {used.toLocaleString()} of {org.planLimit.toLocaleString()}
      </Text>
      <Progress value={share} color={share >= 100 ? 'red' : share >= 80 ? 'orange' : 'indigo'} size="sm" aria-label={`${org.name}: ${used} of ${org.planLimit} licences used`} />
    </Stack>
  );
}

const plural = (n: number, word: string) => `${n.toLocaleString()} ${word}${n === 1 ? '' : 's'}`;

/** What an organisation holds, one count a line: a column each would push its actions off a 1,280 px screen. */
function Counts({ counts }: { counts: Organisation['counts'] }) {
  return (
    <Text size="sm" style={{ whiteSpace: 'nowrap' }}>
      {plural(counts.licences, 'licence')}
      <br />
      {plural(counts.products, 'product')}
      <br />
      {plural(counts.members, 'member')}
    </Text>
  );
}

export default function PlatformOrganisations() {
  const admin = useIsPlatformAdmin();
  const queryClient = useQueryClient();
  const orgs = useQuery({ queryKey: ORGS, queryFn: () => unwrap(platformApi.GET('/platform/api/organisations')) });
  const [creating, setCreating] = useState(false);
  const [planOf, setPlanOf] = useState<Organisation | null>(null);
  const [memberOf, setMemberOf] = useState<Organisation | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['platform'] });
  const setSuspended = (org: Organisation, suspended: boolean) => async () => {
    await unwrap(platformApi.PUT('/platform/api/organisations/{slug}', { params: { path: { slug: org.slug } }, body: { suspended } }));
    await refresh();
  };
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Organisations</Title>
        <Guarded allowed={admin.allowed} reason={admin.reason}>
          {(disabled) => (
            <Button onClick={() => setCreating(true)} disabled={disabled}>
              New organisation
            </Button>
          )}
        </Guarded>
      </Group>
      {!admin.allowed && <Text size="sm" c="dimmed">{admin.reason}</Text>}
      <RecordTable
        label="Organisations"
        card={{ badge: 'State', actions: 'Actions' }}
        error={orgs.error}
        rows={orgs.data}
        rowKey={(o) => o.slug}
        empty="No organisation yet."
        minWidth={1000}
        columns={[
          [
            'Organisation',
            (o) => (
              <>
                <Text fw={500}>{o.name}</Text>
                <Group gap={6}>
                  <Text size="xs" c="dimmed" ff="monospace">
                    {o.slug}
                  </Text>
                  <Anchor href={`/o/${o.slug}/`} size="xs">
                    Open console
                  </Anchor>
                </Group>
              </>
            ),
          ],
          ['Plan', (o) => <PlanUsage org={o} />],
          ['Holds', (o) => <Counts counts={o.counts} />],
          ['State', (o) => <Badge variant="dot" color={o.suspended ? 'red' : 'green'}>{o.suspended ? 'suspended' : 'active'}</Badge>],
          ['Created', (o) => <DateTime value={o.createdAt} withTime={false} />],
          [
            'Actions',
            (o) =>
              admin.allowed && (
                <Group gap={6}>
                  <Button size="compact-sm" variant="light" onClick={() => setPlanOf(o)} aria-label={`Change plan of ${o.name}`}>
                    Change plan
                  </Button>
                  <Button size="compact-sm" variant="light" onClick={() => setMemberOf(o)} aria-label={`Add member to ${o.name}`}>
                    Add member
                  </Button>
                  {o.suspended ? (
                    <ConfirmButton compact label="Resume" title={`Resume ${o.name}`} consequence="Its members sign in again and its tokens work again; nothing needs re-issuing." onConfirm={setSuspended(o, false)} />
                  ) : (
                    <ConfirmButton
                      compact
                      label="Suspend"
                      color="red"
                      title={`Suspend ${o.name}`}
                      consequence="Its members cannot sign in and its sessions and API tokens are refused with “organisation suspended”. Installed applications keep checking in: they belong to its customers. Resuming restores everything."
                      onConfirm={setSuspended(o, true)}
                    />
                  )}
                </Group>
              ),
          ],
        ]}
      />
      {creating && <NewOrganisation onClose={() => setCreating(false)} onDone={refresh} />}
      {planOf && <ChangePlan org={planOf} onClose={() => setPlanOf(null)} onDone={refresh} />}
      {memberOf && <AddMember org={memberOf} onClose={() => setMemberOf(null)} onDone={refresh} />}
    </Stack>
  );
}

function NewOrganisation({ onClose, onDone }: { onClose: () => void; onDone: () => Promise<unknown> }) {
  const zones = useZones();
  const [slug, setSlug] = useState('');
  const [name, setName] = useState('');
  const [planLimit, setPlanLimit] = useState<number | ''>('');
  const [timezone, setTimezone] = useState<string | null>('UTC');
  const [username, setUsername] = useState('admin');
  const [password, setPassword] = useState('');
  // The organisation and its first administrator are two requests; a failure of the second leaves the first done and says so.
  const work = async () => {
    await unwrap(platformApi.POST('/platform/api/organisations', { body: { slug, name, planLimit: planLimit === '' ? null : planLimit, timezone: timezone ?? 'UTC' } }));
    await onDone();
    try {
      await unwrap(platformApi.POST('/platform/api/organisations/{slug}/members', { params: { path: { slug } }, body: { username, password, role: 'ORG_ADMIN' } }));
    } catch (e) {
      throw new Error(`${slug} was created, but its administrator was not: ${(e as Error).message}. Use Add member.`);
    }
    await onDone();
  };
  return (
    <ModalForm title="New organisation" submit="Create organisation" onClose={onClose} work={work}>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput label="Name" required maxLength={200} value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
        <TextInput label="Slug" description="In its console's address: /o/<slug>/" required maxLength={63} value={slug} onChange={(e) => setSlug(e.currentTarget.value)} error={slug && !/^[a-z0-9][a-z0-9-]{1,62}$/.test(slug) ? '2 to 63 of a-z, 0-9 and -, not starting with -' : undefined} />
        <NumberInput label="Plan limit" description="Licences that may count at once; empty = no limit" min={0} allowDecimal={false} value={planLimit} onChange={(v) => setPlanLimit(typeof v === 'number' ? v : '')} />
        <Select label="Timezone" data={zones} value={timezone} onChange={setTimezone} searchable allowDeselect={false} limit={50} comboboxProps={{ withinPortal: false }} />
      </SimpleGrid>
      <Divider label="First administrator" labelPosition="left" />
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput label="Username" required maxLength={64} value={username} onChange={(e) => setUsername(e.currentTarget.value)} />
        <PasswordInput label="Password" description="At least 12 characters; give it to them safely" required minLength={12} value={password} onChange={(e) => setPassword(e.currentTarget.value)} autoComplete="new-password" />
      </SimpleGrid>
    </ModalForm>
  );
}

function ChangePlan({ org, onClose, onDone }: { org: Organisation; onClose: () => void; onDone: () => Promise<unknown> }) {
  const [planLimit, setPlanLimit] = useState<number | ''>(org.planLimit ?? '');
  const work = async () => {
    await unwrap(platformApi.PUT('/platform/api/organisations/{slug}', { params: { path: { slug: org.slug } }, body: { planLimit: planLimit === '' ? null : planLimit } }));
    await onDone();
  };
  const below = planLimit !== '' && planLimit < org.counts.countingLicences;
  return (
    <ModalForm title={`Change plan of ${org.name}`} submit="Save plan" onClose={onClose} work={work}>
      <NumberInput label="Plan limit" description={`Licences that may count at once; ${org.counts.countingLicences.toLocaleString()} count now. Empty = no limit.`} min={0} allowDecimal={false} value={planLimit} onChange={(v) => setPlanLimit(typeof v === 'number' ? v : '')} data-autofocus />
      {below && <Text size="sm">Below the current count: no licence changes, but issuing, renewing, reinstating and restoring are refused until the count falls under the limit.</Text>}
    </ModalForm>
  );
}

function AddMember({ org, onClose, onDone }: { org: Organisation; onClose: () => void; onDone: () => Promise<unknown> }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('ORG_ADMIN');
  const work = async () => {
    await unwrap(platformApi.POST('/platform/api/organisations/{slug}/members', { params: { path: { slug: org.slug } }, body: { username, password, role } }));
    await onDone();
  };
  return (
    <ModalForm title={`Add member to ${org.name}`} submit="Add member" onClose={onClose} work={work}>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput label="Username" required maxLength={64} value={username} onChange={(e) => setUsername(e.currentTarget.value)} data-autofocus />
        <PasswordInput label="Password" description="At least 12 characters" required minLength={12} value={password} onChange={(e) => setPassword(e.currentTarget.value)} autoComplete="new-password" />
      </SimpleGrid>
      <Select label="Role" data={['ORG_ADMIN', 'ISSUER', 'VIEWER']} value={role} onChange={(v) => setRole((v ?? role) as Role)} allowDeselect={false} comboboxProps={{ withinPortal: false }} />
    </ModalForm>
  );
}
