import { Anchor, Badge, Button, Card, Code, Group, Select, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import {
  useDeleteProduct,
  useDownloadCertificate,
  useProduct,
  useProductKeys,
  useProductOptions,
  useRegenerateKey,
  useRotateCheckToken,
  type Product,
} from '../../api/products';
import { useCanWrite } from '../../api/session';
import { DateTime, days, download, duration, Field } from '../../components/display';
import { ConfirmButton, ErrorText, Guarded, Loading } from '../../components/feedback';
import { ProductForm } from '../../components/product-form';
import { paramDefaultText, paramTypeText } from '../../components/product-form/param-editor';
import type { ProductParam } from '../../components/param-input';
import type { ProductMeter } from '../../components/product-form/meter-editor';
import { RecordTable, type Column } from '../../components/record-table';
import { effective, PER_PERIOD, type MeterOverrides } from '../../components/usage-meters';
import { CHECK_TOKEN, DeveloperCard } from './developer-card';

const limitText = (m: { limit: number | null; period: ProductMeter['period'] }) =>
  m.limit === null ? 'No limit' : `${m.limit.toLocaleString()} ${PER_PERIOD[m.period]}`;
const overageText = (m: { limit: number | null; overage: number | null }) =>
  m.limit === null ? '—' : m.overage === null ? 'No ceiling' : m.overage === 0 ? 'none' : `${m.overage.toLocaleString()} more`;
/** What a trial gets of a meter: the product's, or its own limit and overage. */
function trialText(m: ProductMeter, trialMeters: MeterOverrides): string {
  if (!trialMeters[m.key]) return 'as licences';
  const { limit, overage } = effective(m, trialMeters);
  if (limit === null) return 'No limit';
  return `${limitText({ limit, period: m.period })}${overage === null ? ', no ceiling past it' : overage > 0 ? `, ${overage.toLocaleString()} more past it` : ''}`;
}

export default function ProductPage() {
  const { slug = '', id = '' } = useParams();
  const navigate = useNavigate();
  const write = useCanWrite();
  const product = useProduct(Number(id));
  const keys = useProductKeys(Number(id));
  const options = useProductOptions();
  const regenerate = useRegenerateKey(Number(id));
  const rotate = useRotateCheckToken(Number(id));
  const remove = useDeleteProduct(Number(id));
  const certificate = useDownloadCertificate(Number(id));
  const [editing, setEditing] = useState(false);
  const [algorithm, setAlgorithm] = useState<Product['algorithm'] | null>(null);
  const [checkToken, setCheckToken] = useState<string | null>(null);

  if (product.error) return <ErrorText error={product.error} />;
  if (!product.data) return <Loading label="Loading the product" />;
  const p = product.data;

  return (
    <Stack gap="lg">
      <Group justify="space-between" align="flex-start" wrap="wrap">
        <div>
          <Anchor component={Link} to={`/o/${slug}/products`} size="sm">
            ← Products
          </Anchor>
          <Title order={1}>{p.name}</Title>
          <Group gap="xs">
            <Code>{p.productKey}</Code>
            <Badge variant="dot" color={p.active ? 'green' : 'gray'}>
              {p.active ? 'active' : 'inactive'}
            </Badge>
            <Badge variant="dot" color={p.keyState === 'OK' ? 'green' : 'red'}>
              key {p.keyState === 'OK' ? 'OK' : 'error'}
            </Badge>
            <Text size="sm" c="dimmed">
              {p.algorithmLabel} · {p.licenceType}
            </Text>
          </Group>
          {p.keyError && <ErrorText error={p.keyError} />}
        </div>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <Group gap="xs">
              <Button onClick={() => setEditing(true)} disabled={disabled}>
                Edit
              </Button>
              <ConfirmButton
                label="Regenerate key"
                title="Regenerate the signing key"
                disabled={disabled}
                consequence={`New licences and renewals are signed with the new key${p.pkcs11 ? `, a new pair generated on token ${p.pkcs11.tokenLabel}` : ''}. Licences already issued keep verifying with the old one, which stays in the key history${p.pkcs11 ? ' and on the token' : ''}: give applications the new public key too (the SDK accepts several).`}
                action={{ ...regenerate, run: () => regenerate.run(algorithm) }}
              >
                <Select
                  label="Algorithm of the new key"
                  data={(options.data?.algorithms ?? []).filter((a) => a.available).map((a) => ({ value: a.value, label: a.label }))}
                  value={algorithm ?? p.algorithm}
                  onChange={(value) => setAlgorithm(value as Product['algorithm'] | null)}
                  allowDeselect={false}
                  comboboxProps={{ withinPortal: false }}
                />
              </ConfirmButton>
              <ConfirmButton
                label="Delete"
                title={`Delete ${p.name}`}
                color="red"
                disabled={disabled}
                consequence={
                  p.licenseCount > 0
                    ? `It has ${p.licenseCount.toLocaleString()} licences; the service refuses to delete a product while licences exist.`
                    : 'The product, its keys and its check credential are deleted. This cannot be undone. The service refuses while the product has releases.'
                }
                action={{
                  ...remove,
                  run: async () => {
                    const done = await remove.run();
                    if (done) navigate(`/o/${slug}/products`);
                    return done;
                  },
                }}
              />
            </Group>
          )}
        </Guarded>
      </Group>

      <Card withBorder>
        <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="lg" verticalSpacing="md">
          <Field label="Licences">
            <Anchor component={Link} to={`/o/${slug}/licences?productId=${p.id}`}>
              {p.licenseCount.toLocaleString()} {p.licenseCount === 1 ? 'licence' : 'licences'}
            </Anchor>
          </Field>
          <Field label="Downloads">
            <Anchor component={Link} to={`/o/${slug}/products/${p.id}/releases`}>
              Releases
            </Anchor>
          </Field>
          <Field label="Licence types">
            {p.allowedLicenceTypes.join(', ')}{' '}
            <Text span size="xs" c="dimmed">
              (default {p.licenceType})
            </Text>
          </Field>
          <Field label="Private key">
            {p.pkcs11 ? (
              <>
                On token <Code>{p.pkcs11.tokenLabel}</Code>, key <Code>{p.pkcs11.keyLabel}</Code>
              </>
            ) : p.keyOrigin === 'imported' ? (
              'Imported, sealed here'
            ) : (
              'Generated and sealed here'
            )}
          </Field>
          <Field label="Default validity">
            {p.defaultValidityMonths === null ? 'asked at issue' : p.defaultValidityMonths === 0 ? 'perpetual' : `${p.defaultValidityMonths} months`}
          </Field>
          <Field label="Grace">{days(p.defaultGraceDays ?? 0)}</Field>
          <Field label="Updates">
            {p.updatesMonths === null ? 'every release while valid' : `${p.updatesMonths} ${p.updatesMonths === 1 ? 'month' : 'months'} from issue or renewal`}
          </Field>
          <Field label="Seats">
            {p.seatModel === 'FLOATING' ? `Floating: ${duration(p.leaseSeconds)} leases` : 'Node-locked'}
            {p.seatModel === 'FLOATING' && (
              <Text span size="xs" c="dimmed">
                {' '}
                ({p.maxBorrowSeconds === 0 ? 'no borrowing' : `borrowing up to ${duration(p.maxBorrowSeconds)}, ${p.maxBorrowedSeats} at once`})
              </Text>
            )}
          </Field>
          <Field label={p.seatModel === 'FLOATING' ? 'Machines at a time' : 'Machines per licence'}>{p.maxMachines}</Field>
          <Field label="Fingerprint match">{p.fingerprintNeed ?? 3} of 5 components</Field>
          <Field label="Check interval">{duration(p.checkIntervalSeconds ?? 86_400)}</Field>
          <Field label="Offline window">{duration(p.maxOfflineSeconds ?? 604_800)}</Field>
          <Field label="Self-service releases">
            {p.selfReleaseLimit === null ? 'no limit' : p.selfReleaseLimit === 0 ? 'off' : `${p.selfReleaseLimit} per 30 days`}
          </Field>
          <Field label="Fetch renewed terms">{p.licenceFetchEnabled ? 'allowed' : 'off'}</Field>
          <Field label="Air-gapped activation">
            {p.seatModel === 'FLOATING' ? 'not for floating seats' : p.airGapActivation ? `on: ${days(p.airGapActivationDays)} an activation` : 'off'}
          </Field>
          <Field label="Trials">
            {p.trialDays === 0
              ? 'off'
              : `${days(p.trialDays)} each; ${p.trialDailyLimit === null ? 'no daily limit' : `at most ${p.trialDailyLimit.toLocaleString()} a day`}, ${p.trialAddressDailyLimit === null ? 'no limit per address' : `${p.trialAddressDailyLimit.toLocaleString()} a day per address`}`}
          </Field>
          <Field label="Created">
            <DateTime value={p.createdAt} />{' '}
            <Text span size="xs" c="dimmed">
              by {p.createdBy}
            </Text>
          </Field>
          <Field label="Updated">
            <DateTime value={p.updatedAt} />
          </Field>
          {p.description && <Field label="Description">{p.description}</Field>}
        </SimpleGrid>
      </Card>

      <DeveloperCard product={p} checkToken={checkToken} keys={keys.data?.map((k) => k.publicKeyPem) ?? []}>
        <Guarded allowed={write.allowed} reason={write.reason}>
          {(disabled) => (
            <ConfirmButton
              label={p.checkTokenSet ? 'Rotate check token' : 'Create check token'}
              title={p.checkTokenSet ? 'Rotate the check token' : 'Create the check token'}
              disabled={disabled}
              consequence={p.checkTokenSet ? `${CHECK_TOKEN.rotating} It is shown once.` : `${CHECK_TOKEN.what} It is shown once.`}
              action={{
                ...rotate,
                run: async () => {
                  const done = await rotate.run();
                  if (done) setCheckToken(done.value.checkToken);
                  return done;
                },
              }}
            />
          )}
        </Guarded>
      </DeveloperCard>

      <section aria-labelledby="keys-heading">
        <Group justify="space-between" mb="xs">
          <Title order={2} size="h4" id="keys-heading">
            Key history
          </Title>
          {p.certificateType !== 'NONE' && (
            <Button
              variant="default"
              size="xs"
              loading={certificate.busy}
              onClick={async () => {
                const done = await certificate.run();
                if (done) download(done.value, `${p.productKey}-certificate.pem`, 'application/x-pem-file');
              }}
            >
              Download certificate
            </Button>
          )}
        </Group>
        <ErrorText error={certificate.error} title="Not downloaded" />
        {p.certificateSubject && (
          <Text size="sm" c="dimmed" mb="xs">
            Certificate {p.certificateSubject}, expires <DateTime value={p.certificateExpiresAt} withTime={false} />
            {p.certificateExpired && ' (expired)'}
          </Text>
        )}
        <RecordTable
          label="Key history"
          card={{ actions: 'Public key' }}
          error={keys.error}
          rows={keys.data}
          rowKey={(k) => k.keyFingerprint}
          empty="No key."
          minWidth={720}
          columns={[
            [
              'Fingerprint',
              (k) => (
                <Group gap={6} wrap="nowrap">
                  <Code>{k.keyFingerprint.slice(0, 16)}…</Code>
                  {k.current && <Badge size="sm">current</Badge>}
                </Group>
              ),
            ],
            ['Algorithm', (k) => options.data?.algorithms.find((a) => a.value === k.algorithm)?.label ?? k.algorithm],
            ['Created', (k) => <DateTime value={k.createdAt} />],
            [
              'Retired',
              (k) =>
                k.retiredAt ? (
                  <DateTime value={k.retiredAt} />
                ) : (
                  <Text span c="dimmed" inherit>
                    in use
                  </Text>
                ),
            ],
            [
              'Public key',
              (k) => (
                <Button
                  variant="subtle"
                  size="compact-sm"
                  onClick={() => download(k.publicKeyPem, `${p.productKey}-${k.keyFingerprint.slice(0, 8)}.pem`, 'application/x-pem-file')}
                  aria-label={`Download public key ${k.keyFingerprint.slice(0, 8)}`}
                >
                  Download
                </Button>
              ),
            ],
          ]}
        />
      </section>

      <section aria-labelledby="params-heading">
        <Title order={2} size="h4" id="params-heading" mb="xs">
          Parameters
        </Title>
        <RecordTable
          label="Parameters"
          rows={p.params as ProductParam[]}
          rowKey={(param) => param.key}
          empty="No parameters: Edit adds them."
          columns={[
            ['Key', (param) => <Code>{param.key}</Code>],
            ['Label', (param) => param.label],
            ['Type', (param) => paramTypeText(param)],
            ['Required', (param) => (param.required ? 'yes' : 'no')],
            [
              'Default',
              (param) =>
                paramDefaultText(param) ?? (
                  <Text span c="dimmed" inherit>
                    —
                  </Text>
                ),
            ],
          ]}
        />
      </section>
      <section aria-labelledby="meters-heading">
        <Title order={2} size="h4" id="meters-heading" mb="xs">
          Meters
        </Title>
        <RecordTable
          label="Meters"
          rows={p.meters}
          rowKey={(m) => m.key}
          empty="No meters: Edit adds them."
          columns={[
            ['Key', (m) => <Code>{m.key}</Code>],
            ['Label', (m) => m.label],
            ['Period', (m) => options.data?.meterPeriods.find((c) => c.value === m.period)?.label ?? ''],
            ['Limit', (m) => limitText(m)],
            ['Overage', (m) => overageText(m)],
            ...(p.trialDays > 0 ? [['Trials', (m: ProductMeter) => trialText(m, p.trialMeters)] as Column<ProductMeter>] : []),
          ]}
        />
      </section>
      {editing && <ProductForm product={p} opened onClose={() => setEditing(false)} />}
    </Stack>
  );
}
