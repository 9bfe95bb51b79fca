import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { apiPath, capitalised, fieldName, fieldWords, words } from '../core/fields.js';
import { ErrorBody } from '../core/schemas.js';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What makes a string unfit to store: a NUL (PostgreSQL refuses it) or broken UTF-16. */
export function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(text)) return 'must be well-formed Unicode (a lone surrogate was found)';
  return null;
}

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, removeAdditional: false, useDefaults: true, strict: false, ...options });
  addFormats(ajv);
  ajv.addKeyword({
    keyword: WELL_FORMED,
    type: 'string',
    schemaType: 'boolean',
    errors: true,
    validate: function wellFormed(this: unknown, _schema: boolean, data: string) {
      const problem = textProblem(data);
      if (problem === null) return true;
      (wellFormed as unknown as { errors: unknown[] }).errors = [{ keyword: WELL_FORMED, message: problem, params: {} }];
      return false;
    },
  });
  return ajv;
}

const WELL_FORMED = 'x-well-formed';

/**
 * One rule for every string the service accepts, applied where schemas are compiled rather than
 * remembered per field: each string schema also refuses NUL and lone surrogates.
 */
function withTextRule(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withTextRule);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) out[key] = key === 'enum' || key === 'const' || key === 'default' ? value : withTextRule(value);
  const type = (schema as { type?: unknown }).type;
  if (type === 'string' || (Array.isArray(type) && type.includes('string'))) out[WELL_FORMED] = true;
  return out;
}

/*
 * Bodies are JSON and must already carry the declared types (a "12" is not an integer);
 * query strings and path parameters are text by nature, so they are coerced. `verbose` hands
 * each error the schema it broke, so a message can say what that field allows.
 */
const bodies = makeAjv({ coerceTypes: false, verbose: true });
const urls = makeAjv({ coerceTypes: 'array', verbose: true });
for (const ajv of [bodies, urls]) ajv.addSchema(ErrorBody);

type Validate = ((data: unknown, context?: unknown) => boolean | { value: unknown }) & { errors?: unknown };

/**
 * DESIGN.md 4: a request without a body, or with `Content-Type: application/json` and an empty
 * one, has none; where a route takes an object, none is the empty object. So a body whose fields
 * are all optional may be left out, and one that needs a field says which. Fastify hands an
 * absent body over as null; the empty object replaces it through the `{ value }` answer.
 */
function orEmptyObject(validate: Validate): Validate {
  const wrapped: Validate = (data, context) => {
    if (data !== null && data !== undefined) return validate(data, context);
    const value = {};
    return validate(value) && { value };
  };
  return Object.defineProperties(wrapped, {
    errors: { get: () => validate.errors },
    schemaEnv: { value: (validate as { schemaEnv?: unknown }).schemaEnv },
  });
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart !== 'body') return urls.compile(withTextRule(schema) as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  const validate = bodies.compile(withTextRule(schema) as object) as Validate;
  return ((schema as { type?: unknown }).type === 'object' ? orEmptyObject(validate) : validate) as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** True when a route's body may be left out: an object that needs no field (OpenAPI's `requestBody.required: false`). */
export function bodyIsOptional(schema: { type?: unknown; required?: unknown[]; minProperties?: number }): boolean {
  return schema.type === 'object' && !schema.required?.length && !schema.minProperties;
}

/**
 * Each schema compiled once: withTextRule makes a new object, so Ajv's own cache (by object) never
 * hit, and compiling on every call was a third of the usage route's CPU (docs/benchmarks.md, bench:usage).
 */
const compiled = new WeakMap<object, ReturnType<Ajv['compile']>>();

/** Validates a value against a body schema outside Fastify's routes (the CLI, the usage route's body): the first problem, or null. */
export function firstProblem(schema: object, value: unknown, what: string): string | null {
  let check = compiled.get(schema);
  if (!check) compiled.set(schema, (check = bodies.compile(withTextRule(schema) as object)));
  if (check(value)) return null;
  return check.errors?.length ? schemaErrorMessage(check.errors as never, what).message : `${what} is invalid`;
}

