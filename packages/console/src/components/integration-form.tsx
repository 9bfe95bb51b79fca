import { Button, Divider, Group, NumberInput, Paper, PasswordInput, Select, SimpleGrid, Stack, Switch, Text, TextInput } from '@mantine/core';
import { useEffect, useState } from 'react';
import { ApiError, besideField, fieldOf } from '../api/client';
import { useAddIntegration, useChangeIntegration, type Integration, type IntegrationBody, type Mapping } from '../api/integrations';
import { useProductForm, useProducts } from '../api/products';
import { ModalForm, useProblems } from './modal-form';
import { defaultOf, ParamInput, type ParamValue, type ProductParam } from './param-input';
import { PROVIDERS, type Provider } from './integration-words';
import { UpdatesMonthsInput } from './updates-months';
import { MeterLimitFields, type MeterOverrides } from './usage-meters';

/** The ids a mapping may name (DESIGN.md 22), said as the form says them. */
const MATCH: Record<Provider, { pattern: RegExp; words: string }> = {
  stripe: { pattern: /^(price|plink)_[A-Za-z0-9]{1,250}$/, words: 'A Stripe price (price_…) or Payment Link (plink_…) ID' },
  paddle: { pattern: /^pri_[A-Za-z0-9]{1,250}$/, words: 'A Paddle price ID (pri_…)' },
};
const SECRETS: Record<Provider, string> = { stripe: 'whsec_…', paddle: 'pdl_ntfset_…' };
const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const SECRET = /^[\x21-\x7e]{16,255}$/;

type Count = number | '';

/** A mapping as the form edits it; `paramsFor` the product its parameters were filled in for. */
interface MappingDraft {
  match: string;
  productId: string | null;
  paramsFor: number | null;
  licenceType: string | null;
  follows: boolean;
  validityMonths: Count;
  graceDays: Count;
  maxMachines: Count;
  params: Record<string, ParamValue>;
  meters: MeterOverrides;
  noUpdateWindow: boolean;
  updatesMonths: Count;
}

function draftOf(m?: Mapping): MappingDraft {
  return {
    match: m?.match ?? '',
    productId: m ? String(m.productId) : null,
    paramsFor: m?.productId ?? null,
    licenceType: m?.licenceType ?? null,
    follows: (m?.validityMonths ?? null) === null,
    validityMonths: m?.validityMonths ?? '',
    graceDays: m?.graceDays ?? '',
    maxMachines: m?.maxMachines ?? '',
    params: (m?.params ?? {}) as Record<string, ParamValue>,
    meters: (m?.meters ?? {}) as MeterOverrides,
    // Left out is the product's window; null is none (DESIGN.md 22).
    noUpdateWindow: m !== undefined && m.updatesMonths === null,
    updatesMonths: m?.updatesMonths ?? '',
  };
}

/** A mapping as the API takes it: every field left empty is left out, so the product's value applies. */
function mappingOf(d: MappingDraft): Mapping {
  const params = Object.fromEntries(Object.entries(d.params).filter(([, v]) => v !== null && v !== '' && !(Array.isArray(v) && v.length === 0)));
  return {
    match: d.match.trim(),
    productId: Number(d.productId),
    ...(d.licenceType ? { licenceType: d.licenceType as NonNullable<Mapping['licenceType']> } : {}),
    validityMonths: d.follows || d.validityMonths === '' ? null : d.validityMonths,
    ...(d.graceDays === '' ? {} : { graceDays: d.graceDays }),
    ...(d.maxMachines === '' ? {} : { maxMachines: d.maxMachines }),
    params: params as Mapping['params'],
    ...(Object.keys(d.meters).length > 0 ? { meters: d.meters } : {}),
    ...(d.noUpdateWindow ? { updatesMonths: null } : d.updatesMonths === '' ? {} : { updatesMonths: d.updatesMonths }),
  };
}

