import { useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap, type Answer, type Body } from './client';

export type Endpoint = Answer<'/webhooks', 'get'>[number];
export type Delivery = Answer<'/webhooks/{id}/deliveries', 'get'>['items'][number];
export type DeliveryStatus = 'all' | 'pending' | 'delivered' | 'failed';

const webhooks = () => key('webhooks');
const deliveries = (id: number) => [...webhooks(), id, 'deliveries'];
const idPath = (id: number) => ({ params: { path: { id } } });

export const useWebhooks = (enabled: boolean) => useQuery({ queryKey: webhooks(), queryFn: () => unwrap(api().GET('/webhooks')), enabled });
export function useDeliveries(id: number, status: DeliveryStatus) {
  return useQuery({
    queryKey: [...deliveries(id), status],
    queryFn: () => unwrap(api().GET('/webhooks/{id}/deliveries', { params: { path: { id }, query: status === 'all' ? {} : { status } } })),
    // While something waits for an attempt, the log follows the delivery loop.
    refetchInterval: (query) => (query.state.data?.items.some((d) => d.status === 'pending') ? 3_000 : false),
  });
}

export const useAddWebhook = () => useAction((body: Body<'createWebhookEndpoint'>) => unwrap(api().POST('/webhooks', { body })), [webhooks()]);
export const useSetWebhookEnabled = () =>
  useAction(({ id, enabled }: { id: number; enabled: boolean }) => unwrap(api().PUT('/webhooks/{id}', { ...idPath(id), body: { enabled } })), [webhooks()]);
export const useDeleteWebhook = () => useAction((id: number) => unwrap(api().DELETE('/webhooks/{id}', idPath(id))), [webhooks()]);
/** A test event: its outcome, the endpoint's health and its log all change. */
export const useTestWebhook = () => useAction((id: number) => unwrap(api().POST('/webhooks/{id}/test', idPath(id))), [webhooks()]);
export const useRotateSecret = (id: number) =>
  useAction((overlapHours: number) => unwrap(api().POST('/webhooks/{id}/rotate-secret', { ...idPath(id), body: { overlapHours } })), [webhooks()]);
export const useRedeliver = (id: number) =>
  useAction((eventId: string) => unwrap(api().POST('/webhooks/{id}/deliveries/{eventId}/redeliver', { params: { path: { id, eventId } } })), [webhooks()]);
