import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap, type Answer, type Body } from './client';

export type Customer = Answer<'/customers/{id}', 'get'>;
export type CustomerBody = Body<'createCustomer'>;

const customers = () => key('customers');
const one = (id: number) => key('customers', 'one', id);
const idPath = (id: number) => ({ params: { path: { id } } });

/** Customers whose name or email holds `q` (all of them without one). */
export const useCustomers = (q: string, enabled = true) =>
  useQuery({
    queryKey: [...customers(), 'list', q],
    queryFn: () => unwrap(api().GET('/customers', { params: { query: q ? { q } : {} } })),
    placeholderData: keepPreviousData,
    enabled,
  });
export const useCustomer = (id: number | null) =>
  useQuery({ queryKey: one(id ?? 0), queryFn: () => unwrap(api().GET('/customers/{id}', idPath(id!))), enabled: id !== null });

/** Creates a customer (no id) or saves one. */
export const useSaveCustomer = (id?: number) =>
  useAction(
    (body: CustomerBody) => unwrap(id === undefined ? api().POST('/customers', { body }) : api().PUT('/customers/{id}', { ...idPath(id), body })),
    [customers()],
  );
/** Erases the customer's personal data and its licences' (DESIGN.md 22): the licences' pages change too. */
export const useEraseCustomer = (id: number) => useAction(() => unwrap(api().POST('/customers/{id}/erase', idPath(id))), [customers(), key('licences')]);
export const useDeleteCustomer = (id: number) => useAction(() => unwrap(api().DELETE('/customers/{id}', idPath(id))), [customers()]);

const links = (id: number) => [...one(id), 'portal-links'];
export const usePortalLinks = (id: number) => useQuery({ queryKey: links(id), queryFn: () => unwrap(api().GET('/customers/{id}/portal-links', idPath(id))) });
export const useCreatePortalLink = (id: number) => useAction(() => unwrap(api().POST('/customers/{id}/portal-links', idPath(id))), [links(id)]);
export const useRevokePortalLink = (id: number) =>
  useAction((linkId: number) => unwrap(api().DELETE('/customers/{id}/portal-links/{linkId}', { params: { path: { id, linkId } } })), [links(id)]);
