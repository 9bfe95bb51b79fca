import { Anchor, Badge, Button, Card, Code, Group, PasswordInput, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { bound } from '../../api/action';
import { useChangeIntegration, useDeleteIntegration, useIntegration, type Integration, type Mapping } from '../../api/integrations';
import { useProducts, type Product } from '../../api/products';
import { useIsAdmin } from '../../api/session';
import { CopyBox, DateTime, days, Field } from '../../components/display';
import { ConfirmButton, ErrorText, Loading } from '../../components/feedback';
import { IntegrationForm } from '../../components/integration-form';
import { Attention, EnabledBadge, LastRefusal, providerName, type Provider } from '../../components/integration-words';
import { ModalForm, useProblems } from '../../components/modal-form';
import { RecordTable } from '../../components/record-table';
import { IntegrationEvents } from './events';

/** The event types each provider must send (DESIGN.md 22; docs/integrations.md). */
const SUBSCRIBE: Record<Provider, { where: string; events: string[] }> = {
  stripe: {
    where: 'In the Stripe Dashboard, under Developers › Webhooks, add an endpoint with this URL and these events, then paste its signing secret here.',
    events: [
      'invoice.paid',
      'invoice_payment.paid',
      'checkout.session.completed',
      'charge.refunded',
      'charge.dispute.created',
      'charge.dispute.closed',
      'customer.subscription.updated',
      'customer.subscription.paused',
      'customer.subscription.resumed',
      'customer.subscription.deleted',
    ],
  },
  paddle: {
    where: 'In Paddle, under Developer tools › Notifications, add a webhook destination with this URL and these events, then paste its secret key here.',
    events: [
      'transaction.completed',
      'customer.created',
      'customer.updated',
      'adjustment.created',
      'adjustment.updated',
      'subscription.updated',
      'subscription.paused',
      'subscription.resumed',
      'subscription.activated',
      'subscription.canceled',
    ],
  },
};

/** What a mapping leaves out is the product's: said so, dimmed. */
const orProducts = (text: string | null) =>
  text ?? (
    <Text span c="dimmed" inherit>
      As the product
    </Text>
  );
const months = (n: number) => (n === 0 ? 'Perpetual' : `${n.toLocaleString()} ${n === 1 ? 'month' : 'months'}`);

/** What a mapping's licence gets, in words: what it leaves out is the product's. */
function termText(m: Mapping): string {
  const term = m.validityMonths === null || m.validityMonths === undefined ? 'Follows the subscription' : months(m.validityMonths);
  return typeof m.graceDays === 'number' ? `${term}, ${days(m.graceDays)} grace` : term;
}
function licenceText(m: Mapping): string | null {
  const machines = typeof m.maxMachines === 'number' && `${m.maxMachines.toLocaleString()} ${m.maxMachines === 1 ? 'machine' : 'machines'} a unit`;
  return [m.licenceType, machines].filter(Boolean).join(', ') || null;
}
function updatesText(m: Mapping): string | null {
  if (!('updatesMonths' in m)) return null;
  return m.updatesMonths === null || m.updatesMonths === undefined ? 'No window' : `${m.updatesMonths.toLocaleString()} months`;
}
/** A mapping's parameters and meter limits, by their labels on the product. */
function extrasText(m: Mapping, product: Product | undefined): string | null {
  const label = (declared: Array<{ key: string; label: string }> | undefined, key: string) => declared?.find((d) => d.key === key)?.label ?? key;
  const value = (v: unknown) => (Array.isArray(v) ? v.join(', ') : typeof v === 'boolean' ? (v ? 'yes' : 'no') : String(v));
  const params = Object.entries(m.params ?? {}).map(([k, v]) => `${label(product?.params, k)}: ${value(v)}`);
  const meters = Object.entries(m.meters ?? {}).flatMap(([k, v]) => [
    ...(v.limit === undefined ? [] : [`${label(product?.meters, k)} limit ${v.limit === null ? 'none' : v.limit.toLocaleString()}`]),
    ...(v.overage === undefined ? [] : [`${label(product?.meters, k)} overage ${v.overage === null ? 'no ceiling' : v.overage.toLocaleString()}`]),
  ]);
  const all = [...params, ...meters];
  return all.length > 0 ? all.join(' · ') : null;
}

export default function IntegrationPage() {
  const { slug = '', id = '' } = useParams();
  const admin = useIsAdmin();
  const integration = useIntegration(Number(id), admin.allowed);
  if (!admin.allowed)
    return (
      <Stack>
        <Title order={1}>Integration</Title>
        <Text c="dimmed">{admin.reason}</Text>
      </Stack>
    );
  if (integration.error) return <ErrorText error={integration.error} />;
  if (!integration.data) return <Loading label="Loading the integration" />;
  return <Record integration={integration.data} slug={slug} />;
}

function Record({ integration: i, slug }: { integration: Integration; slug: string }) {
  const navigate = useNavigate();
  const change = useChangeIntegration(i.id);
  const remove = useDeleteIntegration(i.id);
  const products = useProducts();
  const [editing, setEditing] = useState(false);
  const [replacing, setReplacing] = useState(false);
  const setup = SUBSCRIBE[i.provider as Provider];
  const productOf = (productId: number) => products.data?.find((p) => p.id === productId);

  return (
    <Stack gap="lg">
      <Group justify="space-between" align="flex-start" wrap="wrap">
        <div>
          <Anchor component={Link} to={`/o/${slug}/integrations`} size="sm">
            ← Integrations
          </Anchor>
          <Title order={1}>{i.name}</Title>
          <Group gap="xs">
            <Badge variant="light" tt="none">
              {providerName(i.provider)}
            </Badge>
            <EnabledBadge enabled={i.enabled} />
          </Group>
        </div>
        <Group gap="xs">
          <Button onClick={() => setEditing(true)}>Edit</Button>
          <Button variant="light" onClick={() => setReplacing(true)}>
            Replace secret
          </Button>
          {i.enabled ? (
            <ConfirmButton
              label="Disable"
              title={`Disable ${i.name}`}
              consequence={`${providerName(i.provider)}’s deliveries are refused while it is disabled, and nothing is issued, renewed or revoked; the provider keeps retrying them for a while, so those it still sends after you enable it again are applied then.`}
              action={bound(change, { enabled: false })}
            />
          ) : (
            <Button variant="light" loading={change.busy} onClick={() => void change.run({ enabled: true })}>
              Enable
            </Button>
          )}
          <ConfirmButton
            label="Delete"
            color="red"
            title={`Delete ${i.name}`}
            consequence={`The integration, its events and its links to ${providerName(i.provider)}’s customers and subscriptions are deleted, and its URL refuses every delivery. The licences it issued stay, and keep working; they are no longer renewed or revoked by payments.`}
            action={{
              ...remove,
              run: async () => {
                const done = await remove.run();
                if (done) navigate(`/o/${slug}/integrations`);
                return done;
              },
            }}
          />
        </Group>
      </Group>
      <ErrorText error={change.error} title="Not changed" />

      <Card withBorder>
        <Stack gap="md">
          <Field label="Hook URL">
            <CopyBox value={i.hookUrl} label="Hook URL" />
          </Field>
          <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="lg" verticalSpacing="md">
            <Field label="Events not applied">
              <Attention integration={i} />
            </Field>
            <Field label="Last event">
              <DateTime value={i.lastEventAt} />
            </Field>
            <Field label="Last refused delivery">
              <LastRefusal integration={i} />
            </Field>
            <Field label="Email the licence">
              <Text size="sm">{i.sendOnIssue ? (i.sendOnRenew ? 'On issue and renewal' : 'On issue') : i.sendOnRenew ? 'On renewal' : 'Never'}</Text>
            </Field>
            <Field label="Added">
              <DateTime value={i.createdAt} />
              <Text size="xs" c="dimmed">
                by {i.createdBy}
              </Text>
            </Field>
          </SimpleGrid>
        </Stack>
      </Card>

      {setup && (
        <section aria-labelledby="setup-heading">
          <Title order={2} size="h4" id="setup-heading" mb="xs">
            Set up in {providerName(i.provider)}
          </Title>
          <Text size="sm" mb="xs">
            {setup.where}
          </Text>
          <Group gap={6} role="list" aria-label="Event types to send">
            {setup.events.map((type) => (
              <Code key={type} role="listitem">
                {type}
              </Code>
            ))}
          </Group>
        </section>
      )}

      <section aria-labelledby="mappings-heading">
        <Title order={2} size="h4" id="mappings-heading" mb="xs">
          Prices
        </Title>
        <RecordTable
          label="Mappings"
          rows={i.mappings}
          rowKey={(m) => m.match}
          empty="No price is mapped."
          minWidth={760}
          columns={[
            [
              'Price ID',
              (m) => (
                <Text size="sm" ff="monospace" style={{ overflowWrap: 'anywhere' }}>
                  {m.match}
                </Text>
              ),
            ],
            [
              'Product',
              (m) => (
                <Anchor component={Link} to={`/o/${slug}/products/${m.productId}`} size="sm">
                  {productOf(m.productId)?.name ?? `Product ${m.productId}`}
                </Anchor>
              ),
            ],
            ['Licence', (m) => orProducts(licenceText(m))],
            ['Term', termText],
            ['Updates', (m) => orProducts(updatesText(m))],
            ['Parameters and meters', (m) => orProducts(extrasText(m, productOf(m.productId)))],
          ]}
        />
      </section>

      <IntegrationEvents integration={i} />
      {editing && <IntegrationForm integration={i} onClose={() => setEditing(false)} />}
      {replacing && <ReplaceSecret integration={i} onClose={() => setReplacing(false)} />}
    </Stack>
  );
}

function ReplaceSecret({ integration: i, onClose }: { integration: Integration; onClose: () => void }) {
  const change = useChangeIntegration(i.id);
  const [secret, setSecret] = useState('');
  const problems = useProblems({
    secret: !/^[\x21-\x7e]{16,255}$/.test(secret) && `Paste the signing secret from ${providerName(i.provider)}: 16 to 255 characters, no space`,
  });
  const submit = async () => problems.check() && change.run({ signingSecret: secret });
  return (
    <ModalForm title="Replace secret" submit="Replace secret" onClose={onClose} action={change} failed="Not replaced" onSubmit={submit}>
      <Text size="sm">
        Deliveries are checked against the new secret from now on; the old one is forgotten. When {providerName(i.provider)} rolls its secret, both sign for a
        while: replace it here at once.
      </Text>
      <PasswordInput
        label="Signing secret"
        required
        maxLength={255}
        autoComplete="off"
        value={secret}
        onChange={(e) => setSecret(e.currentTarget.value.trim())}
        error={problems.of('secret')}
        data-autofocus
      />
    </ModalForm>
  );
}
