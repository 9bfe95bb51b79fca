import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import { IdParams, NoContent, responses } from '../core/schemas.js';
import { CreateMemberBody, Member, UpdateMemberBody } from './schemas.js';
import { createMember, deleteMember, listMembers, updateMember } from './service.js';

const tags = ['Users'];

export const userRoutes =
  (config: Pick<Config, 'dataDir'>): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/users',
      {
        config: { access: 'users:read' },
        schema: { summary: 'Members of the organisation and their roles', tags, response: responses({ 200: Type.Array(Member) }) },
      },
      async (request) => listMembers(request.ctx),
    );

    app.post(
      '/users',
      {
        config: { access: 'users:write' },
        schema: {
          summary: 'Create a member',
          description: 'A token may create members (an ORG_ADMIN included) but never carry a `password`.',
          tags,
          body: CreateMemberBody,
          response: responses({ 201: Member }, [409]),
        },
      },
      async (request, reply) => reply.code(201).send(await createMember(request.ctx, request.body)),
    );

    app.put(
      '/users/:id',
      {
        config: { access: 'users:write' },
        schema: {
          summary: 'Edit a member',
          description: 'Changes only the fields sent. Refused (409) if no active ORG_ADMIN would remain.',
          tags,
          params: IdParams,
          body: UpdateMemberBody,
          response: responses({ 200: Member }, [409]),
        },
      },
      async (request) => updateMember(request.ctx, request.params.id, request.body, config.dataDir),
    );

    app.delete(
      '/users/:id',
      {
        config: { access: 'users:write' },
        schema: {
          summary: 'Remove a member',
          tags,
          params: IdParams,
          response: responses({ 204: NoContent }, [409]),
        },
      },
      async (request, reply) => {
        await deleteMember(request.ctx, request.params.id);
        return reply.code(204).send();
      },
    );
  };
