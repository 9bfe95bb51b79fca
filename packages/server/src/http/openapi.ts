import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Access } from '../auth/access.js';

const API_PREFIX = '/o/:slug/api';

function describeAccess(access: Access | undefined): string {
  switch (access) {
    case 'public':
      return 'No credential.';
    case 'member':
      return 'Any credential of the organisation.';
    case 'session':
      return 'A signed-in person (session cookie); closed to API tokens.';
    case 'admin-session':
      return 'A signed-in ORG_ADMIN (session cookie); closed to API tokens.';
    case 'check':
      return "The product's check token `svcc_<checkId>_<secret>`; management credentials are not accepted.";
    default:
      return `Requires scope \`${access}\` (a token's scope, or a role that grants it).`;
  }
}

/**
 * OpenAPI 3.1 generated from the route schemas that also validate requests and serialise
 * answers. The organisation is a server variable, so paths are written without `/o/{slug}/api`.
 */
export async function installOpenApi(app: FastifyInstance, version: string, publicUrl: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Licensor API',
        version,
        description:
          'Management API for issuing and administering signed software licences, and the licence check API used by installed applications.',
      },
      servers: [
        {
          url: `${publicUrl}/o/{slug}/api`,
          variables: { slug: { default: 'default', description: "The organisation's slug." } },
        },
      ],
      components: {
        securitySchemes: {
          token: { type: 'http', scheme: 'bearer', description: 'API token `svc_<id>_<secret>`.' },
          session: { type: 'apiKey', in: 'cookie', name: 'svc_session', description: 'Console session from POST /auth/login.' },
          checkToken: { type: 'http', scheme: 'bearer', description: "A product's check token `svcc_<checkId>_<secret>` (licence check API)." },
        },
      },
    },
    // Shared schemas appear under their own $id (`Error`), not a generated `def-N`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: ({ schema, url, route }) => {
      if (!url.startsWith(API_PREFIX)) return { schema: { ...schema, hide: true }, url };
      const access = route.config?.access as Access | undefined;
      const described = {
        ...schema,
        description: [schema?.description, describeAccess(access)].filter(Boolean).join('\n\n'),
        ...(access === 'public' ? {} : { security: access === 'check' ? [{ checkToken: [] }] : [{ token: [] }, { session: [] }] }),
      };
      return { schema: described, url: url.slice(API_PREFIX.length) || '/' };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
