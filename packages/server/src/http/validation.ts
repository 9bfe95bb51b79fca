import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
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
 * query strings and path parameters are text by nature, so they are coerced.
 */
const bodies = makeAjv({ coerceTypes: false });
const urls = makeAjv({ coerceTypes: 'array' });
for (const ajv of [bodies, urls]) ajv.addSchema(ErrorBody);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodies : urls).compile(withTextRule(schema) as object) as ReturnType<FastifySchemaCompiler<unknown>>;

/** Validates a value against a body schema outside HTTP (the CLI): the first problem, or null. */
export function firstProblem(schema: object, value: unknown, what: string): string | null {
  const check = bodies.compile(withTextRule(schema) as object);
  if (check(value)) return null;
  return check.errors?.length ? schemaErrorMessage(check.errors as never, what).message : `${what} is invalid`;
}

/**
 * Validation messages that name the field: `body.customer.email must match format "email"`,
 * `body.extra: unknown field`, `querystring.limit must be <= 500`.
 */
export function schemaErrorMessage(errors: ReadonlyArray<{ keyword: string; instancePath: string; params: Record<string, unknown>; message?: string }>, dataVar: string): Error {
  const error = errors[0]!;
  const path = `${dataVar}${error.instancePath.replace(/\//g, '.')}`;
  switch (error.keyword) {
    case 'additionalProperties':
      return new Error(`${path}.${String(error.params.additionalProperty)}: unknown field`);
    case 'required':
      return new Error(`${path}.${String(error.params.missingProperty)} is required`);
    case 'enum':
      return new Error(`${path} must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`);
    case 'const':
      return new Error(`${path} must be ${String(error.params.allowedValue)}`);
    default:
      return new Error(`${path} ${error.message ?? 'is invalid'}`);
  }
}
