import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startHarness, type Harness } from '../harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe('error shape', () => {
  it('answers an unknown route with 404 {error}', async () => {
    for (const path of ['//nowhere', '/nowhere']) {
      const response = await h.admin('GET', path);
      expect(response.statusCode).toBe(404);
      expect(Object.keys(response.data)).toEqual(['error']);
    }
  });

  it('answers an unknown organisation with 404 before judging the credential', async () => {
    const response = await h.as({}, 'no-such-org')('GET', '/users');
    expect(response.statusCode).toBe(404);
    expect(response.data.error).toMatch(/no-such-org/);
  });

  it('answers malformed JSON with 400, non-JSON with 415, an oversized body with 413', async () => {
    const malformed = await h.admin('POST', '/users', '{"username": ', { 'content-type': 'application/json' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.data).toEqual({ error: 'malformed JSON body' });
    const text = await h.admin('POST', '/users', 'username=x', { 'content-type': 'text/plain' });
    expect(text.statusCode).toBe(415);
    expect(text.data.error).toMatch(/application\/json/);
    const form = await h.admin('POST', '/users', 'username=x', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.statusCode).toBe(415);
    const huge = await h.admin('POST', '/users', JSON.stringify({ username: 'x'.repeat(2 * 1024 * 1024), role: 'VIEWER' }));
    expect(huge.statusCode).toBe(413);
    expect(huge.data).toEqual({ error: 'request body is too large' });
  });

  it('treats an empty body with a JSON content type as no body', async () => {
    const session = h.as({ cookie: await h.signIn('admin', ADMIN_PASSWORD) });
    const response = await session('POST', '/auth/logout', '', { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(204);
  });

  it('names the field of a schema violation, and a wrong JSON type is not coerced', async () => {
    const response = await h.admin('POST', '/users', { username: 'typed', role: 'VIEWER', active: 'yes' });
    expect(response.statusCode).toBe(400);
    expect(response.data.error).toMatch(/active/);
  });

  it('answers an unexpected fault with 500, a request id and no internals', async () => {
    const h2 = await startHarness();
    await h2.database.close();
    const response = await h2.admin('GET', '/users');
    expect(response.statusCode).toBe(500);
    expect(response.data).toEqual({ error: expect.stringMatching(/^internal error \(request .+\)$/) });
    await h2.app.close();
  });
});

describe('probes', () => {
  it('serves /healthz, /readyz and Prometheus /metrics with per-route figures', async () => {
    expect((await h.anonymous('GET', '//healthz')).data).toEqual({ status: 'ok' });
    expect((await h.anonymous('GET', '//readyz')).data).toEqual({ status: 'ready' });
    await h.admin('GET', '/users');
    const metrics = await h.anonymous('GET', '//metrics');
    expect(metrics.headers['content-type']).toMatch(/text\/plain/);
    expect(metrics.body).toContain('http_requests_total{method="GET",route="/o/:slug/api/users",status_code="200"}');
    expect(metrics.body).toContain('http_request_duration_seconds_bucket');
  });

  it('serves a console page at / and the rendered reference at /docs', async () => {
    expect((await h.anonymous('GET', '//')).headers['content-type']).toMatch(/text\/html/);
    const docs = await h.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.body).toMatch(/swagger/i);
    // The reference's own files come through @fastify/static.
    const style = await h.app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' });
    expect([style.statusCode, style.headers['content-type']]).toEqual([200, expect.stringMatching(/^text\/css/)]);
    expect(style.body.length).toBeGreaterThan(1000);
  });
});
