import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The server's layers, lowest first: the one place the order is written (README's code map
 * shows it). A folder of `src/` (or a file at its top) imports only from layers below its own,
 * never from its own layer or one above, so no two folders can reach each other. A new feature
 * folder goes on the lowest layer above everything it calls, or a new layer there.
 */
const LAYERS: readonly (readonly string[])[] = [
  // The ground floor: the database, then what every feature stands on (errors, the request
  // context, transactions, roles, secrets and passwords, time, the API's schema vocabulary).
  ['db'],
  ['core'],
  // The environment's configuration, validated once; the release version.
  ['config.ts', 'version.ts'],
  // Fastify's plugins (tenancy and authorisation, OpenAPI, validation, failures, rate limits,
  // metrics, the console), the keys that sign, and the processes' log lines.
  ['http', 'keys', 'log.ts'],
  // The audit writer and, beside it, the webhook outbox writer every feature hands its event's data.
  ['audit'],
  // Machine seats: bindings, releases, leases, air-gapped activations' seats.
  ['seats'],
  // Licences as they are read and counted: views, listings, search, windows, export, tallies.
  ['listings'],
  ['users', 'tokens', 'passkeys'],
  ['orgs'],
  ['auth'],
  ['platform'],
  ['products', 'customers'],
  // Releases and their artifacts in the store (DESIGN.md 20); licensed downloads and feeds over them.
  ['releases'],
  ['downloads'],
  // The licence lifecycle: issue, renew, revoke, reinstate, archive, restore, verify.
  ['licences'],
  ['air-gap', 'dashboard', 'webhooks', 'backup', 'trials', 'usage'],
  ['portal', 'check'],
  // Licence emails and their outbox, erasure of personal data (DESIGN.md 22).
  ['mail'],
  // Payment providers' connections and events, which issue and renew licences and queue their emails (DESIGN.md 22).
  ['integrations'],
  // The organisation's settings: its timezone and its email template.
  ['settings'],
  // Single sign-on for operators (DESIGN.md 21): configuration, the OIDC flow, members linked and provisioned.
  ['sso'],
  // The processes: the app's wiring of every feature, the primary process, and the CLI over both.
  ['app.ts', 'workers.ts'],
  ['cli.ts'],
];

/** unit → units it imports → the imports that make each edge (`file -> file`). */
type Graph = Map<string, Map<string, string[]>>;

const SRC = path.resolve(import.meta.dirname, '../../src');

/** Every source file of src/, by its path there, with its text. */
const sources = new Map(
  readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => [f, readFileSync(path.join(SRC, f), 'utf8')]),
);

/** A file's unit: its folder under src/, or the file itself at the top. */
const unitOf = (file: string) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : file);

/** Every relative import (static, dynamic, type-only and re-export) between units of src/. */
function importGraph(files: Map<string, string>): Graph {
  const graph: Graph = new Map();
  for (const [file, text] of files) {
    const from = unitOf(file);
    const edges = graph.get(from) ?? new Map<string, string[]>();
    graph.set(from, edges);
    for (const { fileName } of importsOf(text)) {
      if (!fileName.startsWith('.')) continue;
      const target = path.relative(SRC, path.resolve(SRC, path.dirname(file), fileName)).replace(/\.js$/, '.ts');
      const to = unitOf(target);
      if (to !== from) edges.set(to, [...(edges.get(to) ?? []), `${file} -> ${target}`]);
    }
  }
  return graph;
}

const importsOf = (text: string) => ts.preProcessFile(text, true, true).importedFiles;

