import { useQuery } from '@tanstack/react-query';
import { key, useAction } from './action';
import { api, unwrap, type Answer, type Body } from './client';

export type Member = Answer<'/users', 'get'>[number];
export type MemberBody = Body<'createMember'>;

const members = () => key('members');

export const useMembers = () => useQuery({ queryKey: members(), queryFn: () => unwrap(api().GET('/users')) });
/** Adds a member (no id) or saves one; their own identity may have changed with it. */
export const useSaveMember = (id?: number) =>
  useAction(
    (body: MemberBody) => unwrap(id === undefined ? api().POST('/users', { body }) : api().PUT('/users/{id}', { params: { path: { id } }, body })),
    [members(), key('me')],
  );
export const useDeleteMember = () => useAction((id: number) => unwrap(api().DELETE('/users/{id}', { params: { path: { id } } })), [members()]);
/** Removes a member's single sign-on link (DESIGN.md 21): their single sign-on sessions end. */
export const useUnlinkMember = () => useAction((id: number) => unwrap(api().DELETE('/users/{id}/sso-link', { params: { path: { id } } })), [members()]);
