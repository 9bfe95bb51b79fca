import { Autocomplete, Button, Divider, Group, Modal, NumberInput, Select, SimpleGrid, Stack, TagsInput, Textarea, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { key } from '../api/queries';
import { ErrorText } from './feedback';
import { defaultOf, fieldOf, ParamInput, type ParamValue, type ProductParam } from './param-input';

/** Fields that show a 400 naming them beside themselves; any other error shows below the form. */
const SHOWN_BESIDE = new Set(['productId', 'licensee', 'licenseeEmail', 'licenceType', 'activation', 'validityMonths', 'graceDays', 'maxMachines', 'fingerprints', 'fingerprint', 'notes']);

/** The issue form (DESIGN.md 7's labels), built from the chosen product's form options. */
export function IssueLicence({ opened, onClose, customer }: { opened: boolean; onClose: () => void; customer?: { name: string; email: string | null } }) {
  const { slug = '' } = useParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const products = useQuery({ queryKey: key('products'), queryFn: () => unwrap(api().GET('/products')), enabled: opened });
  const [productId, setProductId] = useState<string | null>(null);
  const form = useQuery({
    queryKey: key('products', productId, 'form'),
    queryFn: () => unwrap(api().GET('/products/{id}/form', { params: { path: { id: Number(productId) } } })),
    enabled: opened && productId !== null,
  });
  const [name, setName] = useState(customer?.name ?? '');
  const [email, setEmail] = useState(customer?.email ?? '');
  const [searched] = useDebouncedValue(name.trim(), 250);
  const customers = useQuery({
    queryKey: key('customers', { q: searched }),
    queryFn: () => unwrap(api().GET('/customers', { params: { query: { q: searched } } })),
    enabled: opened && searched.length >= 2,
  });
  const [licenceType, setLicenceType] = useState<string | null>(null);
  const [activation, setActivation] = useState<string | null>('ONLINE');
  const [validity, setValidity] = useState<number | ''>('');
  const [grace, setGrace] = useState<number | ''>('');
  const [machines, setMachines] = useState<number | ''>('');
  const [fingerprints, setFingerprints] = useState<string[]>([]);
  const [notes, setNotes] = useState('');
  const [params, setParams] = useState<Record<string, ParamValue>>({});
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  // Prefilled from the product's form options whenever another product is chosen.
  useEffect(() => {
    const f = form.data;
    if (!f) return;
    setLicenceType(f.defaults.licenceType);
    setActivation(f.defaults.activation ?? 'ONLINE');
    setValidity(f.defaults.validityMonths ?? '');
    setGrace(f.defaults.graceDays);
    setMachines(f.defaults.maxMachines);
    setParams(Object.fromEntries((f.params as ProductParam[]).map((p) => [p.key, defaultOf(p)])));
  }, [form.data]);

  const message = error instanceof Error ? error.message : '';
  const field = message ? fieldOf(message) : null;
  const errorFor = (name: string) => (field === name ? message : undefined);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const given = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== null && !(Array.isArray(v) && v.length === 0)));
      const licence = await unwrap(
        api().POST('/licenses', {
          body: {
            productId: Number(productId),
            licensee: name.trim(),
            ...(email.trim() ? { licenseeEmail: email.trim() } : {}),
            ...(licenceType ? { licenceType: licenceType as 'OFFLINE' | 'ONLINE' | 'HYBRID' } : {}),
            ...(licenceType === 'HYBRID' && activation ? { activation: activation as 'ONLINE' | 'OFFLINE' } : {}),
            ...(validity !== '' ? { validityMonths: validity } : {}),
            ...(grace !== '' ? { graceDays: grace } : {}),
            ...(machines !== '' ? { maxMachines: machines } : {}),
            ...(fingerprints.length ? { fingerprints } : {}),
            ...(notes.trim() ? { notes } : {}),
            params: given as Record<string, never>,
          },
        }),
      );
      await queryClient.invalidateQueries({ queryKey: key('licences') });
      await queryClient.invalidateQueries({ queryKey: key('dashboard') });
      onClose();
      navigate(`/o/${slug}/licences/${licence.lid}`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const suggestions = (customers.data ?? []).map((c) => ({ value: `${c.id}`, label: c.email ? `${c.name} <${c.email}>` : c.name }));
  return (
    <Modal closeButtonProps={{ "aria-label": "Close" }} opened={opened} onClose={onClose} title="Issue licence" size="lg" fullScreen={window.innerWidth < 600}>
      <form onSubmit={submit} aria-label="Issue licence">
        <Stack>
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
              error={errorFor('licensee')}
            />
            <TextInput label="Customer email" type="email" value={email} onChange={(e) => setEmail(e.currentTarget.value)} error={errorFor('licenseeEmail')} />
          </SimpleGrid>
          {form.data && (
            <>
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <Select label="Licence type" data={form.data.licenceTypes} value={licenceType} onChange={setLicenceType} error={errorFor('licenceType')} />
                {licenceType === 'HYBRID' && <Select label="Activation" data={['ONLINE', 'OFFLINE']} value={activation} onChange={setActivation} error={errorFor('activation')} />}
                <NumberInput label="Validity (months)" description="0 = perpetual" min={0} max={1200} allowDecimal={false} value={validity} onChange={(v) => setValidity(typeof v === 'number' ? v : '')} error={errorFor('validityMonths')} />
                <NumberInput label="Grace days" min={0} max={3650} allowDecimal={false} value={grace} onChange={(v) => setGrace(typeof v === 'number' ? v : '')} error={errorFor('graceDays')} />
                <NumberInput label="Max machines" min={1} allowDecimal={false} value={machines} onChange={(v) => setMachines(typeof v === 'number' ? v : '')} error={errorFor('maxMachines')} />
              </SimpleGrid>
              <TagsInput
                label="Fingerprints to bind at issue"
                description="SVC1 fingerprints of the customer's machines (optional)"
                value={fingerprints}
                onChange={setFingerprints}
                error={errorFor('fingerprints') ?? errorFor('fingerprint')}
              />
              {(form.data.params as ProductParam[]).length > 0 && <Divider label="Parameters" labelPosition="left" />}
              {(form.data.params as ProductParam[]).map((param) => (
                <ParamInput
                  key={param.key}
                  param={param}
                  value={params[param.key] ?? null}
                  error={errorFor(`params.${param.key}`)}
                  onChange={(value) => setParams((all) => ({ ...all, [param.key]: value }))}
                />
              ))}
            </>
          )}
          <Textarea label="Notes" autosize minRows={2} value={notes} onChange={(e) => setNotes(e.currentTarget.value)} error={errorFor('notes')} />
          {error && !(field && (SHOWN_BESIDE.has(field) || field.startsWith('params.'))) ? <ErrorText error={error} /> : null}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={busy} disabled={productId === null}>
              Issue
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
