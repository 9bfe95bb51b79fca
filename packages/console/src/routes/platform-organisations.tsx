import {
  Anchor,
  Badge,
  Button,
  Divider,
  Group,
  NumberInput,
  PasswordInput,
  Progress,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useState } from 'react';
import { bound } from '../api/action';
import { inWords } from '../api/client';
import { useAddOrganisationMember, useCreateOrganisation, useOrganisations, usePlatformMe, useUpdateOrganisation, type Organisation } from '../api/platform';
import { ROLE_NAMES, roleName, type Role } from '../api/session';
import { DateTime } from '../components/display';
import { ConfirmButton, ErrorText, Guarded } from '../components/feedback';
import { ModalForm, useProblems } from '../components/modal-form';
import { RecordTable } from '../components/record-table';
import { useZones } from '../components/zones';

const ROLE_CHOICES = (['ORG_ADMIN', 'ISSUER', 'VIEWER'] as const).map((value) => ({ value, label: ROLE_NAMES[value]! }));
const SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/;

function useIsPlatformAdmin() {
  const me = usePlatformMe().data;
  const allowed = me?.platformRole === 'PLATFORM_ADMIN';
  return { allowed, reason: allowed ? '' : `Only a platform administrator changes organisations; your role is ${roleName(me?.platformRole)}.` };
}

const plural = (n: number, word: string) => `${n.toLocaleString()} ${word}${n === 1 ? '' : 's'}`;

function PlanUsage({ org }: { org: Organisation }) {
  const used = org.counts.countingLicences;
  const share = org.planLimit === null ? 0 : org.planLimit === 0 ? 100 : Math.min(100, (used / org.planLimit) * 100);
  return (
    <Stack gap={2} miw={120}>
      {org.planLimit === null ? (
        <Text size="sm">
          {used.toLocaleString()}{' '}
          <Text span c="dimmed" size="xs">
            (no limit)
          </Text>
        </Text>
      ) : (
        <>
          <Text size="sm">
            {used.toLocaleString()} of {org.planLimit.toLocaleString()}
          </Text>
          <Progress
            value={share}
            color={share >= 100 ? 'red' : share >= 80 ? 'orange' : 'indigo'}
            size="sm"
            aria-label={`${org.name}: ${used} of ${org.planLimit} licences used`}
          />
        </>
      )}
      {/* Trials never count against the plan (DESIGN.md 18); their own limit is beside it. */}
      <Text size="xs" c="dimmed">
        {org.trialLimit === null
          ? `${plural(org.counts.trials, 'active trial')}, no trial limit`
          : `${org.counts.trials.toLocaleString()} of ${plural(org.trialLimit, 'active trial')}`}
      </Text>
    </Stack>
  );
}

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
  const orgs = useOrganisations();
  const update = useUpdateOrganisation();
  const mail = useUpdateOrganisation();
  const [creating, setCreating] = useState(false);
  const [planOf, setPlanOf] = useState<Organisation | null>(null);
  const [memberOf, setMemberOf] = useState<Organisation | null>(null);
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
      {!admin.allowed && (
        <Text size="sm" c="dimmed">
          {admin.reason}
        </Text>
      )}
      <ErrorText error={mail.error} title="Mail not switched" />
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
          [
            'State',
            (o) => (
              <Stack gap={6} align="flex-start">
                <Badge variant="dot" color={o.suspended ? 'red' : 'green'}>
                  {o.suspended ? 'suspended' : 'active'}
                </Badge>
                {/* Licence emails (DESIGN.md 22): off refuses sending and holds what waits. */}
                <Switch
                  size="xs"
                  label="Mail enabled"
                  styles={{ label: { whiteSpace: 'nowrap' } }}
                  checked={o.mailEnabled}
                  disabled={!admin.allowed || mail.busy}
                  onChange={(e) => void mail.run({ slug: o.slug, body: { mailEnabled: e.currentTarget.checked } })}
                />
              </Stack>
            ),
          ],
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
                    <ConfirmButton
                      compact
                      label="Resume"
                      title={`Resume ${o.name}`}
                      consequence="Its members sign in again and its tokens work again; nothing needs re-issuing."
                      action={bound(update, { slug: o.slug, body: { suspended: false } })}
                    />
                  ) : (
                    <ConfirmButton
                      compact
                      label="Suspend"
                      color="red"
                      title={`Suspend ${o.name}`}
                      consequence="Its members cannot sign in and its sessions and API tokens are refused with “organisation suspended”. Installed applications keep checking in: they belong to its customers. Resuming restores everything."
                      action={bound(update, { slug: o.slug, body: { suspended: true } })}
                    />
                  )}
                </Group>
              ),
          ],
        ]}
      />
      {creating && <NewOrganisation onClose={() => setCreating(false)} />}
      {planOf && <ChangePlan org={planOf} onClose={() => setPlanOf(null)} />}
      {memberOf && <AddMember org={memberOf} onClose={() => setMemberOf(null)} />}
    </Stack>
  );
}

