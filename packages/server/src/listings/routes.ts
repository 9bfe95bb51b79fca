import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { localDate } from '../core/calendar.js';
import { responses } from '../core/schemas.js';
import { exportLicences } from './export.js';
import { WINDOWS } from './filter.js';
import { LicencePage, ListingQuery } from './schemas.js';
import { countWindows, listingFilter, listingPage } from './service.js';

const tags = ['Licences'];

export const listingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/licenses/page',
    {
      config: { access: 'licenses:read' },
      schema: {
        summary: 'One page of licences, filtered and sorted in the database, with the matching total',
        tags,
        querystring: ListingQuery,
        response: responses({ 200: LicencePage }),
      },
    },
    async (request) => listingPage(request.ctx, request.query),
  );

  app.get(
    '/licenses/windows',
    {
      config: { access: 'licenses:read' },
      schema: {
        summary: 'How many licences fall in each expiry window',
        tags,
        response: responses({ 200: Type.Object(Object.fromEntries(WINDOWS.map((w) => [w, Type.Integer()]))) }),
      },
    },
    async (request) => countWindows(request.ctx),
  );

  app.get(
    '/licenses/export.csv',
    {
      config: { access: 'licenses:read' },
      schema: {
        summary: 'The filtered list as CSV',
        description:
          'Same query as the page listing (`limit`, `offset` and `cursor` are accepted and ignored: every matching row is exported). Refused (400) above 25,000 rows rather than truncated.',
        tags,
        querystring: ListingQuery,
        response: responses({ 200: { content: { 'text/csv': { schema: Type.String() } } } }),
      },
    },
    async (request, reply) => {
      const { ctx } = request;
      const stream = await exportLicences(ctx, await listingFilter(ctx, request.query));
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="licences-${ctx.org.slug}-${localDate(ctx.now, ctx.org.timezone)}.csv"`)
        .send(stream);
    },
  );
};