interface Schema {
  type?: string | string[];
  const?: unknown;
  anyOf?: Schema[];
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
}

interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: Schema;
}

/**
 * Every pattern a route's schema uses, said in words: its characters and, where the pattern
 * fixes them, its lengths. A pattern missing here fails a test (test/api/openapi.test.ts).
 */
export const PATTERNS: Record<string, { chars: string; length?: [number, number] }> = {
  '^[A-Za-z0-9._-]{1,64}$': { chars: 'letters, digits, dot, dash and underscore', length: [1, 64] },
  '^[A-Za-z0-9._-]+$': { chars: 'letters, digits, dot, dash and underscore' },
  '^[A-Za-z0-9._@-]+$': { chars: 'letters, digits, dot, dash, underscore and @' },
  '^[A-Za-z][A-Za-z0-9_.-]{0,63}$': { chars: 'a letter, then letters, digits, dot, dash and underscore', length: [1, 64] },
  '^[A-Za-z0-9_-]{16,128}$': { chars: 'letters, digits, dash and underscore', length: [16, 128] },
  '^[A-Za-z0-9_-]{43}$': { chars: 'letters, digits, dash and underscore (base64url of 32 bytes)', length: [43, 43] },
  '^[a-z0-9]{12,32}$': { chars: 'lower-case letters and digits', length: [12, 32] },
  '^[a-z0-9][a-z0-9-]{1,62}$': { chars: 'lower-case letters, digits and dashes, not beginning with a dash', length: [2, 63] },
  '^msg_[A-Za-z0-9_-]{1,36}$': { chars: '"msg_" then letters, digits, dash and underscore', length: [5, 40] },
  '^\\P{C}+$': { chars: 'printable characters (no control characters)' },
  '^[A-Za-z0-9_-]{1,128}$': { chars: 'letters, digits, dash and underscore', length: [1, 128] },
  '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{3})?Z$': { chars: 'an instant written YYYY-MM-DDTHH:MM:SS[.mmm]Z' },
};

/** Every format a route's schema uses, said in words (test/api/openapi.test.ts holds the list complete). */
export const FORMATS: Record<string, string> = {
  email: 'an email address',
  'date-time': 'a date and time such as 2026-11-22T07:00:00.000Z',
};

const PARAMETERS: Record<string, string> = { querystring: 'query parameter', params: 'path parameter' };

const number = (n: number) => n.toLocaleString('en-GB');

/** What a value is called in a message, from where it came (`dataVar`) and its path there. */
function named(dataVar: string, segments: string[]): string {
  if (segments.length === 0) return dataVar === 'body' ? 'the body' : words(dataVar);
  if (dataVar === 'headers') return `${segments.join('/').replace(/(^|-)[a-z]/g, (c) => c.toUpperCase())} header`;
  const parameter = PARAMETERS[dataVar];
  if (parameter) return `${parameter} "${segments.join('/')}"`;
  return dataVar === 'body' ? fieldName(apiPath(segments), fieldWords(segments)) : fieldWords(segments);
}

function oneOf(values: unknown[]): string {
  const shown = values.map(String);
  return shown.length === 1 ? `exactly ${shown[0]}` : `one of ${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}`;
}

function lengthWords(min: number, max: number | undefined): string {
  if (max === undefined) return min > 1 ? `at least ${number(min)} characters` : '';
  if (min === max) return `exactly ${number(min)} characters`;
  return min > 1 ? `${number(min)} to ${number(max)} characters` : `at most ${number(max)} characters`;
}

function textRule(schema: Schema): string {
  const pattern = schema.pattern === undefined ? undefined : PATTERNS[schema.pattern];
  const [patternMin, patternMax] = pattern?.length ?? [pattern ? 1 : 0, undefined];
  const min = Math.max(schema.minLength ?? 0, patternMin);
  const maxes = [schema.maxLength, patternMax].filter((n): n is number => n !== undefined);
  const length = lengthWords(min, maxes.length ? Math.min(...maxes) : undefined);
  // A format is a shape (an email address, a time); its length cap is a guard nobody meets.
  if (schema.format !== undefined && FORMATS[schema.format]) return FORMATS[schema.format]!;
  if (pattern) return length ? `${pattern.chars}, ${length}` : pattern.chars;
  return length ? `text of ${length}` : 'text';
}

