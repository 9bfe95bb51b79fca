import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';
import { FORMATS, PATTERNS } from '../../src/http/validation.js';

let h: Harness;
let doc: any;
beforeAll(async () => {
  h = await startHarness();
  doc = (await h.anonymous('GET', '//openapi.json')).data;
});
afterAll(() => h?.close());

const toOpenApiPath = (url: string) => url.replace('/o/:slug/api', '').replace(/:([A-Za-z]+)/g, '{$1}');
/** A path item's operations (it may also carry `servers`). */
const operations = (item: Record<string, any>) => Object.entries(item).filter(([key]) => key !== 'servers');

/** Paths a browser navigates to, answered with a redirect rather than a 2xx. */
const NAVIGATIONS = ['/sso/start', '/sso/callback'];

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1 with the organisation as a server variable', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0].url).toBe(`${h.config.publicUrl}/o/{slug}/api`);
    expect(doc.servers[0].variables.slug.default).toBe('default');
    expect(Object.keys(doc.paths).every((p) => p.startsWith('/platform/api/') || !p.includes('{slug}'))).toBe(true);
  });

  it('gives the control plane its own server, the deployment itself, outside every organisation', () => {
    const platformPaths = Object.keys(doc.paths).filter((p) => p.startsWith('/platform/api/'));
    expect(platformPaths).toContain('/platform/api/organisations/{slug}');
    for (const path of platformPaths) expect(doc.paths[path].servers, path).toEqual([expect.objectContaining({ url: h.config.publicUrl })]);
    for (const route of h.app.platformApiRoutes) {
      const operation = doc.paths[toOpenApiPath(route.url)]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url} is missing from the document`).toBeDefined();
      expect(operation.security).toEqual(route.access === 'public' ? [] : [{ platformSession: [] }]);
    }
  });

  it('describes every registered route, with a success response schema and its required access', () => {
    expect(h.app.apiRoutes.length).toBeGreaterThan(10);
    for (const route of h.app.apiRoutes) {
      const operation = doc.paths[toOpenApiPath(route.url)]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url} is missing from the document`).toBeDefined();
      // A browser navigation (single sign-on's start and callback, DESIGN.md 21) succeeds with a redirect.
      const success = Object.keys(operation.responses).filter(
        (code) => code.startsWith('2') || (NAVIGATIONS.includes(toOpenApiPath(route.url)) && code === '302'),
      );
      expect(success, `${route.method} ${route.url} has no success response`).not.toEqual([]);
      expect(operation.responses['401'] ?? operation.responses['404']).toBeDefined();
      const access = route.access.includes(':') ? `\`${route.access}\`` : '';
      expect(operation.description).toContain(access);
    }
  });

  it('documents no path that is not a route', () => {
    const registered = new Set([...h.app.apiRoutes, ...h.app.platformApiRoutes].map((r) => `${r.method} ${toOpenApiPath(r.url)}`));
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const [method] of operations(item)) expect(registered.has(`${method.toUpperCase()} ${path}`)).toBe(true);
    }
  });

  it('bounds every string and integer a client may send', () => {
    const unbounded: string[] = [];
    const walk = (schema: any, where: string) => {
      if (schema === null || typeof schema !== 'object') return;
      if (Array.isArray(schema)) {
        for (const [i, s] of schema.entries()) walk(s, `${where}[${i}]`);
        return;
      }
      const types = [schema.type].flat();
      // An enum or const bounds a value by listing it; a format like uuid or date-time by its shape.
      const listed = schema.enum !== undefined || schema.const !== undefined;
      if (types.includes('string') && schema.maxLength === undefined && !listed) unbounded.push(`${where}: string without maxLength`);
      if (types.includes('integer') && schema.maximum === undefined && !listed) unbounded.push(`${where}: integer without maximum`);
      for (const [key, value] of Object.entries(schema)) walk(value, `${where}.${key}`);
    };
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of operations(item)) {
        for (const parameter of operation.parameters ?? []) walk(parameter.schema, `${method} ${path} ${parameter.in}.${parameter.name}`);
        for (const [type, content] of Object.entries<any>(operation.requestBody?.content ?? {})) walk(content.schema, `${method} ${path} body(${type})`);
      }
    }
    expect(unbounded).toEqual([]);
  });

  it('has words for every pattern and format a client may send, so no refusal quotes a schema', () => {
    const unsaid: string[] = [];
    const walk = (schema: any, where: string) => {
      if (schema === null || typeof schema !== 'object') return;
      if (Array.isArray(schema)) {
        for (const [i, s] of schema.entries()) walk(s, `${where}[${i}]`);
        return;
      }
      if (typeof schema.pattern === 'string' && !PATTERNS[schema.pattern]) unsaid.push(`${where}: pattern ${schema.pattern}`);
      if (typeof schema.format === 'string' && !FORMATS[schema.format]) unsaid.push(`${where}: format ${schema.format}`);
      for (const [key, value] of Object.entries(schema)) walk(value, `${where}.${key}`);
    };
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of operations(item)) {
        for (const parameter of operation.parameters ?? []) walk(parameter.schema, `${method} ${path} ${parameter.in}.${parameter.name}`);
        for (const content of Object.values<any>(operation.requestBody?.content ?? {})) walk(content.schema, `${method} ${path} body`);
      }
    }
    expect(unsaid).toEqual([]);
  });

  it('passes a maintained linter with its recommended rules, errors and warnings alike', async () => {
    const { createConfig, lintFromString, stringifyYaml } = await import('@redocly/openapi-core');
    const problems = await lintFromString({
      source: stringifyYaml(doc),
      config: await createConfig({ extends: ['recommended'] }),
    });
    const navigation = (pointer: string | undefined) => NAVIGATIONS.some((path) => pointer === `#/paths/${path.replaceAll('/', '~1')}/get/responses`);
    const found = problems.filter((p) => !(p.ruleId === 'operation-2xx-response' && navigation(p.location[0]?.pointer)));
    expect(found.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it('names every operation with a unique, readable operationId', () => {
    const ids = Object.values<any>(doc.paths).flatMap((item) => operations(item).map(([, operation]) => operation.operationId));
    expect(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/licenses'].post.operationId).toBe('issueLicence');
    expect(doc.paths['/licenses/page'].get.operationId).toBe('listLicencePage');
  });

  it('shares one Error schema', () => {
    expect(doc.components.schemas.Error).toMatchObject({ type: 'object', required: ['error'] });
  });
});