function NewOrganisation({ onClose }: { onClose: () => void }) {
  const zones = useZones();
  const create = useCreateOrganisation();
  const addMember = useAddOrganisationMember();
  const [slug, setSlug] = useState('');
  const [name, setName] = useState('');
  const [planLimit, setPlanLimit] = useState<number | ''>('');
  const [trialLimit, setTrialLimit] = useState<number | ''>('');
  const [timezone, setTimezone] = useState<string | null>('UTC');
  const [username, setUsername] = useState('admin');
  const [password, setPassword] = useState('');
  const problems = useProblems({
    name: !name.trim() && 'Enter the organisation’s name',
    slug: !SLUG.test(slug) && '2 to 63 of a-z, 0-9 and -, not starting with -',
    username: !username.trim() && 'Enter a username',
    password: password.length < 12 && 'At least 12 characters',
  });
  // The organisation and its first administrator are two requests; a failure of the second leaves the first done and says so.
  const memberRefused =
    addMember.error instanceof Error
      ? new Error(`${slug} was created, but its administrator was not: ${inWords(addMember.error.message)}. Use Add member.`)
      : null;
  const submit = async () => {
    if (!problems.check()) return false;
    const limits = { planLimit: planLimit === '' ? null : planLimit, trialLimit: trialLimit === '' ? null : trialLimit };
    if (!(await create.run({ slug, name, ...limits, timezone: timezone ?? 'UTC' }))) return false;
    return addMember.run({ slug, body: { username, password, role: 'ORG_ADMIN' } });
  };
  return (
    <ModalForm
      title="New organisation"
      submit="Create organisation"
      onClose={onClose}
      action={{ busy: create.busy || addMember.busy, error: create.error ?? memberRefused }}
      onSubmit={submit}
    >
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput
          label="Name"
          required
          maxLength={200}
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          error={problems.of('name')}
          data-autofocus
        />
        <TextInput
          label="Slug"
          description="In its console's address: /o/<slug>/"
          required
          maxLength={63}
          value={slug}
          onChange={(e) => setSlug(e.currentTarget.value)}
          error={problems.of('slug') ?? (slug && !SLUG.test(slug) ? '2 to 63 of a-z, 0-9 and -, not starting with -' : undefined)}
        />
        <NumberInput
          label="Plan limit"
          description="Licences that may count at once; empty = no limit"
          min={0}
          allowDecimal={false}
          value={planLimit}
          onChange={(v) => setPlanLimit(typeof v === 'number' ? v : '')}
        />
        <NumberInput
          label="Trial limit"
          description="Active trials it may hold at once; empty = no limit"
          min={0}
          max={1_000_000_000}
          allowDecimal={false}
          value={trialLimit}
          onChange={(v) => setTrialLimit(typeof v === 'number' ? v : '')}
        />
        <Select
          label="Timezone"
          data={zones}
          value={timezone}
          onChange={setTimezone}
          searchable
          allowDeselect={false}
          limit={50}
          comboboxProps={{ withinPortal: false }}
        />
      </SimpleGrid>
      <Divider label="First administrator" labelPosition="left" />
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput
          label="Username"
          required
          maxLength={64}
          value={username}
          onChange={(e) => setUsername(e.currentTarget.value)}
          error={problems.of('username')}
        />
        <PasswordInput
          label="Password"
          description="At least 12 characters; give it to them safely"
          required
          minLength={12}
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          error={problems.of('password')}
          autoComplete="new-password"
        />
      </SimpleGrid>
    </ModalForm>
  );
}

