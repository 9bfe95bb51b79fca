import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openKeystore } from '../../src/keys/keystore.js';
import { keystores, keystoreToolsMissing } from '../keystore-fixtures.js';

const PASSWORD = 'unit-keystore-pass';
let stores: ReturnType<typeof keystores>;
beforeAll(() => {
  stores = keystores();
});
afterAll(() => stores?.dispose());

/** The 400's message, or null when the keystore opened. */
function refusal(base64: string, password = PASSWORD): string | null {
  try {
    openKeystore(base64, password);
    return null;
  } catch (err) {
    expect((err as { status?: number }).status).toBe(400);
    return (err as Error).message;
  }
}

const elapsed = (work: () => unknown) => {
  const start = performance.now();
  work();
  return performance.now() - start;
};

describe('a hostile keystore is refused without holding the service', () => {
  it('refuses text that is not base64, however much whitespace it carries, at once', () => {
    const spaces = `${' '.repeat(199_990)}!`;
    let message: string | null = null;
    // The old pattern backtracked over the spaces: 50,000 took 6 s.
    expect(elapsed(() => (message = refusal(spaces)))).toBeLessThan(1_000);
    expect(message).toMatch(/^PKCS#12 keystore \(keystorePkcs12\): not a readable PKCS#12 keystore/);
    expect(refusal('A'.repeat(200_001))).toMatch(/^PKCS#12 keystore \(keystorePkcs12\): not a readable/);
  });

  it.skipIf(keystoreToolsMissing.length)('opens base64 that is wrapped across lines, as `base64` writes it', () => {
    const store = stores.make('openssl', 'ED25519', PASSWORD);
    const wrapped = `${store.base64.replace(/.{76}/g, '$&\n')}\n`;
    expect(openKeystore(wrapped, PASSWORD).privateKey.asymmetricKeyType).toBe('ed25519');
  });

  it.skipIf(keystoreToolsMissing.length)('refuses a keystore that asks for more key-derivation rounds than the budget, before deriving', () => {
    const greedy = stores.make('openssl', 'EC_P256', PASSWORD, { iterations: 250_000 });
    let message: string | null = null;
    // 250,000 rounds in forge would take over a second; the count is read before any is run.
    expect(elapsed(() => (message = refusal(greedy.base64)))).toBeLessThan(500);
    expect(message).toBe(
      'PKCS#12 keystore (keystorePkcs12): the keystore asks for more than 200,000 key-derivation rounds; export it again with fewer (openssl pkcs12 -export -iter 2048)',
    );
    // The budget is per keystore: the next one opens.
    expect(refusal(stores.make('openssl', 'EC_P256', PASSWORD).base64)).toBeNull();
  });

  it.skipIf(keystoreToolsMissing.length)('opens a keystore within the budget, and tells a wrong password from an unreadable file', () => {
    const store = stores.make('openssl', 'RSA_2048', PASSWORD, { iterations: 20_000 });
    expect(refusal(store.base64)).toBeNull();
    expect(refusal(store.base64, 'not-the-password')).toBe('Keystore password (keystorePassword): does not open the keystore');
    expect(refusal(Buffer.from('not a keystore at all').toString('base64'))).toMatch(/^PKCS#12 keystore \(keystorePkcs12\): not a readable/);
    // A keystore cut short names the file, not the password.
    expect(refusal(store.base64.slice(0, 800))).toMatch(/^PKCS#12 keystore \(keystorePkcs12\): not a readable/);
  });
});
