import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
let doc: any;
beforeAll(async () => {
  h = await startHarness();
  doc = (await h.anonymous('GET', '//openapi.json')).data;
});
afterAll(() => h?.close());

const toOpenApiPath = (url: string) => url.replace('/o/:slug/api', '').replace(/:([A-Za-z]+)/g, '{$1}');

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1 with the organisation as a server variable', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0].url).toBe(`${h.config.publicUrl}/o/{slug}/api`);
    expect(doc.servers[0].variables.slug.default).toBe('default');
    expect(Object.keys(doc.paths).every((p) => !p.includes('{slug}'))).toBe(true);
  });

  it('describes every registered route, with a success response schema and its required access', () => {
    expect(h.app.apiRoutes.length).toBeGreaterThan(10);
    for (const route of h.app.apiRoutes) {
      const operation = doc.paths[toOpenApiPath(route.url)]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url} is missing from the document`).toBeDefined();
      const success = Object.keys(operation.responses).filter((code) => code.startsWith('2'));
      expect(success, `${route.method} ${route.url} has no success response`).not.toEqual([]);
      expect(operation.responses['401'] ?? operation.responses['404']).toBeDefined();
      const access = route.access.includes(':') ? `\`${route.access}\`` : '';
      expect(operation.description).toContain(access);
    }
  });

  it('documents no path that is not a route', () => {
    const registered = new Set(h.app.apiRoutes.map((r) => `${r.method} ${toOpenApiPath(r.url)}`));
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(item)) expect(registered.has(`${method.toUpperCase()} ${path}`)).toBe(true);
    }
  });

  it('shares one Error schema', () => {
    expect(doc.components.schemas.Error).toMatchObject({ type: 'object', required: ['error'] });
  });
});
