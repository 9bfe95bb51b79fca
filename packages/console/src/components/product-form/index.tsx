import {
  Checkbox,
  Divider,
  FileInput,
  Group,
  NumberInput,
  PasswordInput,
  Radio,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Text,
  Textarea,
  TextInput,
} from '@mantine/core';
import { useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { fieldOf, inWords } from '../../api/client';
import { useProductOptions, useSaveProduct, type Product, type ProductBody } from '../../api/products';
import { duration } from '../display';
import { overridesOf } from '../usage-meters';
import { ModalForm, useProblems } from '../modal-form';
import type { ProductParam } from '../param-input';
import { MeterEditor, meterDraftOf, meterOf, meterProblems, type MeterDraft } from './meter-editor';
import { ParamEditor, paramProblems } from './param-editor';
import { SeatFields, type SeatDraft } from './seat-fields';
import { TrialFields, trialParamsOf, trialProblems, type TrialDraft } from './trial-fields';

type LicenceType = 'OFFLINE' | 'ONLINE' | 'HYBRID';
type Algorithm = Product['algorithm'];
type Count = number | '';

interface Draft extends SeatDraft, TrialDraft {
  productKey: string;
  name: string;
  description: string;
  active: boolean;
  algorithm: Algorithm;
  /** Where the key comes from: kept or generated here, a PEM, a PKCS#12 keystore, or a PKCS#11 token. */
  keySource: 'managed' | 'pem' | 'pkcs12' | 'pkcs11';
  privateKeyPem: string;
  privateKeyPassphrase: string;
  keystore: File | null;
  keystorePassword: string;
  tokenLabel: string;
  keyLabel: string;
  pin: string;
  certificateType: string;
  certificatePem: string;
  licenceType: LicenceType;
  allowedLicenceTypes: LicenceType[];
  licenceFetchEnabled: boolean;
  checkIntervalSeconds: Count;
  maxOfflineSeconds: Count;
  fingerprintNeed: Count;
  maxMachines: Count;
  defaultValidityMonths: Count;
  defaultGraceDays: Count;
  /** The maintenance window (DESIGN.md 20), kept while `noUpdateWindow` hides it. */
  updatesMonths: Count;
  noUpdateWindow: boolean;
  selfReleaseLimit: Count;
  airGapActivation: boolean;
  airGapActivationDays: Count;
  params: ProductParam[];
  meters: MeterDraft[];
}

/** DESIGN.md 4's defaults for a new product; an existing one as it stands. */
function draftOf(product: Product | undefined): Draft {
  return {
    productKey: product?.productKey ?? '',
    name: product?.name ?? '',
    description: product?.description ?? '',
    active: product?.active ?? true,
    algorithm: product?.algorithm ?? 'ED25519',
    keySource: 'managed',
    privateKeyPem: '',
    privateKeyPassphrase: '',
    keystore: null,
    keystorePassword: '',
    tokenLabel: product?.pkcs11?.tokenLabel ?? '',
    keyLabel: product?.pkcs11?.keyLabel ?? '',
    pin: '',
    certificateType: product?.certificateType ?? 'SELF_SIGNED',
    certificatePem: product?.certificatePem ?? '',
    licenceType: product?.licenceType ?? 'OFFLINE',
    allowedLicenceTypes: product?.allowedLicenceTypes ?? ['OFFLINE'],
    licenceFetchEnabled: product?.licenceFetchEnabled ?? false,
    checkIntervalSeconds: product?.checkIntervalSeconds ?? 86_400,
    maxOfflineSeconds: product?.maxOfflineSeconds ?? 604_800,
    fingerprintNeed: product?.fingerprintNeed ?? 3,
    maxMachines: product?.maxMachines ?? 1,
    defaultValidityMonths: product ? (product.defaultValidityMonths ?? '') : 12,
    defaultGraceDays: product?.defaultGraceDays ?? 0,
    updatesMonths: product?.updatesMonths ?? 12,
    noUpdateWindow: (product?.updatesMonths ?? null) === null,
    selfReleaseLimit: product ? (product.selfReleaseLimit ?? '') : 3,
    seatModel: product?.seatModel ?? 'NODE_LOCKED',
    leaseSeconds: product?.leaseSeconds ?? 900,
    maxBorrowSeconds: product?.maxBorrowSeconds ?? 0,
    // Empty while it is every seat, so that it follows maxMachines.
    maxBorrowedSeats: product && product.maxBorrowedSeats !== product.maxMachines ? product.maxBorrowedSeats : '',
    airGapActivation: product?.airGapActivation ?? false,
    airGapActivationDays: product?.airGapActivationDays ?? 90,
    params: (product?.params as ProductParam[] | undefined) ?? [],
    meters: (product?.meters ?? []).map(meterDraftOf),
    trialMeters: product?.trialMeters ?? {},
    trialDays: product?.trialDays ?? 0,
    trialDailyLimit: product?.trialDailyLimit ?? '',
    trialAddressDailyLimit: product ? (product.trialAddressDailyLimit ?? '') : 20,
    trialParams: (product?.trialParams as TrialDraft['trialParams'] | undefined) ?? {},
  };
}

const count = (value: string | number): Count => (typeof value === 'number' ? value : '');

/** A file's bytes as base64, as the API takes a keystore. */
async function base64Of(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The request's key fields for the chosen source; secrets only for the source chosen. */
async function keyFields(draft: Draft) {
  switch (draft.keySource) {
    case 'pem':
      return {
        keyOrigin: 'imported' as const,
        privateKeyPem: draft.privateKeyPem,
        ...(draft.privateKeyPassphrase ? { privateKeyPassphrase: draft.privateKeyPassphrase } : {}),
      };
    case 'pkcs12':
      return { keyOrigin: 'imported' as const, keystorePkcs12: draft.keystore ? await base64Of(draft.keystore) : '', keystorePassword: draft.keystorePassword };
    case 'pkcs11':
      return {
        keyOrigin: 'pkcs11' as const,
        pkcs11: { tokenLabel: draft.tokenLabel, ...(draft.keyLabel.trim() ? { keyLabel: draft.keyLabel.trim() } : {}), pin: draft.pin },
      };
    default:
      return {};
  }
}
const LICENCE_TYPES: LicenceType[] = ['OFFLINE', 'ONLINE', 'HYBRID'];

/** Creates a product (no `product`) or edits one: every field of DESIGN.md 4, parameters included. */
export function ProductForm({ product, opened, onClose }: { product?: Product; opened: boolean; onClose: () => void }) {
  const { slug = '' } = useParams();
  const navigate = useNavigate();
  const options = useProductOptions(opened);
  const save = useSaveProduct(product?.id);
  const [draft, setDraft] = useState(() => draftOf(product));
  const [tried, setTried] = useState(false);
  const set = (change: Partial<Draft>) => setDraft((d) => ({ ...d, ...change }));
  const reserved = [...(options.data?.reservedParamKeys ?? []), ...(draft.seatModel === 'FLOATING' ? (options.data?.reservedFloatingParamKeys ?? []) : [])];
  // An imported key, or an existing key on a token, has its own algorithm.
  const keyDecides = draft.keySource === 'pem' || draft.keySource === 'pkcs12' || (draft.keySource === 'pkcs11' && draft.keyLabel.trim() !== '');
  const pkcs11 = options.data?.keyOrigins.find((o) => o.value === 'pkcs11');
  const pkcs12 = options.data?.keyFormats.find((f) => f.value === 'PKCS12');
  const paramsOk = paramProblems(draft.params, reserved).every((p) => Object.keys(p).length === 0);
  const meterIssues = meterProblems(draft.meters);
  const metersOk = meterIssues.every((p) => Object.keys(p).length === 0);
  const meters = draft.meters.map(meterOf);
  const editing = product !== undefined;

  const problems = useProblems<string>({
    name: !draft.name.trim() && 'Enter the product’s name',
    productKey: !draft.productKey.trim()
      ? 'Enter a product key'
      : !/^[A-Za-z0-9._-]{1,64}$/.test(draft.productKey.trim()) && 'Letters, digits, dot, dash and underscore, at most 64 characters',
    privateKeyPem: draft.keySource === 'pem' && !draft.privateKeyPem.trim() && 'Paste the private key',
    keystore: draft.keySource === 'pkcs12' && !draft.keystore && 'Choose the keystore file',
    pin: draft.keySource === 'pkcs11' && !draft.pin && 'Enter the token’s PIN',
    certificatePem: draft.certificateType === 'IMPORTED' && draft.keySource !== 'pkcs12' && !draft.certificatePem.trim() && 'Paste the certificate',
    allowedLicenceTypes: draft.allowedLicenceTypes.length === 0 && 'Allow at least one licence type',
    updatesMonths: !draft.noUpdateWindow && draft.updatesMonths === '' && 'Enter the months of updates, or switch on No update window',
    ...trialProblems(draft, draft.params),
  });
  // A refusal naming a trial field shows beside it; any other below the form.
  const message = save.error instanceof Error ? inWords(save.error.message) : '';
  // A trial meter's limit or overage shows beside the meter.
  const field = fieldOf(save.error)?.replace(/^(trialMeters\.[^.]+)\..*$/, '$1') ?? null;
  const trialField = field !== null && /^(trialDays|trialDailyLimit|trialAddressDailyLimit|trialParams\.|trialMeters\.)/.test(field) ? field : null;
  const trialErrorOf = (field: string) => problems.of(field) ?? (trialField === field ? message : undefined);

  const close = () => {
    setDraft(draftOf(product));
    setTried(false);
    save.reset();
    onClose();
  };

  const submit = async () => {
    setTried(true);
    if (!problems.check() || !paramsOk || !metersOk) return false;
    const orNull = (value: Count) => (value === '' ? null : value);
    const body: ProductBody = {
      productKey: draft.productKey.trim(),
      name: draft.name.trim(),
      description: draft.description.trim() || null,
      active: draft.active,
      ...(editing || keyDecides ? {} : { algorithm: draft.algorithm }),
      ...(await keyFields(draft)),
      // A keystore brings its own certificate (or gets a self-signed one).
      ...(draft.keySource === 'pkcs12'
        ? {}
        : {
            certificateType: draft.certificateType as 'SELF_SIGNED' | 'NONE' | 'IMPORTED',
            ...(draft.certificateType === 'IMPORTED' ? { certificatePem: draft.certificatePem } : {}),
          }),
      licenceType: draft.licenceType,
      allowedLicenceTypes: draft.allowedLicenceTypes,
      licenceFetchEnabled: draft.licenceFetchEnabled,
      checkIntervalSeconds: orNull(draft.checkIntervalSeconds),
      maxOfflineSeconds: orNull(draft.maxOfflineSeconds),
      fingerprintNeed: orNull(draft.fingerprintNeed),
      ...(draft.maxMachines === '' ? {} : { maxMachines: draft.maxMachines }),
      defaultValidityMonths: orNull(draft.defaultValidityMonths),
      defaultGraceDays: orNull(draft.defaultGraceDays),
      updatesMonths: draft.noUpdateWindow ? null : orNull(draft.updatesMonths),
      selfReleaseLimit: orNull(draft.selfReleaseLimit),
      seatModel: draft.seatModel,
      leaseSeconds: orNull(draft.leaseSeconds),
      maxBorrowSeconds: orNull(draft.maxBorrowSeconds),
      maxBorrowedSeats: orNull(draft.maxBorrowedSeats),
      airGapActivation: draft.airGapActivation,
      airGapActivationDays: orNull(draft.airGapActivationDays),
      params: draft.params.map((p) => ({ ...p, label: p.label.trim() || p.key })),
      trialDays: draft.trialDays === '' ? 0 : draft.trialDays,
      trialDailyLimit: orNull(draft.trialDailyLimit),
      trialAddressDailyLimit: orNull(draft.trialAddressDailyLimit),
      trialParams: trialParamsOf(draft.params, draft.trialParams),
      meters,
      trialMeters: overridesOf(meters, draft.trialMeters),
    };
    const saved = await save.run(body);
    if (saved) {
      set({ privateKeyPem: '', privateKeyPassphrase: '', keystore: null, keystorePassword: '', pin: '', keySource: 'managed' });
      if (!editing) navigate(`/o/${slug}/products/${saved.value.id}`);
    }
    return saved;
  };

  const choices = (list: Array<{ value: string; label: string; available: boolean; reason?: string }> | undefined) =>
    (list ?? []).map((c) => ({ value: c.value, label: c.available ? c.label : `${c.label} (${c.reason ?? 'unavailable'})`, disabled: !c.available }));
  const online = draft.allowedLicenceTypes.some((t) => t !== 'OFFLINE');

  return (
    <ModalForm
      title={editing ? `Edit ${product.name}` : 'New product'}
      submit={editing ? 'Save changes' : 'Create product'}
      opened={opened}
      onClose={close}
      size="xl"
      fullScreen={window.innerWidth < 600}
      action={{ busy: save.busy, error: trialField ? null : save.error }}
      onSubmit={submit}
      disabled={!paramsOk || !options.data}
    >
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput
          label="Name"
          required
          value={draft.name}
          onChange={(e) => set({ name: e.currentTarget.value })}
          maxLength={200}
          error={problems.of('name')}
        />
        <TextInput
          label="Product key"
          description="Signed into every licence as prd"
          required
          value={draft.productKey}
          onChange={(e) => set({ productKey: e.currentTarget.value })}
          maxLength={64}
          error={
            problems.of('productKey') ??
            (draft.productKey && !/^[A-Za-z0-9._-]+$/.test(draft.productKey) ? 'Letters, digits, dot, dash and underscore, at most 64 characters' : undefined)
          }
        />
      </SimpleGrid>
      <Textarea
        label="Description"
        autosize
        minRows={1}
        value={draft.description}
        onChange={(e) => set({ description: e.currentTarget.value })}
        maxLength={2000}
      />
      {editing && <Switch label="Active (offered when issuing)" checked={draft.active} onChange={(e) => set({ active: e.currentTarget.checked })} />}

      <Divider label="Signing key" labelPosition="left" />
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <Select
          label="Algorithm"
          description={
            editing ? 'Changes only with a new key: Regenerate key on the product page' : keyDecides ? 'Taken from the key' : 'Ed25519 is small and fast'
          }
          data={choices(options.data?.algorithms)}
          value={keyDecides && !editing ? null : draft.algorithm}
          placeholder="The key's own"
          onChange={(algorithm) => set({ algorithm: (algorithm ?? 'ED25519') as Algorithm })}
          allowDeselect={false}
          disabled={editing || keyDecides}
        />
        {draft.keySource === 'pkcs12' ? (
          <Text size="sm" c="dimmed" pt="lg">
            The keystore&apos;s certificate becomes the product&apos;s; without one, the key signs its own.
          </Text>
        ) : (
          <Select
            label="Certificate"
            data={choices(options.data?.certificateTypes)}
            value={draft.certificateType}
            onChange={(value) => set({ certificateType: value ?? 'SELF_SIGNED' })}
            allowDeselect={false}
          />
        )}
      </SimpleGrid>
      <Radio.Group
        label="Private key"
        value={draft.keySource}
        onChange={(value) =>
          set({
            keySource: value as Draft['keySource'],
            ...(value === 'pkcs11' && !draft.tokenLabel ? { tokenLabel: options.data?.pkcs11Tokens[0] ?? '' } : {}),
          })
        }
      >
        <Stack gap={6} mt={6}>
          <Radio value="managed" label={editing ? 'Keep the current key' : 'Generate a new key here'} />
          <Radio value="pem" label="Import a PEM private key" description="PKCS#8 or traditional PEM, optionally encrypted" />
          <Radio
            value="pkcs12"
            label="Import a PKCS#12 keystore"
            description={pkcs12?.available === false ? pkcs12.reason : '.p12 or .pfx from OpenSSL, Java keytool or a certificate authority'}
            disabled={pkcs12?.available === false}
          />
          <Radio
            value="pkcs11"
            label="Keep the key on a hardware security module (PKCS#11)"
            description={pkcs11?.available ? 'The key never leaves the token; the service signs there' : pkcs11?.reason}
            disabled={!pkcs11?.available}
          />
        </Stack>
      </Radio.Group>
      {draft.keySource === 'pem' && (
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <Textarea
            label="Private key (PEM)"
            required
            autosize
            minRows={3}
            maxRows={8}
            ff="monospace"
            value={draft.privateKeyPem}
            onChange={(e) => set({ privateKeyPem: e.currentTarget.value })}
            error={problems.of('privateKeyPem')}
          />
          <PasswordInput
            label="Passphrase"
            description="Only for an encrypted key; never stored"
            value={draft.privateKeyPassphrase}
            onChange={(e) => set({ privateKeyPassphrase: e.currentTarget.value })}
          />
        </SimpleGrid>
      )}
      {draft.keySource === 'pkcs12' && (
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <FileInput
            label="Keystore file"
            description="Holding one private key"
            placeholder="Choose a .p12 or .pfx file"
            accept=".p12,.pfx,application/x-pkcs12"
            required
            clearable
            value={draft.keystore}
            onChange={(keystore) => set({ keystore })}
            error={problems.of('keystore')}
          />
          <PasswordInput
            label="Keystore password"
            description="Used once to open it; never stored"
            value={draft.keystorePassword}
            onChange={(e) => set({ keystorePassword: e.currentTarget.value })}
          />
        </SimpleGrid>
      )}
      {draft.keySource === 'pkcs11' && (
        <SimpleGrid cols={{ base: 1, sm: 3 }}>
          <Select
            label="Token"
            required
            data={options.data?.pkcs11Tokens ?? []}
            value={draft.tokenLabel || null}
            onChange={(tokenLabel) => set({ tokenLabel: tokenLabel ?? '' })}
            allowDeselect={false}
          />
          <TextInput
            label="Key label"
            description="Empty: a new key pair is generated on the token"
            value={draft.keyLabel}
            onChange={(e) => set({ keyLabel: e.currentTarget.value })}
            maxLength={128}
          />
          <PasswordInput
            label="PIN"
            description="Sealed like a private key; never shown again"
            required
            value={draft.pin}
            onChange={(e) => set({ pin: e.currentTarget.value })}
            maxLength={128}
            error={problems.of('pin')}
          />
        </SimpleGrid>
      )}
      {draft.certificateType === 'IMPORTED' && (
        <Textarea
          label="Certificate (PEM)"
          required
          autosize
          minRows={3}
          maxRows={8}
          ff="monospace"
          value={draft.certificatePem}
          onChange={(e) => set({ certificatePem: e.currentTarget.value })}
          error={problems.of('certificatePem')}
        />
      )}

      <Divider label="Licences" labelPosition="left" />
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <Checkbox.Group
          label="Allowed licence types"
          error={problems.of('allowedLicenceTypes')}
          value={draft.allowedLicenceTypes}
          onChange={(value) => {
            const allowed = LICENCE_TYPES.filter((t) => value.includes(t));
            set({ allowedLicenceTypes: allowed, licenceType: allowed.includes(draft.licenceType) ? draft.licenceType : (allowed[0] ?? draft.licenceType) });
          }}
        >
          <Group mt={6}>
            {LICENCE_TYPES.map((t) => (
              <Checkbox key={t} value={t} label={t} disabled={draft.seatModel === 'FLOATING' && t !== 'ONLINE'} />
            ))}
          </Group>
        </Checkbox.Group>
        <Select
          label="Default licence type"
          data={draft.allowedLicenceTypes}
          value={draft.licenceType}
          onChange={(value) => set({ licenceType: (value ?? draft.licenceType) as LicenceType })}
          allowDeselect={false}
        />
        <NumberInput
          label="Default validity (months)"
          description="0 = perpetual; empty = asked at issue"
          min={0}
          max={1200}
          allowDecimal={false}
          value={draft.defaultValidityMonths}
          onChange={(v) => set({ defaultValidityMonths: count(v) })}
        />
        <NumberInput
          label="Default grace days"
          min={0}
          max={3650}
          allowDecimal={false}
          value={draft.defaultGraceDays}
          onChange={(v) => set({ defaultGraceDays: count(v) })}
        />
        <Stack gap={6}>
          <NumberInput
            label="Updates (months)"
            description="Releases published this long after a licence's issue or renewal are covered; a lapsed licence keeps those"
            min={0}
            max={1200}
            allowDecimal={false}
            disabled={draft.noUpdateWindow}
            value={draft.updatesMonths}
            onChange={(v) => set({ updatesMonths: count(v) })}
            error={problems.of('updatesMonths')}
          />
          <Switch
            label="No update window"
            description="Every release published while the licence is valid"
            checked={draft.noUpdateWindow}
            onChange={(e) => set({ noUpdateWindow: e.currentTarget.checked })}
          />
        </Stack>
        <NumberInput
          label="Max machines"
          description="Seats per licence, by default"
          min={1}
          max={1_000_000}
          allowDecimal={false}
          value={draft.maxMachines}
          onChange={(v) => set({ maxMachines: count(v) })}
        />
        <NumberInput
          label="Fingerprint components to match"
          description="Of five; fewer tolerates hardware changes"
          min={1}
          max={5}
          allowDecimal={false}
          value={draft.fingerprintNeed}
          onChange={(v) => set({ fingerprintNeed: count(v) })}
        />
        <NumberInput
          label="Self-service releases (per 30 days)"
          description="Seats a licence may free by itself, from the application or the customer; 0 = off, empty = no limit"
          min={0}
          max={100}
          allowDecimal={false}
          value={draft.selfReleaseLimit}
          onChange={(v) => set({ selfReleaseLimit: count(v) })}
        />
      </SimpleGrid>

      <Divider label="Seats" labelPosition="left" />
      <SeatFields
        draft={draft}
        maxMachines={draft.maxMachines}
        checkRateAddress={options.data?.checkRateAddress}
        onChange={(change) =>
          set({
            ...change,
            // Floating licences are ONLINE, and fetch their renewed terms (the API's defaults too); their seats are leases, never air-gapped,
            // and never trials (a trial holds one machine).
            ...(change.seatModel === 'FLOATING'
              ? { allowedLicenceTypes: ['ONLINE'], licenceType: 'ONLINE', licenceFetchEnabled: true, airGapActivation: false, trialDays: 0 }
              : {}),
          })
        }
      />

      <Divider label="Online checks" labelPosition="left" />
      {!online && (
        <Text size="sm" c="dimmed">
          Used by ONLINE and HYBRID licences; allow one of them above to make them matter.
        </Text>
      )}
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <NumberInput
          label="Check interval (seconds)"
          description={typeof draft.checkIntervalSeconds === 'number' ? `Every ${duration(draft.checkIntervalSeconds)}` : 'Default: 1 day'}
          min={120}
          max={315_360_000}
          allowDecimal={false}
          thousandSeparator=","
          value={draft.checkIntervalSeconds}
          onChange={(v) => set({ checkIntervalSeconds: count(v) })}
        />
        <NumberInput
          label="Offline window (seconds)"
          description={typeof draft.maxOfflineSeconds === 'number' ? `Works ${duration(draft.maxOfflineSeconds)} without an answer` : 'Default: 7 days'}
          min={120}
          max={315_360_000}
          allowDecimal={false}
          thousandSeparator=","
          value={draft.maxOfflineSeconds}
          onChange={(v) => set({ maxOfflineSeconds: count(v) })}
        />
      </SimpleGrid>
      <Switch
        label="Applications may fetch renewed terms"
        description="Lets the SDK's fetch() download the current licence string with the check token"
        checked={draft.licenceFetchEnabled}
        onChange={(e) => set({ licenceFetchEnabled: e.currentTarget.checked })}
      />
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <Switch
          label="Air-gapped activation"
          description={
            draft.seatModel === 'FLOATING'
              ? 'Node-locked products only: a floating seat is a lease that checks renew'
              : 'Computers that never reach the service activate by copy and paste, through the console or the customer portal'
          }
          disabled={draft.seatModel === 'FLOATING'}
          checked={draft.airGapActivation}
          onChange={(e) => set({ airGapActivation: e.currentTarget.checked })}
        />
        <NumberInput
          label="Air-gapped activation (days)"
          description="How long one activation lasts, at most to the licence's grace end"
          min={1}
          max={3650}
          allowDecimal={false}
          disabled={!draft.airGapActivation}
          value={draft.airGapActivationDays}
          onChange={(v) => set({ airGapActivationDays: count(v) })}
        />
      </SimpleGrid>

      <Divider label="Parameters" labelPosition="left" />
      <ParamEditor params={draft.params} reserved={reserved} onChange={(params) => set({ params })} />

      <Divider label="Meters" labelPosition="left" />
      <MeterEditor
        meters={draft.meters}
        periods={options.data?.meterPeriods ?? []}
        tried={tried}
        offlineOnly={!online}
        onChange={(meters) => set({ meters })}
      />

      <Divider label="Trial" labelPosition="left" />
      <TrialFields
        draft={draft}
        params={draft.params.filter((p) => p.key.trim() !== '')}
        meters={meters.filter((_, i) => meterIssues[i]!.key === undefined)}
        floating={draft.seatModel === 'FLOATING'}
        errorOf={trialErrorOf}
        onChange={set}
      />
    </ModalForm>
  );
}