function ChangePlan({ org, onClose }: { org: Organisation; onClose: () => void }) {
  const update = useUpdateOrganisation();
  const [planLimit, setPlanLimit] = useState<number | ''>(org.planLimit ?? '');
  const [trialLimit, setTrialLimit] = useState<number | ''>(org.trialLimit ?? '');
  const below = planLimit !== '' && planLimit < org.counts.countingLicences;
  const trialsBelow = trialLimit !== '' && trialLimit < org.counts.trials;
  return (
    <ModalForm
      title={`Change plan of ${org.name}`}
      submit="Save plan"
      onClose={onClose}
      action={update}
      onSubmit={() =>
        update.run({ slug: org.slug, body: { planLimit: planLimit === '' ? null : planLimit, trialLimit: trialLimit === '' ? null : trialLimit } })
      }
    >
      <NumberInput
        label="Plan limit"
        description={`Licences that may count at once; ${org.counts.countingLicences.toLocaleString()} count now. Empty = no limit.`}
        min={0}
        allowDecimal={false}
        value={planLimit}
        onChange={(v) => setPlanLimit(typeof v === 'number' ? v : '')}
        data-autofocus
      />
      {below && (
        <Text size="sm">
          Below the current count: no licence changes, but issuing, renewing, reinstating and restoring are refused until the count falls under the limit.
        </Text>
      )}
      <NumberInput
        label="Trial limit"
        description={`Active trials it may hold at once, which the plan never counts; ${plural(org.counts.trials, 'trial')} now. Empty = no limit.`}
        min={0}
        max={1_000_000_000}
        allowDecimal={false}
        value={trialLimit}
        onChange={(v) => setTrialLimit(typeof v === 'number' ? v : '')}
      />
      {trialsBelow && (
        <Text size="sm">Below the current count: no trial changes, but its applications cannot start new trials until the count falls under the limit.</Text>
      )}
    </ModalForm>
  );
}

function AddMember({ org, onClose }: { org: Organisation; onClose: () => void }) {
  const add = useAddOrganisationMember();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('ORG_ADMIN');
  const problems = useProblems({ username: !username.trim() && 'Enter a username', password: password.length < 12 && 'At least 12 characters' });
  return (
    <ModalForm
      title={`Add member to ${org.name}`}
      submit="Add member"
      onClose={onClose}
      action={add}
      onSubmit={() => problems.check() && add.run({ slug: org.slug, body: { username, password, role } })}
    >
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput
          label="Username"
          required
          maxLength={64}
          value={username}
          onChange={(e) => setUsername(e.currentTarget.value)}
          error={problems.of('username')}
          data-autofocus
        />
        <PasswordInput
          label="Password"
          description="At least 12 characters"
          required
          minLength={12}
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          error={problems.of('password')}
          autoComplete="new-password"
        />
      </SimpleGrid>
      <Select
        label="Role"
        data={ROLE_CHOICES}
        value={role}
        onChange={(v) => setRole((v ?? role) as Role)}
        allowDeselect={false}
        comboboxProps={{ withinPortal: false }}
      />
    </ModalForm>
  );
}
