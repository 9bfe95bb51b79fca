import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap, type Answer, type Body, type Query } from './client';

export type Integration = Answer<'/integrations/{id}', 'get'>;
export type IntegrationBody = Body<'createIntegration'>;
export type IntegrationChange = Body<'updateIntegration'>;
export type Mapping = IntegrationBody['mappings'][number];
export type IntegrationEvent = Answer<'/integrations/{id}/events', 'get'>['items'][number];
export type Outcome = NonNullable<Query<'listIntegrationEvents'>['outcome']>;

const integrations = () => key('integrations');
const idPath = (id: number) => ({ params: { path: { id } } });
/** A provider sends while the page is open (a vendor trying their setup): its counts and ledger follow. */
const FOLLOW_MS = 10_000;

export const useIntegrations = (enabled: boolean) => useQuery({ queryKey: integrations(), queryFn: () => unwrap(api().GET('/integrations')), enabled });
export const useIntegration = (id: number, enabled: boolean) =>
  useQuery({ queryKey: [...integrations(), id], queryFn: () => unwrap(api().GET('/integrations/{id}', idPath(id))), enabled, refetchInterval: FOLLOW_MS });
export function useIntegrationEvents(id: number, query: { outcome: Outcome | null; limit: number; offset: number }, enabled: boolean) {
  const { outcome, ...page } = query;
  return useQuery({
    queryKey: [...integrations(), id, 'events', query],
    queryFn: () => unwrap(api().GET('/integrations/{id}/events', { params: { path: { id }, query: { ...page, ...(outcome ? { outcome } : {}) } } })),
    placeholderData: keepPreviousData,
    refetchInterval: FOLLOW_MS,
    enabled,
  });
}

export const useAddIntegration = () => useAction((body: IntegrationBody) => unwrap(api().POST('/integrations', { body })), [integrations()]);
export const useChangeIntegration = (id: number) =>
  useAction((body: IntegrationChange) => unwrap(api().PUT('/integrations/{id}', { ...idPath(id), body })), [integrations()]);
export const useDeleteIntegration = (id: number) => useAction(() => unwrap(api().DELETE('/integrations/{id}', idPath(id))), [integrations()]);
/** A retry may issue or renew: the connection's counts, its ledger and the licences all change. */
export const useRetryEvent = (id: number) =>
  useAction(
    (eventId: string) => unwrap(api().POST('/integrations/{id}/events/{eventId}/retry', { params: { path: { id, eventId } } })),
    [integrations(), key('licences'), key('dashboard')],
  );
