// The deployment recipes (issue 46, docs/operations.md). No container daemon or registry is
// reachable here, so no image is built: each recipe is parsed and checked for what the service
// needs, with the ecosystem's own checker where this machine has it (Debian's docker-compose
// `config`, `kubectl kustomize` with the kubernetes-models schemas, `systemd-analyze verify`);
// without one, that check skips and says why. LICENSOR_REQUIRE_DEPLOY_TOOLS=1 (CI, which installs
// Debian's docker-compose and systemd) fails instead, except for kubectl, which no Debian 12
// package provides.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { load, loadAll, YAML11_SCHEMA } from 'js-yaml';
import { ConfigMap, PersistentVolumeClaim, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { startHarness } from '../packages/server/test/harness.js';
import { run, tempFolder } from '../sdks/quick-start.js';

const here = import.meta.dirname;
const root = path.resolve(here, '..');
const read = (file: string) => readFileSync(path.join(here, file), 'utf8');
const required = process.env.LICENSOR_REQUIRE_DEPLOY_TOOLS === '1';
const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** Why a tool is missing, or null. */
function missing(command: string, args: string[]): string | null {
  const probe = spawnSync(command, args, { encoding: 'utf8' });
  return probe.error || probe.status !== 0 ? `${command} is not installed` : null;
}

/** Runs a check that needs a tool: skipped with the reason when it is missing, unless required. */
function withTool(reason: string | null, name: string, test: () => void | Promise<void>, installable = true) {
  if (reason !== null && !(required && installable)) {
    console.warn(`deploy.test.ts: ${name} skipped: ${reason}`);
    it.skip(`${name} (${reason})`, () => {});
  } else {
    it(name, async () => {
      expect(reason, 'LICENSOR_REQUIRE_DEPLOY_TOOLS=1 and the tool is missing').toBeNull();
      await test();
    }, 60_000);
  }
}

/** Dockerfile instructions, continuation lines joined, comments dropped, per stage. */
function dockerfileStages(text: string) {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'));
  const stages: Array<Array<{ op: string; args: string }>> = [];
  for (const line of lines) {
    const [, op = '', args = ''] = /^\s*(\S+)\s+(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === 'FROM') stages.push([]);
    stages.at(-1)?.push({ op: op.toUpperCase(), args: args.replace(/\s+/g, ' ').trim() });
  }
  return stages;
}

describe('Dockerfile', () => {
  const [build, runtime] = dockerfileStages(read('Dockerfile'));
  const args = (stage: typeof build, op: string) => stage!.filter((i) => i.op === op).map((i) => i.args);

  it('builds on node:20-bookworm-slim in two stages, compiling the native modules in the first', () => {
    expect(args(build, 'FROM')).toEqual(['node:20-bookworm-slim AS build']);
    expect(args(runtime, 'FROM')).toEqual(['node:20-bookworm-slim']);
    expect(args(build, 'RUN').join(' ')).toMatch(/apt-get install .*python3 make g\+\+/);
    expect(args(build, 'RUN').join(' ')).toMatch(/npm ci .*&& npm prune --omit=dev/);
    expect(args(runtime, 'RUN').join(' '), 'nothing is compiled in the runtime stage').not.toMatch(/npm|apt-get/);
  });

  it('copies into the build only what exists here, and the runtime only what the build makes', () => {
    for (const copy of args(build, 'COPY')) {
      for (const source of copy.split(' ').slice(0, -1)) expect(existsSync(path.join(root, source)), source).toBe(true);
    }
    const fromBuild = args(runtime, 'COPY').map((copy) => /^--from=build \/app\/(\S+) /.exec(copy)?.[1]);
    expect(fromBuild).not.toContain(undefined);
    // `npm run build` (run before the tests) leaves exactly what the build stage's npm ci makes.
    for (const source of fromBuild) expect(existsSync(path.join(root, source!)), source).toBe(true);
    for (const needed of ['node_modules', 'bin', 'packages/server/dist', 'packages/protocol/dist', 'packages/console/dist'])
      expect(fromBuild).toContain(needed);
    const ignored = read('Dockerfile.dockerignore').split('\n');
    for (const pattern of ['**/node_modules', '**/dist', 'data']) expect(ignored).toContain(pattern);
  });

  it('runs as the unprivileged node user, the data directory (backups in it) a volume, serve as the command', () => {
    expect(args(runtime, 'USER')).toEqual(['node']);
    expect(args(runtime, 'VOLUME')).toEqual(['/var/lib/licensor']);
    const env = args(runtime, 'ENV').join(' ');
    expect(env).toContain('LICENSOR_DATA_DIR=/var/lib/licensor');
    // DESIGN 17's default data/backups/ is relative to the working directory: inside the volume instead.
    expect(env).toContain('LICENSOR_BACKUP_DIR=/var/lib/licensor/backups');
    expect(env).toContain('HOST=0.0.0.0');
    expect(args(runtime, 'CMD')).toEqual(['["node", "bin/licensor.js", "serve"]']);
  });

  it('has a HEALTHCHECK that asks /healthz and fails when nothing answers', async () => {
    const [healthcheck] = args(runtime, 'HEALTHCHECK');
    const command = JSON.parse(/CMD (\[.*\])$/.exec(healthcheck!)![1]!) as string[];
    expect(command[0]).toBe('node');
    expect(command.join(' ')).toContain('/healthz');
    const h = await startHarness();
    try {
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      const port = String((h.app.server.address() as AddressInfo).port);
      const folder = tempFolder('healthcheck');
      folders.push(folder);
      const probe = async () => (await run(process.execPath, command.slice(1), folder, { PORT: port }, 20_000)).code;
      expect(await probe()).toBe(0);
      await h.close();
      expect(await probe()).toBe(1);
    } finally {
      await h.close().catch(() => {});
    }
  });
});

describe('compose.yaml', () => {
  // Compose files are YAML 1.1: `<<: *licensor` merges the instances' shared settings.
  const compose = load(read('compose.yaml'), { schema: YAML11_SCHEMA }) as any;
  const instances = ['licensor-1', 'licensor-2'];

  it('publishes only the proxy, with PostgreSQL, Redis and two instances on the network behind it', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['licensor-1', 'licensor-2', 'postgres', 'proxy', 'redis']);
    const published = Object.entries(compose.services).filter(([, service]) => (service as { ports?: unknown }).ports);
    expect(published.map(([name]) => name)).toEqual(['proxy']);
  });

  it('gives both instances the same configuration: secrets from the env file, the proxy trusted, artifacts shared', () => {
    for (const name of instances) {
      const service = compose.services[name];
      expect(service.env_file).toBe('licensor.env');
      expect(service.environment).toMatchObject({
        LICENSOR_TRUST_PROXY: 'true',
        LICENSOR_ARTIFACT_DIR: '/var/lib/licensor/artifacts',
        REDIS_URL: 'redis://redis:6379',
      });
      expect(service.environment.DATABASE_URL).toMatch(/^postgres:\/\/licensor:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/licensor$/);
      expect(service.volumes).toContain('artifacts:/var/lib/licensor/artifacts');
      expect(service.read_only).toBe(true);
    }
    expect(compose.services['licensor-1'].volumes[0]).not.toBe(compose.services['licensor-2'].volumes[0]);
    const example = read('licensor.env.example');
    for (const variable of ['LICENSOR_MASTER_KEY=', 'LICENSOR_PUBLIC_URL=', 'LICENSOR_BOOTSTRAP_PASSWORD=']) expect(example).toContain(`\n${variable}`);
    expect(read('compose.yaml'), 'no secret in the compose file itself').not.toMatch(/LICENSOR_MASTER_KEY|BOOTSTRAP_PASSWORD/);
  });

  withTool(missing('docker-compose', ['version']), 'passes docker-compose config, with the env files filled in', () => {
    const folder = tempFolder('compose');
    folders.push(folder);
    mkdirSync(path.join(folder, 'deploy'));
    for (const file of ['compose.yaml', 'nginx.conf']) copyFileSync(path.join(here, file), path.join(folder, 'deploy', file));
    writeFileSync(path.join(folder, 'deploy/.env'), read('.env.example').replace('POSTGRES_PASSWORD=', 'POSTGRES_PASSWORD=pg-secret'));
    writeFileSync(
      path.join(folder, 'deploy/licensor.env'),
      read('licensor.env.example').replace('LICENSOR_MASTER_KEY=', `LICENSOR_MASTER_KEY=${Buffer.alloc(32, 7).toString('base64')}`),
    );
    const config = spawnSync('docker-compose', ['-f', 'deploy/compose.yaml', 'config'], { cwd: folder, encoding: 'utf8' });
    expect(config.status, config.stderr).toBe(0);
    const resolved = load(config.stdout) as any;
    for (const name of instances) {
      expect(resolved.services[name].environment).toMatchObject({
        DATABASE_URL: 'postgres://licensor:pg-secret@postgres:5432/licensor',
        LICENSOR_PUBLIC_URL: 'http://localhost:8080',
        LICENSOR_TRUST_PROXY: 'true',
      });
    }
    expect(resolved.services.proxy.ports).toEqual([expect.objectContaining({ published: 8080, target: 80 })]);
    // Without the password compose refuses to start, naming the file to set it in.
    rmSync(path.join(folder, 'deploy/.env'));
    const refused = spawnSync('docker-compose', ['-f', 'deploy/compose.yaml', 'config'], {
      cwd: folder,
      encoding: 'utf8',
      env: { ...process.env, POSTGRES_PASSWORD: '' },
    });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('set POSTGRES_PASSWORD in deploy/.env');
  });
});

