import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FAVICON_ICO } from './icon.js';

/** Where `npm install` (the console's `vite build`) leaves the console. */
const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../console/dist');

/** DESIGN.md 7: no inline or evaluated script; styles inline only because the component library sets them. */
const CONSOLE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'self'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

const MISSING = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Licensor</title></head>
<body><h1>Licensor</h1><p>The console has not been built: run <code>npm run build</code>. The API reference is at
<a href="/docs">/docs</a>.</p></body></html>`;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

/** The precompressed copy the build wrote (vite.config.ts) that the client accepts, Brotli first. */
function encodingFor(acceptEncoding: string | undefined, file: string): { encoding: 'br' | 'gzip'; file: string } | null {
  const accepted = new Set(
    (acceptEncoding ?? '')
      .split(',')
      .map((part) => part.trim().split(';'))
      .filter(([, q]) => q === undefined || !/^\s*q=0(\.0*)?\s*$/.test(q))
      .map(([name]) => name!.toLowerCase()),
  );
  for (const [encoding, suffix] of [
    ['br', '.br'],
    ['gzip', '.gz'],
  ] as const) {
    if (accepted.has(encoding) && fs.existsSync(file + suffix)) return { encoding, file: file + suffix };
  }
  return null;
}

/**
 * Serves the single-page console from its build output (DESIGN.md 7): `index.html` (no-cache)
 * for `/`, every page under `/o/{slug}/` and under `/platform/`, hashed assets under `/assets/` with a long cache,
 * Brotli- or gzip-encoded when the client accepts it.
 * Paths under `/o/{slug}/api/` never reach here: the API's routes and its 404 answer them.
 */
export function installConsole(app: FastifyInstance): void {
  const indexFile = path.join(CONSOLE_DIST, 'index.html');
  const index = fs.existsSync(indexFile) ? fs.readFileSync(indexFile, 'utf8') : MISSING;
  const hidden = { schema: { hide: true } };
  const sendIndex = (reply: FastifyReply) => reply.headers(CONSOLE_HEADERS).header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(index);

  app.get('/', hidden, async (_request, reply) => sendIndex(reply));
  // Every page's browser asks for it: without it, each logs a 404 in its console.
  app.get('/favicon.ico', hidden, async (_request, reply) =>
    reply.headers({ 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=86400' }).type('image/x-icon').send(FAVICON_ICO),
  );
  app.get('/o/:slug', hidden, async (request, reply) => reply.redirect(`/o/${encodeURIComponent((request.params as { slug: string }).slug)}/`));
  // Pages of the app, except the API beside them, whose unknown paths stay JSON 404s.
  const pageOrApi404 = async (request: FastifyRequest, reply: FastifyReply) => {
    const rest = (request.params as { '*': string })['*'];
    if (rest === 'api' || rest.startsWith('api/')) {
      return reply.code(404).send({ error: `no such endpoint: ${request.method} ${request.url.split('?')[0]}` });
    }
    return sendIndex(reply);
  };
  app.get('/o/:slug/*', hidden, pageOrApi404);
  // The control plane's console (DESIGN.md 8).
  app.get('/platform', hidden, async (_request, reply) => reply.redirect('/platform/'));
  app.get('/platform/*', hidden, pageOrApi404);
  app.get('/assets/*', hidden, async (request, reply) => {
    const name = (request.params as { '*': string })['*'];
    const file = path.join(CONSOLE_DIST, 'assets', name);
    // Hashed names only, never a way out of the assets folder.
    if (!/^[A-Za-z0-9._-]+$/.test(name) || !fs.existsSync(file)) return reply.code(404).send({ error: 'no such asset' });
    const compressed = encodingFor(request.headers['accept-encoding'], file);
    return reply
      .headers({ 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=31536000, immutable', vary: 'accept-encoding' })
      .headers(compressed ? { 'content-encoding': compressed.encoding } : {})
      .type(TYPES[path.extname(name)] ?? 'application/octet-stream')
      .send(fs.createReadStream(compressed?.file ?? file));
  });
}
