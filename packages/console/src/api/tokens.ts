import { useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap, type Answer, type Body } from './client';

export type Token = Answer<'/tokens', 'get'>[number];

const tokens = () => key('tokens');
const idPath = (id: string) => ({ params: { path: { id } } });

export const useTokens = (enabled: boolean) => useQuery({ queryKey: tokens(), queryFn: () => unwrap(api().GET('/tokens')), enabled });
export const useCreateToken = () => useAction((body: Body<'createToken'>) => unwrap(api().POST('/tokens', { body })), [tokens()]);
export const useRevokeToken = () => useAction((id: string) => unwrap(api().POST('/tokens/{id}/revoke', idPath(id))), [tokens()]);
export const useDeleteToken = () => useAction((id: string) => unwrap(api().DELETE('/tokens/{id}', idPath(id))), [tokens()]);