/** Where SQL may be written: a feature's repo.ts or its repos/ folder, and db/ (the schema, dialects, migrations). */
const holdsSql = (file: string) => path.basename(file) === 'repo.ts' || file.split('/').includes('repos') || unitOf(file) === 'db';
const SQL = /\.(selectFrom|insertInto|updateTable|deleteFrom)\(/;

/** Files that build a query (Kysely's four entry points) outside the places SQL lives. */
const sqlOutsideRepos = (files: Map<string, string>) =>
  [...files]
    .filter(([file, text]) => !holdsSql(file) && SQL.test(text))
    .map(([file]) => file)
    .sort();

const isRoutes = (file: string) => /(^|[/-])routes\.ts$/.test(file);
/** What a route file may not reach for: a repo, the audit writer, or a transaction (a service owns each). */
const SERVICES_OWN = /(\/repo|\/repos\/[a-z-]+|audit\/audit|core\/transaction)\.js$/;

/** Route files' imports of a repo, the audit writer or transactions, and their transactions. */
const thickRoutes = (files: Map<string, string>) =>
  [...files]
    .filter(([file]) => isRoutes(file))
    .flatMap(([file, text]) => [
      ...importsOf(text)
        .filter(({ fileName }) => SERVICES_OWN.test(fileName))
        .map(({ fileName }) => `${file} -> ${fileName}`),
      ...(/\btransaction\(/.test(text) ? [`${file}: transaction(`] : []),
    ])
    .sort();

/** Units of the graph that the layers do not place. */
const unplaced = (graph: Graph, layers: readonly (readonly string[])[]) =>
  [...graph.keys()].filter((unit) => !layers.some((layer) => layer.includes(unit))).sort();

/** Imports from a unit to one on its own layer or a higher one. */
function backEdges(graph: Graph, layers: readonly (readonly string[])[]): string[] {
  const level = (unit: string) => layers.findIndex((layer) => layer.includes(unit));
  const found: string[] = [];
  for (const [from, edges] of graph) {
    for (const [to, imports] of edges) {
      if (level(from) !== -1 && level(to) !== -1 && level(to) >= level(from)) found.push(...imports);
    }
  }
  return found.sort();
}

/** Pairs of units that import each other. */
function mutualImports(graph: Graph): string[] {
  const pairs: string[] = [];
  for (const [from, edges] of graph) for (const to of edges.keys()) if (from < to && graph.get(to)?.has(from)) pairs.push(`${from} <-> ${to}`);
  return pairs.sort();
}

/** The groups of two or more units that reach each other (Tarjan's strongly connected components). */
function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (unit: string) => {
    index.set(unit, index.size);
    low.set(unit, index.get(unit)!);
    stack.push(unit);
    for (const next of graph.get(unit)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(unit, Math.min(low.get(unit)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(unit, Math.min(low.get(unit)!, index.get(next)!));
      }
    }
    if (low.get(unit) !== index.get(unit)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      group.push(member);
    } while (member !== unit);
    if (group.length > 1) found.push(group.sort());
  };
  for (const unit of graph.keys()) if (!index.has(unit)) visit(unit);
  return found;
}

/** A graph written as `from -> to` lines, for the checker's own test. */
function graphOf(lines: string[]): Graph {
  const graph: Graph = new Map();
  for (const line of lines) {
    const [from, to] = line.split(' -> ') as [string, string];
    if (!graph.has(to)) graph.set(to, new Map());
    graph.set(from, (graph.get(from) ?? new Map()).set(to, [`${from}/x.ts -> ${to}/y.ts`]));
  }
  return graph;
}

describe('layers', () => {
  const graph = importGraph(sources);

  it('places every folder and top-level file of src/ on a layer, once', () => {
    expect(unplaced(graph, LAYERS)).toEqual([]);
    const placed = LAYERS.flat();
    expect(placed.filter((unit, i) => placed.indexOf(unit) !== i || !graph.has(unit))).toEqual([]);
  });

  it('has no import from a layer to its own or a higher one', () => {
    expect(backEdges(graph, LAYERS)).toEqual([]);
  });

  it('has no two folders that reach each other', () => {
    expect({ mutual: mutualImports(graph), cycles: cycles(graph) }).toEqual({ mutual: [], cycles: [] });
  });

  it('keeps SQL in repos, and routes to their schemas and one service call', () => {
    expect(sqlOutsideRepos(sources)).toEqual([]);
    expect(thickRoutes(sources)).toEqual([]);
  });

  it('finds SQL outside a repo and a route that reaches past its service', () => {
    const files = new Map([
      ['shop/repo.ts', "t.selectFrom('carts')"],
      ['shop/repos/orders.ts', "t.insertInto('orders', row)"],
      ['shop/service.ts', "await t.updateTable('carts').set(x)"],
      ['shop/routes.ts', "import { listCarts } from './repo.js';\nimport { recordAudit } from '../audit/audit.js';\nimport { Id } from '../core/schemas.js';"],
      ['shop/admin-routes.ts', "import { inTransaction } from '../core/transaction.js';\nawait transaction(database, work);"],
    ]);
    expect(sqlOutsideRepos(files)).toEqual(['shop/service.ts']);
    expect(thickRoutes(files)).toEqual([
      'shop/admin-routes.ts -> ../core/transaction.js',
      'shop/admin-routes.ts: transaction(',
      'shop/routes.ts -> ../audit/audit.js',
      'shop/routes.ts -> ./repo.js',
    ]);
  });

  it('finds the back-edge, the mutual import and the cycle a graph has', () => {
    const layers = [['ground'], ['records'], ['feature', 'other'], ['top']];
    const clean = ['top -> feature', 'top -> other', 'feature -> records', 'other -> ground', 'records -> ground'];
    expect([backEdges(graphOf(clean), layers), mutualImports(graphOf(clean)), cycles(graphOf(clean))]).toEqual([[], [], []]);
    // One import back up from the records to a feature: a back-edge, and with feature -> records a cycle.
    const tangled = graphOf([...clean, 'records -> feature']);
    expect(backEdges(tangled, layers)).toEqual(['records/x.ts -> feature/y.ts']);
    expect(mutualImports(tangled)).toEqual(['feature <-> records']);
    expect(cycles(tangled)).toEqual([['feature', 'records']]);
    // A sideways import on one layer, and a longer cycle through it, are refused too.
    const sideways = graphOf([...clean, 'feature -> other', 'other -> top']);
    expect(backEdges(sideways, layers)).toEqual(['feature/x.ts -> other/y.ts', 'other/x.ts -> top/y.ts']);
    expect(cycles(sideways)).toEqual([['feature', 'other', 'top']]);
    expect(unplaced(graphOf([...clean, 'top -> newcomer']), layers)).toEqual(['newcomer']);
  });
});