function numberRule(schema: Schema, kind: string): string {
  const max = schema.maximum;
  if (schema.minimum !== undefined && max !== undefined) return `${kind} from ${number(schema.minimum)} to ${number(max)}`;
  if (schema.minimum !== undefined) return `${kind} of at least ${number(schema.minimum)}`;
  return max === undefined ? kind : `${kind} of at most ${number(max)}`;
}

function listRule(schema: Schema): string {
  const { minItems: min = 0, maxItems: max } = schema;
  const count =
    max === undefined
      ? min > 0
        ? `at least ${number(min)} ${min === 1 ? 'entry' : 'entries'}`
        : ''
      : min > 0
        ? `${number(min)} to ${number(max)} entries`
        : `at most ${number(max)} entries`;
  return ['a list', count && `of ${count}`, schema.uniqueItems ? 'without repeats' : ''].filter(Boolean).join(' ');
}

/** What a schema allows, in words: "a whole number from 0 to 168", "one of VIEWER, ISSUER or ORG_ADMIN". */
function allowed(schema: Schema): string {
  if (schema.anyOf) return schema.anyOf.map(allowed).join(', or ');
  if (schema.enum) return oneOf(schema.enum);
  if ('const' in schema) return oneOf([schema.const]);
  switch ([schema.type].flat()[0]) {
    case 'string':
      return textRule(schema);
    case 'integer':
      return numberRule(schema, 'a whole number');
    case 'number':
      return numberRule(schema, 'a number');
    case 'boolean':
      return 'true or false';
    case 'array':
      return listRule(schema);
    case 'null':
      return 'null';
    default:
      return 'an object';
  }
}

/**
 * The one place a schema's refusal becomes words (issue 45): the field in plain words and what
 * it allows, e.g. "Product key: letters, digits, dot, dash and underscore, at most 64
 * characters", "Name is required", `Unknown field "colour"`. `dataVar` is where the value came
 * from: `body`, `querystring`, `params` or `headers` (Fastify's names), or what the CLI checks.
 * A body's fields are what forms show, so they are named in words; query and path parameters
 * and headers are what a developer types into a URL or a request, so they keep their spelling.
 */
export function schemaErrorMessage(errors: ReadonlyArray<SchemaError>, dataVar: string): Error {
  const first = errors[0]!;
  // A value of a type no branch of a union takes (a value or null) is told the whole union; one
  // of the right type is told what its own branch refused.
  const error = (first.keyword === 'type' && errors.find((e) => e.keyword === 'anyOf' && e.instancePath === first.instancePath)) || first;
  const segments = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
  const atRoot = segments.length === 0;
  const field = capitalised(named(dataVar, segments));
  switch (error.keyword) {
    case 'required':
      return new Error(`${capitalised(named(dataVar, [...segments, String(error.params.missingProperty)]))} is required`);
    case 'additionalProperties': {
      const unknown = `"${String(error.params.additionalProperty)}"`;
      if (dataVar === 'querystring') return new Error(`Unknown query parameter ${unknown}`);
      return new Error(atRoot ? `Unknown field ${unknown}` : `Unknown field ${unknown} in ${named(dataVar, segments)}`);
    }
    case 'minProperties':
      return new Error(`${field} must carry at least one field to change`);
    case WELL_FORMED:
      return new Error(`${field} ${error.message}`);
  }
  if (atRoot && dataVar === 'body') return new Error('The body must be a JSON object');
  const rule = allowed(error.parentSchema ?? {});
  if (error.keyword === 'minLength' && error.params.limit === 1) return new Error(`${field} must not be empty (${rule})`);
  return new Error(`${field}: ${rule}`);
}