/**
 * `Add integration`, or with `integration` its edit (provider fixed, the secret replaced on its
 * own): the connection's name, its mappings and its mail switches (DESIGN.md 22's labels).
 */
export function IntegrationForm({ integration, onClose }: { integration?: Integration; onClose: () => void }) {
  const add = useAddIntegration();
  const change = useChangeIntegration(integration?.id ?? 0);
  const save = integration ? change : add;
  const products = useProducts();
  const [provider, setProvider] = useState<Provider>((integration?.provider as Provider | undefined) ?? 'stripe');
  const [name, setName] = useState(integration?.name ?? '');
  const [secret, setSecret] = useState('');
  const [mappings, setMappings] = useState<MappingDraft[]>(() => integration?.mappings.map(draftOf) ?? [draftOf()]);
  const [sendOnIssue, setSendOnIssue] = useState(integration?.sendOnIssue ?? true);
  const [sendOnRenew, setSendOnRenew] = useState(integration?.sendOnRenew ?? false);
  const update = (i: number, change: Partial<MappingDraft>) => setMappings((all) => all.map((m, j) => (j === i ? { ...m, ...change } : m)));

  const problems = useProblems<string>({
    name: !NAME.test(name.trim()) && 'Lower-case letters, digits and hyphens, starting with a letter or digit (at most 63)',
    signingSecret: !integration && !SECRET.test(secret) && `Paste the endpoint’s signing secret from ${PROVIDERS[provider]} (${SECRETS[provider]})`,
    ...Object.fromEntries(
      mappings.flatMap((m, i) => [
        [
          `mappings[${i}].match`,
          !MATCH[provider].pattern.test(m.match) ? MATCH[provider].words : mappings.findIndex((other) => other.match === m.match) !== i && 'Mapped twice',
        ],
        [`mappings[${i}].productId`, m.productId === null && 'Choose the product'],
        [
          `mappings[${i}].validityMonths`,
          m.follows
            ? m.match.startsWith('plink_') && 'A Payment Link has no subscription to follow: give the months'
            : m.validityMonths === '' && 'Enter the months (0 = perpetual), or switch on Follows the subscription',
        ],
      ]),
    ),
  });
  // A refusal naming a field shows beside it (a meter's beside its meter, a name taken beside the name); any other below the form.
  const message = save.error instanceof Error ? save.error.message : '';
  const field =
    (save.error instanceof ApiError && save.error.status === 409 ? 'name' : fieldOf(save.error))?.replace(/^(mappings\[\d+\]\.meters\.[^.]+)\..*$/, '$1') ??
    null;
  const beside =
    field !== null &&
    (field === 'name' ||
      field === 'signingSecret' ||
      /^mappings\[\d+\]\.(match|productId|licenceType|validityMonths|graceDays|maxMachines|updatesMonths|params\.|meters\.)/.test(field));
  const errorFor = (path: string) => problems.of(path) ?? (beside && field === path ? besideField(message) : undefined);

  const submit = async () => {
    if (!problems.check()) return false;
    const common = { name: name.trim(), mappings: mappings.map(mappingOf), sendOnIssue, sendOnRenew };
    const body: IntegrationBody = { provider, signingSecret: secret, ...common };
    return integration ? change.run(common) : add.run(body);
  };

  return (
    <ModalForm
      title={integration ? `Edit ${integration.name}` : 'Add integration'}
      submit="Save"
      onClose={onClose}
      size="xl"
      fullScreen={window.innerWidth < 600}
      action={{ busy: save.busy, error: beside ? null : save.error }}
      failed="Not saved"
      onSubmit={submit}
    >
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <Select
          label="Provider"
          data={Object.entries(PROVIDERS).map(([value, label]) => ({ value, label }))}
          value={provider}
          onChange={(value) => value && setProvider(value as Provider)}
          allowDeselect={false}
          disabled={integration !== undefined}
          description={integration ? 'A connection keeps its provider' : 'Stripe, or Paddle Billing'}
        />
        <TextInput
          label="Name"
          description="Names the connection in the activity: integration/<name>"
          placeholder={`${provider}-live`}
          required
          maxLength={63}
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          error={errorFor('name')}
          data-autofocus
        />
      </SimpleGrid>
      {!integration && (
        <PasswordInput
          label="Signing secret"
          description={`The endpoint’s secret (${SECRETS[provider]}) from ${PROVIDERS[provider]}; kept sealed and never shown again`}
          required
          maxLength={255}
          value={secret}
          onChange={(e) => setSecret(e.currentTarget.value.trim())}
          error={errorFor('signingSecret')}
          autoComplete="off"
        />
      )}
      <Divider label="Mappings" labelPosition="left" />
      <Text size="sm" c="dimmed">
        Each price you sell becomes a licence of a product: a paid order issues it, a paid renewal renews it.
      </Text>
      {mappings.map((draft, i) => (
        <MappingFields
          // biome-ignore lint/suspicious/noArrayIndexKey: a mapping has no identity but its place; every field in it is controlled
          key={i}
          index={i}
          draft={draft}
          provider={provider}
          products={products.data ?? []}
          errorFor={(f) => errorFor(`mappings[${i}].${f}`)}
          onChange={(c) => update(i, c)}
          onRemove={mappings.length > 1 ? () => setMappings((all) => all.filter((_, j) => j !== i)) : undefined}
        />
      ))}
      <Group>
        <Button variant="light" size="xs" onClick={() => setMappings((all) => [...all, draftOf()])} disabled={mappings.length >= 100}>
          Add mapping
        </Button>
      </Group>
      <Divider label="Email" labelPosition="left" />
      <Switch
        label="Email the licence on issue"
        description="The customer gets the licence file and a portal link as soon as it is issued"
        checked={sendOnIssue}
        onChange={(e) => setSendOnIssue(e.currentTarget.checked)}
      />
      <Switch
        label="Email the licence on renewal"
        description="Again after each paid renewal, with the renewed licence"
        checked={sendOnRenew}
        onChange={(e) => setSendOnRenew(e.currentTarget.checked)}
      />
    </ModalForm>
  );
}

