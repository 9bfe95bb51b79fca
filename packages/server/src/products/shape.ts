import { FEATURE_CLAIM_NAMES, isReservedClaimName, type ParamValue } from '@licensor/protocol';
import { invalid } from '../core/errors.js';
import { isDate } from '../core/calendar.js';
import type { ProductRow } from './repo.js';
import type { CreateProductInput, LicenceType, ProductMeter, ProductParam, SeatModel, UpdateProductInput } from './schemas.js';

/** A product's editable fields other than its key: what licences of it look like. */
export interface ProductShape {
  productKey: string;
  name: string;
  description: string | null;
  active: boolean;
  licenceType: LicenceType;
  allowedLicenceTypes: LicenceType[];
  licenceFetchEnabled: boolean;
  checkIntervalSeconds: number;
  maxOfflineSeconds: number;
  fingerprintNeed: number;
  maxMachines: number;
  defaultValidityMonths: number | null;
  defaultGraceDays: number;
  selfReleaseLimit: number | null;
  seatModel: SeatModel;
  leaseSeconds: number;
  maxBorrowSeconds: number;
  maxBorrowedSeats: number;
  airGapActivation: boolean;
  airGapActivationDays: number;
  /** DESIGN.md 18: days a trial lasts (0 = no trials), its parameter values and meters, its two daily limits. */
  trialDays: number;
  trialParams: Record<string, unknown>;
  trialMeters: Record<string, { limit?: number | null; overage?: number | null }>;
  trialDailyLimit: number | null;
  trialAddressDailyLimit: number | null;
  /** DESIGN.md 20: the maintenance window licences get by default, in months (0 to 1,200); null = none. */
  updatesMonths: number | null;
  params: ProductParam[];
  meters: ProductMeter[];
}

export const SHAPE_FIELDS = [
  'productKey',
  'name',
  'description',
  'active',
  'licenceType',
  'allowedLicenceTypes',
  'licenceFetchEnabled',
  'checkIntervalSeconds',
  'maxOfflineSeconds',
  'fingerprintNeed',
  'maxMachines',
  'defaultValidityMonths',
  'defaultGraceDays',
  'selfReleaseLimit',
  'seatModel',
  'leaseSeconds',
  'maxBorrowSeconds',
  'maxBorrowedSeats',
  'airGapActivation',
  'airGapActivationDays',
  'trialDays',
  'trialParams',
  'trialMeters',
  'trialDailyLimit',
  'trialAddressDailyLimit',
  'updatesMonths',
  'params',
  'meters',
] as const satisfies ReadonlyArray<keyof ProductShape>;

// DESIGN.md 4's defaults for a new product (allowedLicenceTypes defaults to [licenceType]).
const DEFAULTS = {
  description: null,
  active: true,
  licenceType: 'OFFLINE',
  licenceFetchEnabled: false,
  checkIntervalSeconds: 86_400,
  maxOfflineSeconds: 604_800,
  fingerprintNeed: 3,
  maxMachines: 1,
  defaultValidityMonths: 12,
  defaultGraceDays: 0,
  selfReleaseLimit: 3,
  seatModel: 'NODE_LOCKED',
  leaseSeconds: 900,
  maxBorrowSeconds: 0,
  airGapActivation: false,
  airGapActivationDays: 90,
  trialDays: 0,
  trialParams: {},
  trialMeters: {},
  trialDailyLimit: null,
  trialAddressDailyLimit: 20,
  updatesMonths: null,
} as const;

/** defaultValidityMonths null: asked at issue; selfReleaseLimit null: no limit; updatesMonths null: no window. */
const NULL_MEANS_SOMETHING = new Set<string>(['defaultValidityMonths', 'selfReleaseLimit', 'trialDailyLimit', 'trialAddressDailyLimit', 'updatesMonths']);

