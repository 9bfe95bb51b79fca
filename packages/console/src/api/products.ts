import { useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap, type Answer, type Body } from './client';

export type Product = Answer<'/products/{id}', 'get'>;
export type ProductBody = Body<'createProduct'>;

const products = () => key('products');
const one = (id: number) => key('products', 'one', id);
const idPath = (id: number) => ({ params: { path: { id } } });

export const useProducts = (enabled = true) => useQuery({ queryKey: products(), queryFn: () => unwrap(api().GET('/products')), enabled });
export const useProduct = (id: number | null) =>
  useQuery({ queryKey: one(id ?? 0), queryFn: () => unwrap(api().GET('/products/{id}', idPath(id!))), enabled: id !== null });
export const useProductKeys = (id: number) => useQuery({ queryKey: [...one(id), 'keys'], queryFn: () => unwrap(api().GET('/products/{id}/keys', idPath(id))) });
/** What this deployment offers (algorithms, key origins...): it changes only with the deployment. */
export const useProductOptions = (enabled = true) =>
  useQuery({ queryKey: key('product-options'), queryFn: () => unwrap(api().GET('/products/options')), staleTime: Infinity, enabled });
/** The issue and renew forms' fields for a product. */
export const useProductForm = (id: number | null, enabled = true) =>
  useQuery({ queryKey: [...one(id ?? 0), 'form'], queryFn: () => unwrap(api().GET('/products/{id}/form', idPath(id!))), enabled: enabled && id !== null });

/** Creates a product (no id) or saves one; the dashboard's checklist follows products too. */
export const useSaveProduct = (id?: number) =>
  useAction(
    (body: ProductBody) => unwrap(id === undefined ? api().POST('/products', { body }) : api().PUT('/products/{id}', { ...idPath(id), body })),
    [products(), key('dashboard')],
  );
export const useRegenerateKey = (id: number) =>
  useAction(
    (algorithm: Product['algorithm'] | null) =>
      unwrap(api().PUT('/products/{id}', { ...idPath(id), body: { regenerateKey: true, ...(algorithm ? { algorithm } : {}) } })),
    [products()],
  );
export const useRotateCheckToken = (id: number) =>
  useAction(() => unwrap(api().POST('/products/{id}/check-token', idPath(id))), [products(), key('dashboard')]);
export const useDeleteProduct = (id: number) => useAction(() => unwrap(api().DELETE('/products/{id}', idPath(id))), [products(), key('dashboard')]);
export const useDownloadCertificate = (id: number) =>
  useAction(async () => (await unwrap(api().GET('/products/{id}/certificate', { ...idPath(id), parseAs: 'text' }))) as string);
