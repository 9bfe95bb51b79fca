import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { ErrorBody } from './schemas.js';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, removeAdditional: false, useDefaults: true, strict: false, ...options });
  addFormats(ajv);
  return ajv;
}

/*
 * Bodies are JSON and must already carry the declared types (a "12" is not an integer);
 * query strings and path parameters are text by nature, so they are coerced.
 */
const bodies = makeAjv({ coerceTypes: false });
const urls = makeAjv({ coerceTypes: 'array' });
for (const ajv of [bodies, urls]) ajv.addSchema(ErrorBody);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodies : urls).compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;

/** Validates a value against a body schema outside HTTP (the CLI): the first problem, or null. */
export function firstProblem(schema: object, value: unknown, what: string): string | null {
  const check = bodies.compile(schema);
  if (check(value)) return null;
  const error = check.errors?.[0];
  return error ? `${what}${error.instancePath.replace(/^\//, ' ').replace(/\//g, '.')} ${error.message}` : `${what} is invalid`;
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
    default:
      return new Error(`${path} ${error.message ?? 'is invalid'}`);
  }
}