export function shapeOf(row: ProductRow): ProductShape {
  return {
    productKey: row.product_key,
    name: row.name,
    description: row.description,
    active: row.active === 1,
    licenceType: row.licence_type as LicenceType,
    allowedLicenceTypes: JSON.parse(row.allowed_licence_types) as LicenceType[],
    licenceFetchEnabled: row.licence_fetch_enabled === 1,
    checkIntervalSeconds: row.check_interval_seconds,
    maxOfflineSeconds: row.max_offline_seconds,
    fingerprintNeed: row.fingerprint_need,
    maxMachines: row.max_machines,
    defaultValidityMonths: row.default_validity_months,
    defaultGraceDays: row.default_grace_days,
    selfReleaseLimit: row.self_release_limit,
    seatModel: row.seat_model as SeatModel,
    leaseSeconds: row.lease_seconds,
    maxBorrowSeconds: row.max_borrow_seconds,
    maxBorrowedSeats: row.max_borrowed_seats,
    airGapActivation: row.air_gap_activation === 1,
    airGapActivationDays: row.air_gap_activation_days,
    trialDays: row.trial_days,
    trialParams: JSON.parse(row.trial_params) as ProductShape['trialParams'],
    trialMeters: JSON.parse(row.trial_meters) as ProductShape['trialMeters'],
    trialDailyLimit: row.trial_daily_limit,
    trialAddressDailyLimit: row.trial_address_daily_limit,
    updatesMonths: row.updates_months,
    params: JSON.parse(row.params) as ProductParam[],
    meters: JSON.parse(row.meters) as ProductMeter[],
  };
}

/** The shape columns of a `products` row. */
export function shapeColumns(shape: ProductShape) {
  return {
    product_key: shape.productKey,
    name: shape.name,
    description: shape.description,
    active: shape.active ? 1 : 0,
    licence_type: shape.licenceType,
    allowed_licence_types: JSON.stringify(shape.allowedLicenceTypes),
    licence_fetch_enabled: shape.licenceFetchEnabled ? 1 : 0,
    check_interval_seconds: shape.checkIntervalSeconds,
    max_offline_seconds: shape.maxOfflineSeconds,
    fingerprint_need: shape.fingerprintNeed,
    max_machines: shape.maxMachines,
    default_validity_months: shape.defaultValidityMonths,
    default_grace_days: shape.defaultGraceDays,
    self_release_limit: shape.selfReleaseLimit,
    seat_model: shape.seatModel,
    lease_seconds: shape.leaseSeconds,
    max_borrow_seconds: shape.maxBorrowSeconds,
    max_borrowed_seats: shape.maxBorrowedSeats,
    air_gap_activation: shape.airGapActivation ? 1 : 0,
    air_gap_activation_days: shape.airGapActivationDays,
    trial_days: shape.trialDays,
    trial_params: JSON.stringify(shape.trialParams),
    trial_meters: JSON.stringify(shape.trialMeters),
    trial_daily_limit: shape.trialDailyLimit,
    trial_address_daily_limit: shape.trialAddressDailyLimit,
    updates_months: shape.updatesMonths,
    params: JSON.stringify(shape.params),
    meters: JSON.stringify(shape.meters),
  };
}

type ParamInput = NonNullable<CreateProductInput['params']>[number];

const completeParam = (p: ParamInput): ProductParam => ({
  key: p.key,
  label: p.label ?? p.key,
  type: p.type,
  required: p.required ?? false,
  defaultValue: p.defaultValue ?? null,
  options: p.options ?? [],
  help: p.help ?? null,
});

type MeterInput = NonNullable<CreateProductInput['meters']>[number];

/** A meter with its defaults; an overage sent with an unlimited meter (other than 0) is a 400. */
function completeMeter(m: MeterInput, i: number): ProductMeter {
  if (m.limit === null && m.overage !== undefined && m.overage !== 0)
    throw invalid(`meters[${i}].overage`, 'an unlimited meter has no overage', `Overage of meter "${m.key}"`);
  return {
    key: m.key,
    label: m.label ?? m.key,
    limit: m.limit,
    period: m.period ?? 'MONTH',
    overage: m.limit === null ? 0 : m.overage === undefined ? 0 : m.overage,
  };
}

/**
 * The shape a create (over the defaults) or an edit (over the current shape) produces, checked
 * as a whole, so a rule spanning two fields holds whichever of them the request changed.
 */
