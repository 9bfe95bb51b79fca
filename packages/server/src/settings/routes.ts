import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Nullable, NullableTimestamp, responses } from '../core/schemas.js';
import { settingsOf, updateSettings } from './service.js';

const tags = ['Settings'];

const Settings = Type.Object({
  timezone: Type.String({ description: 'IANA zone name every chart of the organisation buckets by.' }),
  updatedAt: NullableTimestamp,
  updatedBy: Nullable(Type.String()),
});

export const settingsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/settings',
    {
      config: { access: 'member' },
      schema: { summary: "The organisation's settings", tags, response: responses({ 200: Settings }) },
    },
    async (request) => settingsOf(request.ctx),
  );

  app.put(
    '/settings',
    {
      config: { access: 'admin-session' },
      schema: {
        summary: "Change the organisation's settings",
        tags,
        body: Type.Object({ timezone: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
        response: responses({ 200: Settings }),
      },
    },
    async (request) => updateSettings(request.ctx, request.body),
  );
};
