import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      databaseUrl: null,
      masterKey: null,
      redisUrl: null,
      publicUrl: 'http://127.0.0.1:8080',
      trustProxy: false,
      loginFailures: 10,
      checkRateProduct: 6000,
      checkRateAddress: 600,
      logLevel: 'info',
      workers: 1,
      pkcs11: null,
    });
    expect(config.dataDir).toMatch(/\/data$/);
    expect(config.backupDir).toBe(`${config.dataDir}/backups`);
    expect(loadConfig({ LICENSOR_DATA_DIR: '/srv/licensor' }).backupDir).toBe('/srv/licensor/backups');
    expect(loadConfig({ LICENSOR_BACKUP_DIR: '/backups/licensor' }).backupDir).toBe('/backups/licensor');
  });

  it('reads the artifact store: disk by default, or an S3 bucket with its endpoint, region, key pair and path style', () => {
    expect(loadConfig({}).artifactStore).toEqual({ kind: 'disk' });
    expect(loadConfig({ LICENSOR_ARTIFACT_STORE: 's3://releases' }).artifactStore).toEqual({
      kind: 's3',
      bucket: 'releases',
      prefix: '',
      endpoint: null,
      region: 'us-east-1',
      credentials: null,
      forcePathStyle: false,
    });
    const minio = {
      LICENSOR_ARTIFACT_STORE: 's3://releases/licensor/files/',
      LICENSOR_S3_ENDPOINT: 'http://minio:9000',
      LICENSOR_S3_REGION: 'eu-west-1',
      LICENSOR_S3_ACCESS_KEY_ID: 'id',
      LICENSOR_S3_SECRET_ACCESS_KEY: 'secret',
    };
    expect(loadConfig(minio).artifactStore).toEqual({
      kind: 's3',
      bucket: 'releases',
      prefix: 'licensor/files',
      endpoint: 'http://minio:9000',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
      forcePathStyle: true,
    });
    expect(loadConfig({ ...minio, LICENSOR_S3_FORCE_PATH_STYLE: 'false' }).artifactStore).toMatchObject({ forcePathStyle: false });
    expect(() => loadConfig({ ...minio, LICENSOR_S3_SECRET_ACCESS_KEY: '' })).toThrow(/both or neither/);
    expect(() => loadConfig({ ...minio, LICENSOR_S3_ENDPOINT: 'minio:9000' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...minio, LICENSOR_S3_FORCE_PATH_STYLE: 'yes' })).toThrow(/true or false/);
    expect(() => loadConfig({ LICENSOR_ARTIFACT_STORE: 's3://Bad_Bucket' })).toThrow(/s3:\/\/bucket/);
  });

  it('reads which PKCS#11 tokens each organisation may use, and refuses a half or malformed setting', () => {
    const config = loadConfig({ LICENSOR_PKCS11_MODULE: '/usr/lib/softhsm/libsofthsm2.so', LICENSOR_PKCS11_TOKENS: 'acme=Acme HSM, acme=spare,globex=g1' });
    expect(config.pkcs11).toEqual({
      module: '/usr/lib/softhsm/libsofthsm2.so',
      tokens: new Map([
        ['acme', ['Acme HSM', 'spare']],
        ['globex', ['g1']],
      ]),
    });
    expect(() => loadConfig({ LICENSOR_PKCS11_MODULE: '/m.so' })).toThrow(/go together/);
    expect(() => loadConfig({ LICENSOR_PKCS11_TOKENS: 'acme=a' })).toThrow(/go together/);
    expect(() => loadConfig({ LICENSOR_PKCS11_MODULE: 'relative.so', LICENSOR_PKCS11_TOKENS: 'acme=a' })).toThrow(/absolute path/);
    expect(() => loadConfig({ LICENSOR_PKCS11_MODULE: '/m.so', LICENSOR_PKCS11_TOKENS: 'acme' })).toThrow(ConfigError);
    expect(() => loadConfig({ LICENSOR_PKCS11_MODULE: '/m.so', LICENSOR_PKCS11_TOKENS: 'acme=a-label-longer-than-thirty-two-chars' })).toThrow(
      /slug=tokenLabel/,
    );
  });

  it('reads the CIDR ranges webhooks may reach, IPv4 and IPv6, and refuses anything else naming the setting', () => {
    const allowed = loadConfig({ LICENSOR_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8, 10.1.0.0/16,fd00::/8' }).webhookAllowNetworks;
    expect(['127.9.9.9', '10.1.2.3'].map((a) => allowed.check(a, 'ipv4'))).toEqual([true, true]);
    expect(allowed.check('fd12::1', 'ipv6')).toBe(true);
    expect(allowed.check('10.2.0.1', 'ipv4')).toBe(false);
    expect(loadConfig({}).webhookAllowNetworks.check('127.0.0.1', 'ipv4')).toBe(false);
    for (const bad of ['127.0.0.1', '10.0.0.0/33', 'localhost/8', '::/129', '10.0.0.0/8/1']) {
      expect(() => loadConfig({ LICENSOR_WEBHOOK_ALLOW_NETWORKS: bad })).toThrow(
        `LICENSOR_WEBHOOK_ALLOW_NETWORKS must be CIDR ranges separated by commas, got "${bad}"`,
      );
    }
  });

  it('starts as many workers as asked, one per core for auto, and refuses anything else naming the setting', () => {
    expect(loadConfig({ LICENSOR_WORKERS: '3' }).workers).toBe(3);
    expect(loadConfig({ LICENSOR_WORKERS: 'auto' }).workers).toBe(os.availableParallelism());
    for (const bad of ['0', '257', 'two', '-1', '1.5']) {
      expect(() => loadConfig({ LICENSOR_WORKERS: bad })).toThrow(`LICENSOR_WORKERS must be auto or an integer from 1 to 256, got "${bad}"`);
    }
  });

  it('logs JSON lines unless on a terminal, and refuses a LOG_FORMAT it does not know, naming the setting', () => {
    expect(loadConfig({}, false).logFormat).toBe('json');
    expect(loadConfig({}, true).logFormat).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'json' }, true).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }, false).logFormat).toBe('pretty');
    for (const bad of ['yaml', 'JSON', ' pretty']) expect(() => loadConfig({ LOG_FORMAT: bad })).toThrow(`LOG_FORMAT must be json or pretty, got "${bad}"`);
  });

  it('names the console the start-up banner sends the operator to: the public URL, else localhost on this machine', () => {
    expect(loadConfig({}).consoleUrl).toBe('http://localhost:8080/');
    expect(loadConfig({ PORT: '9000', HOST: '0.0.0.0' }).consoleUrl).toBe('http://localhost:9000/');
    expect(loadConfig({ HOST: '10.0.0.5' }).consoleUrl).toBe('http://10.0.0.5:8080/');
    expect(loadConfig({ LICENSOR_PUBLIC_URL: 'https://licences.example.com/' }).consoleUrl).toBe('https://licences.example.com/');
  });

  it('requires a master key with PostgreSQL', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://localhost/x' })).toThrow(/LICENSOR_MASTER_KEY is required/);
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(loadConfig({ DATABASE_URL: 'postgres://localhost/x', LICENSOR_MASTER_KEY: key }).masterKey).toEqual(Buffer.alloc(32, 7));
  });

  it.each([
    ['PORT', '-1'],
    ['PORT', '8080x'],
    ['LICENSOR_MASTER_KEY', Buffer.alloc(31).toString('base64')],
    ['LICENSOR_MASTER_KEY', 'not base64!'],
    ['LICENSOR_TRUST_PROXY', 'maybe'],
    ['LICENSOR_PUBLIC_URL', 'ftp://x'],
    ['LICENSOR_CHECK_RATE_PRODUCT', '1.5'],
    ['LOG_LEVEL', 'loud'],
    ['REDIS_URL', 'http://x'],
  ])('refuses %s=%s with a ConfigError naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('reports a bad HOST as HOST', () => {
    expect(() => loadConfig({ HOST: 'bad host name' })).toThrow(/^HOST /);
  });

  it('refuses a bootstrap password shorter than 12 characters', () => {
    expect(() => loadConfig({ LICENSOR_BOOTSTRAP_PASSWORD: 'short' })).toThrow(/LICENSOR_BOOTSTRAP_PASSWORD must be at least 12 characters/);
    expect(loadConfig({ LICENSOR_BOOTSTRAP_PASSWORD: 'twelve chars' }).bootstrapPassword).toBe('twelve chars');
  });

  it('answers as both loopback names when no public URL is set, and only as the public URL otherwise', () => {
    expect(loadConfig({}).ownOrigins).toEqual(['http://127.0.0.1:8080', 'http://localhost:8080']);
    expect(loadConfig({ HOST: 'localhost', PORT: '9000' }).ownOrigins).toEqual(['http://localhost:9000', 'http://127.0.0.1:9000']);
    expect(loadConfig({ HOST: '0.0.0.0' }).ownOrigins).toEqual(['http://0.0.0.0:8080']);
    expect(loadConfig({ LICENSOR_PUBLIC_URL: 'https://licences.example.com/' }).ownOrigins).toEqual(['https://licences.example.com']);
  });

  it('derives the public URL from host and port, without a trailing slash', () => {
    expect(loadConfig({ HOST: '0.0.0.0', PORT: '9000' }).publicUrl).toBe('http://0.0.0.0:9000');
    expect(loadConfig({ LICENSOR_PUBLIC_URL: 'https://licences.example.com/' }).publicUrl).toBe('https://licences.example.com');
  });
});
