import { Autocomplete, Divider, NumberInput, Select, SimpleGrid, Switch, TagsInput, Textarea, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useEffect, useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { fieldOf, inWords } from '../api/client';
import { useCustomers } from '../api/customers';
import { useConvertTrial, useIssueLicence, type IssueBody } from '../api/licences';
import { useProductForm, useProducts } from '../api/products';
import { ModalForm, notEmail, useProblems } from './modal-form';
import { defaultOf, missingParams, ParamInput, type ParamValue, type ProductParam } from './param-input';
import { UpdatesMonthsInput } from './updates-months';
import { MeterLimitFields, overridesOf, type MeterOverrides } from './usage-meters';

const withoutProduct = ({ productId: _, ...rest }: IssueBody) => rest;

/** Fields that show a 400 naming them beside themselves; any other error shows below the form. */
const SHOWN_BESIDE = new Set([
  'productId',
  'licensee',
  'licenseeEmail',
  'licenceType',
  'activation',
  'validityMonths',
  'graceDays',
  'updatesMonths',
  'maxMachines',
  'fingerprints',
  'fingerprint',
  'notes',
  'keepMachine',
]);

/** A trial to convert: the form then issues under its product, without `Product`, and may keep its machine (DESIGN.md 18). */
export interface Converting {
  lid: string;
  productId: number;
  email: string | null;
}

/** The issue form (DESIGN.md 7's labels), built from the chosen product's form options; with `trial`, the conversion form. */
export function IssueLicence({
  opened,
  onClose,
  customer,
  trial,
}: {
  opened: boolean;
  onClose: () => void;
  customer?: { name: string; email: string | null };
  trial?: Converting;
}) {
  const { slug = '' } = useParams();
  const navigate = useNavigate();
  const issueNew = useIssueLicence();
  const convert = useConvertTrial(trial?.lid ?? '');
  const issue = trial ? convert : issueNew;
  const products = useProducts(opened && !trial);
  const [productId, setProductId] = useState<string | null>(trial ? String(trial.productId) : null);
  const [keepMachine, setKeepMachine] = useState(false);
  const form = useProductForm(productId === null ? null : Number(productId), opened);
  const [name, setName] = useState(customer?.name ?? '');
  const [email, setEmail] = useState(customer?.email ?? trial?.email ?? '');
  const [searched] = useDebouncedValue(name.trim(), 250);
  const customers = useCustomers(searched, opened && searched.length >= 2);
  const [licenceType, setLicenceType] = useState<string | null>(null);
  const [activation, setActivation] = useState<string | null>('ONLINE');
  const [validity, setValidity] = useState<number | ''>('');
  const [grace, setGrace] = useState<number | ''>('');
  const [updates, setUpdates] = useState<number | ''>('');
  const [machines, setMachines] = useState<number | ''>('');
  const [fingerprints, setFingerprints] = useState<string[]>([]);
  const [notes, setNotes] = useState('');
  const [params, setParams] = useState<Record<string, ParamValue>>({});
  const [meterLimits, setMeterLimits] = useState<MeterOverrides>({});
  const declared = (form.data?.params ?? []) as ProductParam[];
  // OFFLINE licences have no meters: nothing reports their usage (DESIGN.md 19).
  const meters = licenceType === 'OFFLINE' ? [] : (form.data?.meters ?? []);

  // Prefilled from the product's form options whenever another product is chosen.
  useEffect(() => {
    const f = form.data;
    if (!f) return;
    setLicenceType(f.defaults.licenceType);
    setActivation(f.defaults.activation ?? 'ONLINE');
    setValidity(f.defaults.validityMonths ?? '');
    setGrace(f.defaults.graceDays);
    setUpdates(f.defaults.updatesMonths ?? '');
    setMachines(f.defaults.maxMachines);
    setParams(Object.fromEntries((f.params as ProductParam[]).map((p) => [p.key, defaultOf(p)])));
    setMeterLimits({});
  }, [form.data]);

  const problems = useProblems<string>({
    productId: productId === null && 'Choose the product',
    licensee: !name.trim() && 'Enter the customer’s name',
    licenseeEmail: notEmail(email),
    validityMonths: form.data && validity === '' && 'Enter the months, or 0 for a perpetual licence',
    ...Object.fromEntries(Object.entries(missingParams(declared, params)).map(([k, v]) => [`params.${k}`, v])),
  });
  // A refusal that names a field shows beside it; any other below the form.
  const message = issue.error instanceof Error ? inWords(issue.error.message) : '';
  // A list's entry (`fingerprints[0]`) shows beside the list, a meter's limit or overage beside the meter.
  const field =
    fieldOf(issue.error)
      ?.replace(/\[\d+\]$/, '')
      .replace(/^(meters\.[^.]+)\..*$/, '$1') ?? null;
  const beside = field !== null && (SHOWN_BESIDE.has(field) || field.startsWith('params.') || field.startsWith('meters.'));
  const errorFor = (name: string) => problems.of(name) ?? (field === name ? message : undefined);

  const submit = async () => {
    if (!problems.check()) return false;
    const given = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== null && !(Array.isArray(v) && v.length === 0)));
    const limits = overridesOf(meters, meterLimits);
    const body: IssueBody = {
      productId: Number(productId),
      licensee: name.trim(),
      ...(email.trim() ? { licenseeEmail: email.trim() } : {}),
      ...(licenceType ? { licenceType: licenceType as IssueBody['licenceType'] } : {}),
      ...(licenceType === 'HYBRID' && activation ? { activation: activation as IssueBody['activation'] } : {}),
      ...(validity !== '' ? { validityMonths: validity } : {}),
      ...(grace !== '' ? { graceDays: grace } : {}),
      // Prefilled with the product's window: empty is none, said outright.
      updatesMonths: updates === '' ? null : updates,
      ...(machines !== '' ? { maxMachines: machines } : {}),
      ...(fingerprints.length ? { fingerprints } : {}),
      ...(notes.trim() ? { notes } : {}),
      params: given,
      ...(Object.keys(limits).length ? { meters: limits } : {}),
    };
    const licence = trial ? await convert.run({ ...withoutProduct(body), keepMachine }) : await issueNew.run(body);
    if (licence) navigate(`/o/${slug}/licences/${licence.value.lid}`);
    return licence;
  };

  const suggestions = (customers.data ?? []).map((c) => ({ value: `${c.id}`, label: c.email ? `${c.name} <${c.email}>` : c.name }));
  return (
    <ModalForm
      title={trial ? 'Convert to paid licence' : 'Issue licence'}
      submit={trial ? 'Convert' : 'Issue'}
      opened={opened}
      onClose={onClose}
      fullScreen={window.innerWidth < 600}
      action={{ busy: issue.busy, error: beside ? null : issue.error }}
      onSubmit={submit}
    >
      {!trial && (
        <Select
          label="Product"
          placeholder="Choose a product"
          data={(products.data ?? []).filter((p) => p.active).map((p) => ({ value: String(p.id), label: `${p.name} (${p.productKey})` }))}
          value={productId}
          onChange={setProductId}
          searchable
          required
          error={errorFor('productId')}
        />
      )}
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <Autocomplete
          label="Customer name"
          description="An existing customer, or a new one"
          value={name}
          onChange={setName}
          data={suggestions}
          onOptionSubmit={(id) => {
            const found = customers.data?.find((c) => String(c.id) === id);
            if (found) {
              setName(found.name);
              setEmail(found.email ?? '');
            }
          }}
          required
          maxLength={200}
          error={errorFor('licensee')}
        />
        <TextInput
          label="Customer email"
          type="email"
          maxLength={254}
          value={email}
          onChange={(e) => setEmail(e.currentTarget.value)}
          error={errorFor('licenseeEmail')}
        />
      </SimpleGrid>
      {form.data && (
        <>
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <Select label="Licence type" data={form.data.licenceTypes} value={licenceType} onChange={setLicenceType} error={errorFor('licenceType')} />
            {licenceType === 'HYBRID' && (
              <Select label="Activation" data={['ONLINE', 'OFFLINE']} value={activation} onChange={setActivation} error={errorFor('activation')} />
            )}
            <NumberInput
              label="Validity (months)"
              description="0 = perpetual"
              min={0}
              max={1200}
              allowDecimal={false}
              value={validity}
              onChange={(v) => setValidity(typeof v === 'number' ? v : '')}
              error={errorFor('validityMonths')}
            />
            <NumberInput
              label="Grace days"
              min={0}
              max={3650}
              allowDecimal={false}
              value={grace}
              onChange={(v) => setGrace(typeof v === 'number' ? v : '')}
              error={errorFor('graceDays')}
            />
            <UpdatesMonthsInput value={updates} onChange={setUpdates} error={errorFor('updatesMonths')} />
            <NumberInput
              label="Max machines"
              min={1}
              max={1_000_000}
              allowDecimal={false}
              value={machines}
              onChange={(v) => setMachines(typeof v === 'number' ? v : '')}
              error={errorFor('maxMachines')}
            />
          </SimpleGrid>
          <TagsInput
            label="Fingerprints to bind at issue"
            description="SVC1 fingerprints of the customer's machines (optional)"
            value={fingerprints}
            onChange={setFingerprints}
            error={errorFor('fingerprints') ?? errorFor('fingerprint')}
          />
          {trial && (
            <Switch
              label="Keep this machine"
              description={
                licenceType === 'OFFLINE' || (licenceType === 'HYBRID' && activation === 'OFFLINE')
                  ? 'The trial’s machine is signed into the licence: the licence can then never move to another machine.'
                  : 'The trial’s machine takes a seat at once, released like any other.'
              }
              checked={keepMachine}
              onChange={(e) => setKeepMachine(e.currentTarget.checked)}
              error={errorFor('keepMachine')}
            />
          )}
          {declared.length > 0 && <Divider label="Parameters" labelPosition="left" />}
          {declared.map((param) => (
            <ParamInput
              key={param.key}
              param={param}
              value={params[param.key] ?? null}
              error={errorFor(`params.${param.key}`)}
              onChange={(value) => setParams((all) => ({ ...all, [param.key]: value }))}
            />
          ))}
          {meters.length > 0 && (
            <>
              <Divider label="Meters" labelPosition="left" />
              <MeterLimitFields meters={meters} overrides={meterLimits} errorOf={(key) => errorFor(`meters.${key}`)} onChange={setMeterLimits} />
            </>
          )}
        </>
      )}
      <Textarea
        label="Notes"
        autosize
        minRows={2}
        maxLength={10_000}
        value={notes}
        onChange={(e) => setNotes(e.currentTarget.value)}
        error={errorFor('notes')}
      />
    </ModalForm>
  );
}