export function nextShape(input: UpdateProductInput, current: ProductShape | null): ProductShape {
  // The input names its shape fields as the shape does.
  const carried = SHAPE_FIELDS.filter((field) => input[field] !== undefined);
  // null puts a field back to its default, except where null has a meaning of its own.
  const given = Object.fromEntries(
    carried.map((field) => [field, input[field] === null && !NULL_MEANS_SOMETHING.has(field) ? DEFAULTS[field as keyof typeof DEFAULTS] : input[field]]),
  ) as Partial<ProductShape>;
  if (input.params) given.params = input.params.map(completeParam);
  if (input.meters) given.meters = input.meters.map(completeMeter);
  const base = current ?? newProductBase(input);
  const shape = { ...base, ...given } as ProductShape;
  // A parameter removed from `params` leaves `trialParams` in the same save (DESIGN.md 18)...
  const declared = new Set(shape.params.map((p) => p.key));
  if (input.trialParams === undefined || input.trialParams === null) {
    shape.trialParams = Object.fromEntries(Object.entries(shape.trialParams).filter(([key]) => declared.has(key)));
  }
  // And a meter removed from `meters` leaves `trialMeters`.
  const meters = new Set(shape.meters.map((m) => m.key));
  if (input.trialMeters === undefined || input.trialMeters === null) {
    shape.trialMeters = Object.fromEntries(Object.entries(shape.trialMeters).filter(([key]) => meters.has(key)));
  }
  // maxBorrowedSeats defaults to maxMachines, and keeps following it while it is "every seat".
  const following = current === null || current.maxBorrowedSeats === current.maxMachines;
  if (input.maxBorrowedSeats === null || (input.maxBorrowedSeats === undefined && following)) {
    shape.maxBorrowedSeats = shape.maxMachines;
  }
  // A product that becomes FLOATING without saying otherwise gets licence fetch (renewed terms reach running sites).
  if (shape.seatModel === 'FLOATING' && base.seatModel !== 'FLOATING' && input.licenceFetchEnabled == null) shape.licenceFetchEnabled = true;
  checkShape(shape, current);
  return shape;
}

/** A new product's starting shape: a FLOATING one issues ONLINE licences unless told otherwise. */
function newProductBase(input: UpdateProductInput): Omit<ProductShape, 'productKey' | 'name'> {
  const licenceType: LicenceType = input.licenceType ?? (input.seatModel === 'FLOATING' ? 'ONLINE' : DEFAULTS.licenceType);
  return { ...DEFAULTS, licenceType, allowedLicenceTypes: [licenceType], maxBorrowedSeats: DEFAULTS.maxMachines, params: [], meters: [] };
}

const FEATURE_CLAIMS = new Set<string>(FEATURE_CLAIM_NAMES);