describe('nginx.conf', () => {
  const conf = read('nginx.conf');

  it('balances over both instances and sets X-Forwarded-For to the client, never a value the client sent', () => {
    expect(conf).toMatch(/server licensor-1:8080 /);
    expect(conf).toMatch(/server licensor-2:8080 /);
    expect(conf).toContain('proxy_set_header X-Forwarded-For $remote_addr;');
    expect(conf).not.toContain('$proxy_add_x_forwarded_for');
    expect(conf).toMatch(/location = \/metrics \{\s*return 404;/);
  });

  it('logs download and feed tokens cut to their first 12 characters', () => {
    const [, pattern, replacement] = /^\s*"~(.+)" "(.+)";$/m.exec(conf)!;
    expect(conf).toMatch(/access_log \/dev\/stdout licensor;/);
    expect(conf).toMatch(/"uri":"\$logged_uri"/);
    const logged = (uri: string) => {
      const match = new RegExp(pattern!).exec(uri);
      return match ? replacement!.replace('$kept', match.groups!.kept!).replace('$rest', match.groups!.rest!) : uri;
    };
    const grant = `SVCG1.${'a'.repeat(40)}.${'b'.repeat(43)}`;
    expect(logged(`/o/acme/api/public/downloads/${grant}/app-1.2.0.dmg`)).toBe(`/o/acme/api/public/downloads/${grant.slice(0, 12)}…/app-1.2.0.dmg`);
    expect(logged(`/o/acme/api/public/feeds/${'f'.repeat(64)}/electron/latest.yml?x=1`)).toBe(
      `/o/acme/api/public/feeds/${'f'.repeat(12)}…/electron/latest.yml?x=1`,
    );
    expect(logged('/o/acme/api/licenses?q=x')).toBe('/o/acme/api/licenses?q=x');
  });
});

describe('Kubernetes base', () => {
  const kustomize = missing('kubectl', ['version', '--client']);

  withTool(
    kustomize,
    'renders with kubectl kustomize into objects that pass the Kubernetes schemas',
    () => {
      const rendered = spawnSync('kubectl', ['kustomize', path.join(here, 'kubernetes')], { encoding: 'utf8' });
      expect(rendered.status, rendered.stderr).toBe(0);
      const objects = loadAll(rendered.stdout) as any[];
      const models: Record<string, new (data: never) => { validate(): void }> = {
        'v1/ConfigMap': ConfigMap,
        'v1/Service': Service,
        'v1/PersistentVolumeClaim': PersistentVolumeClaim,
        'apps/v1/Deployment': Deployment,
        'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
      };
      const byKind = new Map<string, any>();
      for (const object of objects) {
        const Model = models[`${object.apiVersion}/${object.kind}`];
        expect(Model, `${object.apiVersion} ${object.kind}`).toBeDefined();
        expect(() => new Model!(object as never).validate(), `${object.kind} ${object.metadata.name}`).not.toThrow();
        byKind.set(object.kind, object);
      }
      expect([...byKind.keys()].sort()).toEqual(['ConfigMap', 'Deployment', 'PersistentVolumeClaim', 'PodDisruptionBudget', 'Service']);

      const deployment = byKind.get('Deployment');
      expect(deployment.spec.replicas).toBe(2);
      // DESIGN 17: every old instance stops before the first new one migrates.
      expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
      const pod = deployment.spec.template;
      const [container] = pod.spec.containers;
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      expect(container.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
      expect(container.envFrom).toEqual([{ configMapRef: { name: 'licensor' } }, { secretRef: { name: 'licensor' } }]);
      const config = byKind.get('ConfigMap').data;
      expect(config).toMatchObject({ LICENSOR_TRUST_PROXY: 'true', LICENSOR_ARTIFACT_DIR: '/var/lib/licensor/artifacts' });
      expect(Object.keys(config), 'secrets come from the Secret, never the ConfigMap').not.toContain('LICENSOR_MASTER_KEY');
      const artifacts = container.volumeMounts.find((mount: { mountPath: string }) => mount.mountPath === config.LICENSOR_ARTIFACT_DIR);
      const claim = pod.spec.volumes.find((volume: { name: string }) => volume.name === artifacts.name).persistentVolumeClaim.claimName;
      expect(byKind.get('PersistentVolumeClaim')).toMatchObject({ metadata: { name: claim }, spec: { accessModes: ['ReadWriteMany'] } });
      // The budget and the service select the pods the Deployment makes.
      for (const selector of [byKind.get('PodDisruptionBudget').spec.selector.matchLabels, byKind.get('Service').spec.selector]) {
        expect(pod.metadata.labels).toMatchObject(selector);
        expect(deployment.spec.selector.matchLabels).toEqual(selector);
      }
      expect(byKind.get('PodDisruptionBudget').spec.minAvailable).toBe(1);
    },
    false,
  );
});

describe('systemd unit', () => {
  const unit = read('systemd/licensor.service');

  it('serves from /opt/licensor as an unprivileged user, configured by an env file, restarted when it exits', () => {
    for (const line of [
      'User=licensor',
      'EnvironmentFile=/etc/licensor/licensor.env',
      'ExecStart=/usr/bin/node bin/licensor.js serve',
      'Restart=always',
      'StateDirectory=licensor',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
    ]) {
      expect(unit.split('\n')).toContain(line);
    }
    expect(unit).toMatch(/^Environment=.*LICENSOR_BACKUP_DIR=\/var\/lib\/licensor\/backups/m);
    // SIGTERM drains for up to 10 s: systemd must wait longer before it kills.
    expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)![1])).toBeGreaterThan(10);
  });

  withTool(missing('systemd-analyze', ['--version']), 'passes systemd-analyze verify', () => {
    const result = spawnSync('systemd-analyze', ['verify', path.join(here, 'systemd/licensor.service')], { encoding: 'utf8' });
    // verify names the node binary it cannot find on a machine without one at /usr/bin/node: only that is tolerated.
    const problems = `${result.stdout}${result.stderr}`.split('\n').filter((line) => line.trim() && !line.includes('/usr/bin/node'));
    expect(problems).toEqual([]);
    expect(result.status === 0 || !existsSync('/usr/bin/node')).toBe(true);
  });
});
