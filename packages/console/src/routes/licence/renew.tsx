import { Divider, NumberInput, SimpleGrid, Text, TextInput } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useRenew } from '../../api/licences';
import { useProductForm } from '../../api/products';
import { splitClaims } from '../../components/claims';
import { Loading } from '../../components/feedback';
import { ModalForm, useProblems } from '../../components/modal-form';
import { defaultOf, missingParams, ParamInput, type ParamValue, type ProductParam } from '../../components/param-input';
import { UpdatesMonthsInput } from '../../components/updates-months';
import { MeterLimitFields, overridesOf, type MeterLimits, type MeterOverrides } from '../../components/usage-meters';

/** The renewal form, prefilled with the product's defaults and the licence's current parameters and meter limits. */
export function Renew(props: {
  lid: string;
  productId: number;
  claims: Record<string, unknown>;
  /** The licence's meters (none for an OFFLINE licence). */
  meters: MeterLimits[];
  /** The licence's own window, which a renewal keeps unless changed here (never the product's). */
  updatesMonths: number | null;
  offline: boolean;
  opened: boolean;
  onClose: () => void;
}) {
  const form = useProductForm(props.productId, props.opened);
  const renew = useRenew(props.lid);
  const [validity, setValidity] = useState<number | ''>('');
  const [grace, setGrace] = useState<number | ''>('');
  const [updates, setUpdates] = useState<number | ''>('');
  const [issueDate, setIssueDate] = useState('');
  const [values, setValues] = useState<Record<string, ParamValue>>({});
  const [meterLimits, setMeterLimits] = useState<MeterOverrides>({});
  const declared = (form.data?.params ?? []) as ProductParam[];
  // The product's meters now, a kept one with the licence's limits unless changed here (DESIGN.md 19).
  const meters = props.offline
    ? []
    : (form.data?.meters ?? []).map((m) => {
        const own = props.meters.find((kept) => kept.key === m.key);
        return own ? { ...m, limit: own.limit, overage: own.overage } : m;
      });
  useEffect(() => {
    if (!form.data) return;
    const current = splitClaims(props.claims).params;
    setValidity(form.data.defaults.validityMonths ?? '');
    setGrace(form.data.defaults.graceDays);
    setUpdates(props.updatesMonths ?? '');
    setValues(Object.fromEntries((form.data.params as ProductParam[]).map((p) => [p.key, (current[p.key] as ParamValue | undefined) ?? defaultOf(p)])));
    setMeterLimits({});
  }, [form.data, props.claims, props.updatesMonths]);
  const problems = useProblems(missingParams(declared, values));
  const submit = () => {
    if (!problems.check()) return false;
    const params = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null));
    const limits = overridesOf(meters, meterLimits);
    return renew.run({
      ...(Object.keys(limits).length ? { meters: limits } : {}),
      ...(validity !== '' ? { validityMonths: validity } : {}),
      ...(grace !== '' ? { graceDays: grace } : {}),
      updatesMonths: updates === '' ? null : updates,
      ...(issueDate ? { issueDate } : {}),
      params,
    });
  };
  return (
    <ModalForm
      title="Renew licence"
      submit="Renew licence"
      opened={props.opened}
      onClose={props.onClose}
      action={renew}
      onSubmit={submit}
      disabled={!form.data}
    >
      {!form.data ? (
        <Loading />
      ) : (
        <>
          <Text size="sm" c="dimmed">
            Without a date, the new term runs from the later of today and the current expiry, so renewing early never shortens it.
          </Text>
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <NumberInput
              label="Validity (months)"
              description="0 = perpetual"
              min={0}
              max={1200}
              allowDecimal={false}
              value={validity}
              onChange={(v) => setValidity(typeof v === 'number' ? v : '')}
            />
            <NumberInput label="Grace days" min={0} max={3650} allowDecimal={false} value={grace} onChange={(v) => setGrace(typeof v === 'number' ? v : '')} />
            <TextInput label="Issue date" description="Optional" type="date" value={issueDate} onChange={(e) => setIssueDate(e.currentTarget.value)} />
            <UpdatesMonthsInput value={updates} onChange={setUpdates} />
          </SimpleGrid>
          {declared.map((param) => (
            <ParamInput
              key={param.key}
              param={param}
              value={values[param.key] ?? null}
              error={problems.of(param.key)}
              onChange={(value) => setValues((all) => ({ ...all, [param.key]: value }))}
            />
          ))}
          {meters.length > 0 && (
            <>
              <Divider label="Meters" labelPosition="left" />
              <MeterLimitFields meters={meters} overrides={meterLimits} onChange={setMeterLimits} />
            </>
          )}
        </>
      )}
    </ModalForm>
  );
}