function checkShape(shape: ProductShape, current: ProductShape | null): void {
  if (!shape.name.trim()) throw invalid('name', 'must not be blank');
  if (!shape.allowedLicenceTypes.includes(shape.licenceType)) {
    throw invalid('licenceType', `${shape.licenceType} is not among the allowed licence types (${shape.allowedLicenceTypes.join(', ')})`);
  }
  if (shape.maxOfflineSeconds < shape.checkIntervalSeconds) {
    throw invalid('maxOfflineSeconds', `must be at least the check interval (${shape.checkIntervalSeconds.toLocaleString('en-GB')} seconds)`);
  }
  if (shape.maxBorrowedSeats > shape.maxMachines)
    throw invalid('maxBorrowedSeats', `must be at most the machines a licence may hold (${shape.maxMachines.toLocaleString('en-GB')})`);
  const floating = shape.seatModel === 'FLOATING';
  if (floating && shape.allowedLicenceTypes.some((type) => type !== 'ONLINE')) {
    throw invalid('allowedLicenceTypes', 'a FLOATING product issues ONLINE licences only');
  }
  if (floating && shape.airGapActivation) {
    throw invalid('airGapActivation', 'a FLOATING product cannot activate air-gapped machines (its seats are leases renewed by checks)');
  }
  checkTrials(shape);
  if (shape.updatesMonths !== null) checkUpdateWindow(shape.params, 'updatesMonths');
  const seen = new Set<string>();
  shape.params.forEach((param, i) => {
    const at = `params[${i}]`;
    const named = `Parameter "${param.key}"`;
    if (floating && isReservedClaimName(param.key, true) && !isReservedClaimName(param.key)) {
      throw invalid(`${at}.key`, 'a claim of floating licences: a product with it cannot be FLOATING', named);
    }
    if (isReservedClaimName(param.key)) throw invalid(`${at}.key`, 'the name is reserved (an issuer claim)', named);
    if (FEATURE_CLAIMS.has(param.key) && !current?.params.some((kept) => kept.key === param.key)) {
      throw invalid(`${at}.key`, 'the name is reserved (a claim of update windows, meters and trials)', named);
    }
    if (seen.has(param.key)) throw invalid(`${at}.key`, 'declared twice', named);
    seen.add(param.key);
    if (param.type === 'ENUM' && param.options.length === 0)
      throw invalid(`${at}.options`, 'an ENUM needs at least one option', `Options of parameter "${param.key}"`);
    if (param.type !== 'ENUM' && param.options.length > 0) throw invalid(`${at}.options`, 'only an ENUM has options', `Options of parameter "${param.key}"`);
    paramDefault(param, `${at}.defaultValue`, `Default of parameter "${param.key}"`);
  });
  const meterKeys = new Set<string>();
  shape.meters.forEach((meter, i) => {
    if (meterKeys.has(meter.key)) throw invalid(`meters[${i}].key`, 'declared twice', `Meter "${meter.key}"`);
    meterKeys.add(meter.key);
  });
  // A parameter that kept `mtr` from before meters existed signs a value there (DESIGN.md 2).
  if (shape.meters.length > 0 && shape.params.some((param) => param.key === 'mtr')) {
    throw invalid('meters', 'this product has a parameter "mtr", the claim meters are signed as; it cannot declare meters');
  }
}

/**
 * DESIGN.md 2 reserves `upd` for the update window's claim: a product whose parameter kept the
 * name from before windows existed signs its value there, so it cannot have a window (400 naming
 * `field`, the product's or an issue's or renewal's `updatesMonths`).
 */
export function checkUpdateWindow(params: readonly ProductParam[], field: string): void {
  if (params.some((p) => p.key === 'upd')) {
    throw invalid(field, 'the product has a parameter "upd", which an update window signs as a claim; rename it first');
  }
}

/**
 * DESIGN.md 18's trial policy: never on a FLOATING product, nor one whose parameter kept `trl`;
 * trial values checked as issue's `params`, and while trials are on every required parameter has
 * a value; `trialMeters` checked as issue's `meters` overrides.
 */
function checkTrials(shape: ProductShape): void {
  const on = shape.trialDays > 0;
  if (on && shape.seatModel === 'FLOATING') throw invalid('trialDays', "a FLOATING product has no trials (a trial is one machine's ONLINE licence)");
  if (on && shape.params.some((p) => p.key === 'trl'))
    throw invalid('trialDays', 'the product has a parameter "trl", which a trial signs as a claim; rename it first');
  const declared = new Map(shape.params.map((p) => [p.key, p]));
  for (const [key, value] of Object.entries(shape.trialParams)) {
    const param = declared.get(key);
    if (!param) throw invalid(`trialParams.${key}`, 'not a parameter of this product', `Trial value "${key}"`);
    if (value !== null) paramValue(param, value, `trialParams.${key}`, `Trial value of ${param.label}`);
  }
  for (const param of shape.params) {
    if (on && param.required && shape.trialParams[param.key] == null && paramDefault(param) === null) {
      throw invalid(`trialParams.${param.key}`, 'required, and the parameter has no default', `Trial value of ${param.label}`);
    }
  }
  licenceMeters(shape.meters, [], shape.trialMeters, false, 'trialMeters');
}

