// Shared by the key tests (keys, keystore, pkcs11): what every key origin must allow.
import { expect } from 'vitest';
import type { Caller } from './harness.js';

/**
 * DESIGN 4: `PUT /products/{id}` changes only the fields it carries. Edits that send no key
 * field (one field, a new name, the record read back with a change) keep the product's key,
 * its origin and its certificate, and a licence still issues.
 */
export async function expectEditsKeepKey(
  caller: Caller,
  product: { id: number; name: string; keyOrigin: string; publicKeyPem: string; certificatePem: string | null },
) {
  const edits: Array<() => Promise<Record<string, unknown>>> = [
    async () => ({ licenceFetchEnabled: true }),
    async () => ({ name: `${product.name} renamed` }),
    async () => ({ ...(await caller('GET', `/products/${product.id}`)).data, maxMachines: 7 }),
  ];
  for (const edit of edits) {
    const response = await caller('PUT', `/products/${product.id}`, await edit());
    expect(response.statusCode, response.body).toBe(200);
    expect(response.data).toMatchObject({
      keyOrigin: product.keyOrigin,
      keyState: 'OK',
      publicKeyPem: product.publicKeyPem,
      certificatePem: product.certificatePem,
    });
  }
  const after = (await caller('GET', `/products/${product.id}`)).data;
  expect(after).toMatchObject({ licenceFetchEnabled: true, name: `${product.name} renamed`, maxMachines: 7 });
  expect((await caller('GET', `/products/${product.id}/keys`)).data).toHaveLength(1);
  expect((await caller('POST', '/licenses', { productId: product.id, licensee: 'After an edit' })).statusCode).toBe(201);
}