function MappingFields({
  index,
  draft,
  provider,
  products,
  errorFor,
  onChange,
  onRemove,
}: {
  index: number;
  draft: MappingDraft;
  provider: Provider;
  products: Array<{ id: number; name: string; productKey: string; active: boolean }>;
  errorFor: (field: string) => string | undefined;
  onChange: (change: Partial<MappingDraft>) => void;
  onRemove: (() => void) | undefined;
}) {
  const form = useProductForm(draft.productId === null ? null : Number(draft.productId));
  const f = form.data;
  const declared = (f?.params ?? []) as ProductParam[];
  // OFFLINE licences have no meters: nothing reports their usage (DESIGN.md 19).
  const meters = (draft.licenceType ?? f?.defaults.licenceType) === 'OFFLINE' ? [] : (f?.meters ?? []);

  // Another product: its parameters' defaults, none of the other's meter limits.
  useEffect(() => {
    if (f && draft.paramsFor !== f.productId) {
      onChange({
        paramsFor: f.productId,
        params: Object.fromEntries((f.params as ProductParam[]).map((p) => [p.key, defaultOf(p)])),
        meters: {},
        licenceType: null,
      });
    }
  }, [f, draft.paramsFor, onChange]);

  const theProducts = (value: number | string) => `${value} (the product’s)`;
  return (
    <Paper withBorder p="sm" role="group" aria-label={`Mapping ${index + 1}`}>
      <Stack gap="sm">
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput
            label="Price ID"
            description={MATCH[provider].words}
            placeholder={provider === 'stripe' ? 'price_1PqR…' : 'pri_01h…'}
            required
            maxLength={260}
            value={draft.match}
            onChange={(e) => onChange({ match: e.currentTarget.value.trim() })}
            error={errorFor('match')}
          />
          <Select
            label="Product"
            description="The licence a sale of this price issues"
            placeholder="Choose a product"
            data={products.map((p) => ({ value: String(p.id), label: `${p.name} (${p.productKey})${p.active ? '' : ' · inactive'}` }))}
            value={draft.productId}
            onChange={(productId) => onChange({ productId })}
            searchable
            required
            error={errorFor('productId')}
          />
        </SimpleGrid>
        {f && (
          <>
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <Select
                label="Licence type"
                description="Empty = the product’s"
                data={f.licenceTypes}
                placeholder={theProducts(f.defaults.licenceType)}
                value={draft.licenceType}
                onChange={(licenceType) => onChange({ licenceType })}
                clearable
                error={errorFor('licenceType')}
              />
              <NumberInput
                label="Max machines"
                description="Per unit of the quantity bought"
                placeholder={theProducts(f.defaults.maxMachines)}
                min={1}
                max={100_000}
                allowDecimal={false}
                value={draft.maxMachines}
                onChange={(v) => onChange({ maxMachines: typeof v === 'number' ? v : '' })}
                error={errorFor('maxMachines')}
              />
              <Stack gap={6}>
                <NumberInput
                  label="Validity (months)"
                  description="0 = perpetual"
                  min={0}
                  max={1200}
                  allowDecimal={false}
                  disabled={draft.follows}
                  placeholder={draft.follows ? 'The subscription’s period' : undefined}
                  value={draft.follows ? '' : draft.validityMonths}
                  onChange={(v) => onChange({ validityMonths: typeof v === 'number' ? v : '' })}
                  error={errorFor('validityMonths')}
                />
                <Switch
                  label="Follows the subscription"
                  description="Each paid period moves the expiry to its end"
                  checked={draft.follows}
                  onChange={(e) => onChange({ follows: e.currentTarget.checked })}
                />
              </Stack>
              <Stack gap={6}>
                <UpdatesMonthsInput
                  product={{ months: f.defaults.updatesMonths }}
                  disabled={draft.noUpdateWindow}
                  value={draft.noUpdateWindow ? '' : draft.updatesMonths}
                  onChange={(updatesMonths) => onChange({ updatesMonths })}
                  error={errorFor('updatesMonths')}
                />
                <Switch
                  label="No update window"
                  description="Every release published while the licence is valid"
                  checked={draft.noUpdateWindow}
                  onChange={(e) => onChange({ noUpdateWindow: e.currentTarget.checked })}
                />
              </Stack>
              <NumberInput
                label="Grace days"
                description="After the expiry, while a payment is retried"
                placeholder={theProducts(f.defaults.graceDays)}
                min={0}
                max={3650}
                allowDecimal={false}
                value={draft.graceDays}
                onChange={(v) => onChange({ graceDays: typeof v === 'number' ? v : '' })}
                error={errorFor('graceDays')}
              />
              {declared.map((param) => (
                <ParamInput
                  key={param.key}
                  param={param}
                  value={draft.params[param.key] ?? null}
                  error={errorFor(`params.${param.key}`)}
                  onChange={(value) => onChange({ params: { ...draft.params, [param.key]: value } })}
                />
              ))}
            </SimpleGrid>
            {meters.length > 0 && (
              <MeterLimitFields
                meters={meters}
                overrides={draft.meters}
                inherit
                errorOf={(key) => errorFor(`meters.${key}`)}
                onChange={(m) => onChange({ meters: m })}
              />
            )}
          </>
        )}
        {onRemove && (
          <Group justify="flex-end">
            <Button variant="subtle" color="red" size="compact-sm" onClick={onRemove} aria-label={`Remove mapping ${draft.match || index + 1}`}>
              Remove mapping
            </Button>
          </Group>
        )}
      </Stack>
    </Paper>
  );
}
