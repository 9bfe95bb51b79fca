import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe('products and customers that hold licences', () => {
  it('count their licences, refuse deletion with 409, and fix the productKey', async () => {
    const product = (await h.admin('POST', '/products', { productKey: 'held', name: 'Held' })).data;
    const customer = (await h.admin('POST', '/customers', { name: 'Holder', email: 'holder@example.com' })).data;
    for (let i = 0; i < 2; i++) {
      expect((await h.admin('POST', '/licenses', { productId: product.id, customerId: customer.id })).statusCode).toBe(201);
    }
    expect((await h.admin('GET', `/products/${product.id}`)).data.licenseCount).toBe(2);
    expect((await h.admin('GET', '/products')).data.find((p: { id: number }) => p.id === product.id).licenseCount).toBe(2);
    expect((await h.admin('GET', `/customers/${customer.id}`)).data.licenseCount).toBe(2);
    expect((await h.admin('GET', '/customers')).data.find((c: { id: number }) => c.id === customer.id).licenseCount).toBe(2);

    const deleteProduct = await h.admin('DELETE', `/products/${product.id}`);
    expect(deleteProduct.statusCode).toBe(409);
    expect(deleteProduct.data.error).toBeTruthy();
    const deleteCustomer = await h.admin('DELETE', `/customers/${customer.id}`);
    expect(deleteCustomer.statusCode).toBe(409);
    expect((await h.admin('PUT', `/products/${product.id}`, { productKey: 'renamed' })).statusCode).toBe(409);
    expect((await h.admin('PUT', `/products/${product.id}`, { name: 'Still editable' })).statusCode).toBe(200);
    expect((await h.admin('GET', `/products/${product.id}`)).data.productKey).toBe('held');

    const empty = (await h.admin('POST', '/customers', { name: 'Nobody' })).data;
    expect((await h.admin('GET', `/customers/${empty.id}`)).data.licenseCount).toBe(0);
    expect((await h.admin('DELETE', `/customers/${empty.id}`)).statusCode).toBe(204);
  });
});
