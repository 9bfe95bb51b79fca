import path from 'node:path';
import { defineConfig } from 'vitest/config';

// API tests run once per database backend: SQLite always, PostgreSQL when TEST_DATABASE_URL is set.
const backends = ['sqlite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])];

export default defineConfig({
  resolve: {
    // Tests import the protocol package from source, so they never run against a stale build.
    alias: {
      '@licensor/protocol': path.resolve(import.meta.dirname, 'packages/protocol/src/index.ts'),
      '@licensor/sdk': path.resolve(import.meta.dirname, 'packages/sdk/src/index.ts'),
    },
  },
  test: {
    globalSetup: ['packages/server/test/backends.ts'],
    testTimeout: 30_000,
    // Most files wait on a service process, Chromium or PostgreSQL rather than on a core, so three
    // run at once even on a 2-core machine (Vitest's default there is one).
    maxWorkers: 3,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/test/**/*.test.ts', 'deploy/**/*.test.ts'],
          exclude: ['packages/server/test/api/**', 'packages/console/**', '**/node_modules/**', '**/dist/**'],
        },
      },
      {
        extends: true,
        test: {
          // A real service and Chromium per file (packages/console/test/harness.ts).
          name: 'browser',
          include: ['packages/console/test/**/*.test.ts'],
          testTimeout: 120_000,
          // A page refetches after a write; on a loaded machine that takes longer than the default second.
          expect: { poll: { timeout: 15_000 } },
        },
      },
      {
        extends: true,
        test: {
          // Every SDK's own suite (sdks/<lang>/<lang>.test.ts), each building in its own folder,
          // so they run beside each other and the other projects.
          name: 'sdks',
          include: ['sdks/*/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 600_000,
        },
      },
      {
        extends: true,
        test: {
          // The shared driver test builds every SDK's driver in that SDK's folder, so it runs
          // after the SDKs' suites (the last group), never beside one; the first request to a
          // driver may wait for it to compile.
          name: 'drivers',
          include: ['sdks/drivers.test.ts'],
          sequence: { groupOrder: 1 },
          testTimeout: 300_000,
          hookTimeout: 600_000,
        },
      },
      ...backends.map((backend) => ({
        extends: true,
        test: {
          name: backend,
          include: ['packages/server/test/api/**/*.test.ts'],
          env: { LICENSOR_TEST_BACKEND: backend },
          // Each file builds its own services and databases: a worker keeps the modules it
          // imported for the next file, instead of importing the service again for each.
          isolate: false,
        },
      })),
    ],
  },
});