/** A parameter value as issue takes it: already of the parameter's JSON type (DESIGN.md 3), else a 400 about `field` (named by the parameter's label). */
export function paramValue(param: ProductParam, value: unknown, field: string, label = param.label): ParamValue {
  const refuse = (problem: string) => invalid(field, problem, label);
  switch (param.type) {
    case 'STRING':
      if (typeof value === 'string') return value;
      throw refuse('must be text');
    case 'ENUM':
      if (typeof value === 'string' && param.options.includes(value)) return value;
      throw refuse(`must be one of ${param.options.join(', ')}`);
    case 'INTEGER':
      if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
      throw refuse('must be a whole number');
    case 'BOOLEAN':
      if (typeof value === 'boolean') return value;
      throw refuse('must be true or false');
    case 'DATE':
      if (typeof value === 'string' && isDate(value)) return value;
      throw refuse('must be a date (YYYY-MM-DD)');
    case 'STRING_LIST':
      if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
      throw refuse('must be a list of texts');
  }
}

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

/**
 * A parameter's default as the claim value it stands for (DESIGN.md 3), null when it has none;
 * a `defaultValue` text that is not a value of the parameter's type is a 400 about `field`.
 */
export function paramDefault(param: ProductParam, field = 'defaultValue', label?: string): ParamValue | null {
  const text = param.defaultValue;
  if (text === null) return null;
  const refuse = (problem: string) => invalid(field, problem, label);
  switch (param.type) {
    case 'INTEGER':
      if (!INTEGER.test(text) || !Number.isSafeInteger(Number(text))) throw refuse(`"${text}" is not a decimal integer`);
      return Number(text);
    case 'BOOLEAN':
      if (text !== 'true' && text !== 'false') throw refuse(`"${text}" is not true or false`);
      return text === 'true';
    case 'DATE':
      if (!isDate(text)) throw refuse(`"${text}" is not a date (YYYY-MM-DD)`);
      return text;
    case 'STRING_LIST': {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        value = null;
      }
      if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw refuse('is not a JSON array of strings');
      return value as string[];
    }
    case 'ENUM':
      if (!param.options.includes(text)) throw refuse(`"${text}" is not one of the options`);
      return text;
    default:
      return text;
  }
}

/** The shape fields whose values differ between two shapes, for the audit trail. */
export function changedFields(before: ProductShape, after: ProductShape): string[] {
  return SHAPE_FIELDS.filter((field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]));
}

/** A licence's meter (DESIGN.md 19): the product's, with this licence's limit and overage. */
export type LicenceMeter = ProductMeter;
export type MeterOverrides = Record<string, { limit?: number | null | undefined; overage?: number | null | undefined }>;

/**
 * The licence's meters at issue (`kept` empty) or renewal (`kept` the licence's own): the
 * product's list, its labels and periods; a key the licence had keeps its limit and overage, a
 * new one takes the product's; the body's overrides apply last (400s name `field`). An OFFLINE licence has none.
 */
export function licenceMeters(
  declared: readonly ProductMeter[],
  kept: readonly LicenceMeter[],
  overrides: MeterOverrides | undefined,
  offline: boolean,
  field: 'meters' | 'trialMeters' = 'meters',
): LicenceMeter[] {
  if (offline) {
    if (overrides !== undefined) throw invalid('meters', 'an OFFLINE licence has no meters (nothing reports its usage)');
    return [];
  }
  const given = overrides ?? {};
  const stray = Object.keys(given).find((key) => !declared.some((m) => m.key === key));
  if (stray !== undefined) throw invalid(`${field}.${stray}`, 'not a meter of this product', `Meter "${stray}"`);
  return declared.map((meter) => {
    const own = kept.find((m) => m.key === meter.key) ?? meter;
    const override = given[meter.key] ?? {};
    const limit = override.limit !== undefined ? override.limit : own.limit;
    let overage = override.overage !== undefined ? override.overage : own.overage;
    if (limit === null) {
      if (override.overage !== undefined && override.overage !== 0)
        throw invalid(`${field}.${meter.key}.overage`, 'an unlimited meter has no overage', `Overage of ${meter.label}`);
      overage = 0;
    }
    return { key: meter.key, label: meter.label, period: meter.period, limit, overage };
  });
}

/** The meters as the `mtr` claim signs them (DESIGN.md 19). */
export const meterClaims = (meters: readonly LicenceMeter[]) => meters.map((m) => ({ k: m.key, p: m.period, l: m.limit, o: m.overage }));
