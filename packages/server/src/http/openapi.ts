import type { FastifyInstance, FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Access } from '../core/access.js';
import type { Config } from '../config.js';
import { ICON_PNG } from './icon.js';
import { bodyIsOptional } from './validation.js';

const API_PREFIX = '/o/:slug/api';
const PLATFORM_PREFIX = '/platform/api';

function describePlatformAccess(access: string | undefined): string {
  if (access === 'public') return 'No credential.';
  const who = access === 'write' ? 'A PLATFORM_ADMIN session' : 'A platform session (either role)';
  return `${who} (\`svc_platform\` cookie); tokens and organisation sessions get 403.`;
}

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
    case 'portal':
      return "The customer portal's `svc_portal` cookie (from POST /portal/session); every other credential gets 401.";
    case 'check':
      return "The product's check token `svcc_<checkId>_<secret>`; management credentials are not accepted.";
    case 'path-token':
      return 'No credential header: the token in the path is the credential (a secret, logged cut to 12 characters).';
    default:
      return `Requires scope \`${access}\` (a token's scope, or a role that grants it).`;
  }
}

/**
 * Stable operation names: client generators name their methods by them. A route missing here
 * fails the OpenAPI lint test.
 */
const OPERATION_IDS: Record<string, string> = {
  'POST /auth/login': 'signIn',
  'POST /auth/logout': 'signOut',
  'GET /auth/me': 'getIdentity',
  'PUT /auth/password': 'changeOwnPassword',
  'GET /users': 'listMembers',
  'POST /users': 'createMember',
  'PUT /users/{id}': 'updateMember',
  'DELETE /users/{id}': 'deleteMember',
  'GET /tokens': 'listTokens',
  'POST /tokens': 'createToken',
  'POST /tokens/{id}/revoke': 'revokeToken',
  'DELETE /tokens/{id}': 'deleteToken',
  'GET /settings': 'getSettings',
  'PUT /settings': 'updateSettings',
  'POST /settings/mail/test': 'sendTestEmail',
  'POST /licenses/{lid}/send': 'sendLicenceEmail',
  'GET /licenses/{lid}/emails': 'listLicenceEmails',
  'POST /licenses/{lid}/erase-personal-data': 'eraseLicencePersonalData',
  'POST /customers/{id}/erase': 'eraseCustomer',
  'GET /products': 'listProducts',
  'POST /products': 'createProduct',
  'GET /products/options': 'getProductOptions',
  'GET /products/{id}': 'getProduct',
  'PUT /products/{id}': 'updateProduct',
  'DELETE /products/{id}': 'deleteProduct',
  'GET /products/{id}/form': 'getProductForm',
  'GET /products/{id}/public-key': 'downloadPublicKey',
  'GET /products/{id}/certificate': 'downloadCertificate',
  'GET /products/{id}/keys': 'listProductKeys',
  'POST /products/{id}/check-token': 'rotateCheckToken',
  'GET /customers': 'listCustomers',
  'POST /customers': 'createCustomer',
  'GET /customers/{id}': 'getCustomer',
  'PUT /customers/{id}': 'updateCustomer',
  'DELETE /customers/{id}': 'deleteCustomer',
  'GET /licenses': 'listLicences',
  'POST /licenses': 'issueLicence',
  'POST /licenses/verify': 'verifyLicence',
  'GET /licenses/{lid}': 'getLicence',
  'GET /licenses/{lid}/download': 'downloadLicence',
  'POST /licenses/{lid}/renew': 'renewLicence',
  'POST /licenses/{lid}/revoke': 'revokeLicence',
  'POST /licenses/{lid}/reinstate': 'reinstateLicence',
  'POST /licenses/{lid}/archive': 'archiveLicence',
  'POST /licenses/{lid}/restore': 'restoreLicence',
  'POST /licenses/{lid}/release-binding': 'releaseBinding',
  'POST /licenses/{lid}/air-gap-activations': 'activateAirGapped',
  'POST /licenses/{lid}/air-gap-deactivations': 'deactivateAirGapped',
  'PUT /licenses/{lid}/notes': 'updateLicenceNotes',
  'GET /licenses/{lid}/machines': 'listMachines',
  'GET /licenses/{lid}/lease-peaks': 'listLeasePeaks',
  'GET /licenses/{lid}/activity': 'listLicenceActivity',
  'GET /licenses/{lid}/versions': 'listLicenceVersions',
  'GET /licenses/{lid}/versions/{versionNo}': 'getLicenceVersion',
  'GET /licenses/{lid}/versions/{versionNo}/download': 'downloadLicenceVersion',
  'GET /licenses/page': 'listLicencePage',
  'GET /licenses/windows': 'countLicenceWindows',
  'GET /licenses/export.csv': 'exportLicences',
  'GET /dashboard': 'getDashboard',
  'GET /dashboard/metrics': 'getDashboardMetrics',
  'GET /dashboard/activity': 'listActivity',
  'GET /dashboard/usage': 'getDashboardUsage',
  'GET /licenses/{lid}/usage': 'getLicenceUsage',
  'POST /licenses/{lid}/usage/adjust': 'adjustLicenceUsage',
  'POST /products/{id}/releases': 'createRelease',
  'GET /products/{id}/releases': 'listReleases',
  'GET /releases/{id}': 'getRelease',
  'PUT /releases/{id}': 'updateRelease',
  'DELETE /releases/{id}': 'deleteRelease',
  'POST /releases/{id}/publish': 'publishRelease',
  'POST /releases/{id}/yank': 'yankRelease',
  'POST /releases/{id}/unyank': 'unyankRelease',
  'POST /releases/{id}/artifacts': 'uploadArtifact',
  'DELETE /releases/{id}/artifacts/{artifactId}': 'deleteArtifact',
  'GET /releases/{id}/artifacts/{artifactId}/download': 'downloadArtifact',
  'POST /public/license/{checkId}/download': 'grantDownload',
  'POST /public/license/{checkId}/feed-token': 'getFeedToken',
  'GET /public/downloads/{grant}/{filename}': 'downloadWithGrant',
  'GET /public/feeds/{token}/files/{version}/{filename}': 'downloadFeedFile',
  'GET /public/feeds/{token}/electron/{name}': 'getElectronFeed',
  'GET /public/feeds/{token}/tauri/{target}/{arch}/{currentVersion}': 'getTauriUpdate',
  'GET /public/feeds/{token}/sparkle/appcast.xml': 'getSparkleAppcast',
  'GET /public/feeds/{token}/latest.json': 'getLatestJson',
  'POST /licenses/{lid}/reset-download-links': 'resetDownloadLinks',
  'POST /portal/licenses/{lid}/reset-download-links': 'resetPortalDownloadLinks',
  'GET /portal/licenses/{lid}/releases': 'listPortalReleases',
  'POST /portal/licenses/{lid}/downloads': 'grantPortalDownload',
  'POST /public/license/{checkId}/check': 'checkLicence',
  'POST /public/license/{checkId}/release': 'releaseOwnSeat',
  'POST /public/license/{checkId}/borrow': 'borrowLease',
  'POST /public/license/{checkId}/usage': 'recordUsage',
  'POST /public/license/{checkId}/trial': 'startTrial',
  'POST /licenses/{lid}/extend-trial': 'extendTrial',
  'POST /licenses/{lid}/convert': 'convertTrial',
  'POST /licenses/{lid}/reset-trial-ledger': 'resetTrialLedger',
  'GET /licenses/{lid}/trial-installations': 'listTrialInstallations',
  'POST /auth/passkeys/options': 'startPasskeyRegistration',
  'POST /auth/passkeys': 'registerPasskey',
  'GET /auth/passkeys': 'listPasskeys',
  'DELETE /auth/passkeys/{id}': 'deletePasskey',
  'POST /auth/passkey/options': 'startPasskeySignIn',
  'POST /auth/passkey/login': 'signInWithPasskey',
  'POST /platform/api/auth/passkeys/options': 'startPlatformPasskeyRegistration',
  'POST /platform/api/auth/passkeys': 'registerPlatformPasskey',
  'GET /platform/api/auth/passkeys': 'listPlatformPasskeys',
  'DELETE /platform/api/auth/passkeys/{id}': 'deletePlatformPasskey',
  'POST /platform/api/auth/passkey/options': 'startPlatformPasskeySignIn',
  'POST /platform/api/auth/passkey/login': 'platformSignInWithPasskey',
  'POST /customers/{id}/portal-links': 'createPortalLink',
  'GET /customers/{id}/portal-links': 'listPortalLinks',
  'DELETE /customers/{id}/portal-links/{linkId}': 'revokePortalLink',
  'POST /portal/session': 'openPortal',
  'GET /portal/me': 'getPortalIdentity',
  'POST /portal/auth/logout': 'closePortal',
  'GET /portal/licenses': 'listPortalLicences',
  'GET /portal/licenses/{lid}': 'getPortalLicence',
  'GET /portal/licenses/{lid}/download': 'downloadPortalLicence',
  'POST /portal/licenses/{lid}/release': 'releasePortalMachine',
  'GET /webhooks': 'listWebhookEndpoints',
  'POST /webhooks': 'createWebhookEndpoint',
  'GET /webhooks/{id}': 'getWebhookEndpoint',
  'PUT /webhooks/{id}': 'updateWebhookEndpoint',
  'DELETE /webhooks/{id}': 'deleteWebhookEndpoint',
  'POST /webhooks/{id}/rotate-secret': 'rotateWebhookSecret',
  'POST /webhooks/{id}/test': 'sendWebhookTest',
  'GET /webhooks/{id}/deliveries': 'listWebhookDeliveries',
  'POST /webhooks/{id}/deliveries/{eventId}/redeliver': 'redeliverWebhookEvent',
  'POST /webhooks/{id}/recover': 'recoverWebhookEvents',
  'GET /integrations': 'listIntegrations',
  'POST /integrations': 'createIntegration',
  'GET /integrations/{id}': 'getIntegration',
  'PUT /integrations/{id}': 'updateIntegration',
  'DELETE /integrations/{id}': 'deleteIntegration',
  'GET /integrations/{id}/events': 'listIntegrationEvents',
  'POST /integrations/{id}/events/{eventId}/retry': 'retryIntegrationEvent',
  'POST /hooks/stripe/{id}': 'receiveStripeEvent',
  'POST /hooks/paddle/{id}': 'receivePaddleEvent',
  'GET /sso': 'getSingleSignOn',
  'PUT /sso': 'putSingleSignOn',
  'DELETE /sso': 'deleteSingleSignOn',
  'POST /sso/test': 'testSingleSignOn',
  'GET /sso/start': 'startSingleSignOn',
  'GET /sso/callback': 'finishSingleSignOn',
  'GET /auth/methods': 'getSignInMethods',
  'DELETE /users/{id}/sso-link': 'unlinkSingleSignOn',
  'POST /auth/sso/link': 'linkSingleSignOn',
  'POST /portal/licenses/{lid}/air-gap-activations': 'activatePortalAirGapped',
  'POST /portal/licenses/{lid}/air-gap-deactivations': 'deactivatePortalAirGapped',
  'POST /platform/api/auth/login': 'platformSignIn',
  'POST /platform/api/auth/logout': 'platformSignOut',
  'GET /platform/api/auth/me': 'getPlatformIdentity',
  'GET /platform/api/organisations': 'listOrganisations',
  'POST /platform/api/organisations': 'createOrganisation',
  'GET /platform/api/organisations/{slug}': 'getOrganisation',
  'PUT /platform/api/organisations/{slug}': 'updateOrganisation',
  'POST /platform/api/organisations/{slug}/members': 'createOrganisationMember',
  'GET /platform/api/activity': 'listPlatformActivity',
  'POST /public/license/{checkId}/fetch': 'fetchLicence',
};

interface ObjectSchema {
  properties?: Record<string, unknown>;
  required?: string[];
}

/** The slug is the server variable `{slug}`: a path parameter for it would go nowhere in a generated client. */
function withoutSlug(params: ObjectSchema): ObjectSchema {
  const { slug: _slug, ...properties } = params.properties ?? {};
  return { ...params, properties, required: (params.required ?? []).filter((name) => name !== 'slug') };
}

/**
 * OpenAPI 3.1 generated from the route schemas that also validate requests and serialise
 * answers. The organisation is a server variable, so paths are written without `/o/{slug}/api`.
 */
export async function installOpenApi(app: FastifyInstance, version: string, config: Pick<Config, 'publicUrl' | 'ownOrigins'>): Promise<void> {
  const { publicUrl } = config;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Licensor API',
        version,
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        description: 'Management API for issuing and administering signed software licences, and the licence check API used by installed applications.',
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
          portalSession: { type: 'apiKey', in: 'cookie', name: 'svc_portal', description: 'Customer portal session from POST /portal/session.' },
          platformSession: { type: 'apiKey', in: 'cookie', name: 'svc_platform', description: 'Control-plane session from POST /platform/api/auth/login.' },
        },
      },
    },
    // Shared schemas appear under their own $id (`Error`), not a generated `def-N`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: ({ schema, url, route }) => {
      if (url.startsWith(PLATFORM_PREFIX)) {
        const access = route.config?.platform as string | undefined;
        const path = url.replace(/:([A-Za-z]+)/g, '{$1}');
        const operationId = OPERATION_IDS[`${[route.method].flat()[0]} ${path}`];
        const described = {
          ...schema,
          description: [schema?.description, describePlatformAccess(access)].filter(Boolean).join('\n\n'),
          security: (access === 'public' ? [] : [{ platformSession: [] }]) as Array<Record<string, string[]>>,
        };
        return { schema: { ...described, ...(operationId ? { operationId } : {}) }, url };
      }
      if (!url.startsWith(API_PREFIX)) return { schema: { ...schema, hide: true }, url };
      const access = route.config?.access as Access | undefined;
      const described = {
        ...schema,
        ...(schema?.params ? { params: withoutSlug(schema.params as ObjectSchema) } : {}),
        description: [schema?.description, describeAccess(access)].filter(Boolean).join('\n\n'),
        security: (access === 'public' || access === 'path-token'
          ? []
          : access === 'check'
            ? [{ checkToken: [] }]
            : access === 'portal'
              ? [{ portalSession: [] }]
              : [{ token: [] }, { session: [] }]) as Array<Record<string, string[]>>,
      };
      const path = url.slice(API_PREFIX.length) || '/';
      const operationId = OPERATION_IDS[`${[route.method].flat()[0]} ${path.replace(/:([A-Za-z]+)/g, '{$1}')}`];
      return { schema: { ...described, ...(operationId ? { operationId } : {}) }, url: path };
    },
  });
  // The page a person reads: the service's name and icon, and the document /openapi.json serves,
  // whose servers are the address the page was read at when that is one of the service's own (a
  // loopback service answers as localhost and 127.0.0.1), so that "Try it out" reaches it.
  const ownOrigin = (request: FastifyRequest) => config.ownOrigins.find((origin) => origin === `${request.protocol}://${request.host}`);
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    theme: { title: 'Licensor API reference', favicon: [{ filename: 'icon.png', rel: 'icon', sizes: '32x32', type: 'image/png', content: ICON_PNG }] },
    logo: { type: 'image/png', content: ICON_PNG, href: '/' },
    transformSpecification: (doc, request) => served(doc as ServedDocument, ownOrigin(request) ?? publicUrl),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => openApiDocument(app, publicUrl));
}

interface ServedDocument {
  servers: Array<{ url: string }>;
  paths?: Record<string, Record<string, unknown>>;
}

/** The served document, with `base` (the public URL) as its servers' address. */
export const openApiDocument = (app: FastifyInstance, base: string) => served(JSON.parse(JSON.stringify(app.swagger())) as ServedDocument, base);

/**
 * Finishes a copy of the generated document: its server at `base`; the control plane's paths,
 * which are not under an organisation, each with its own server (the deployment's root).
 */
function served(doc: ServedDocument, base: string) {
  doc.servers[0]!.url = `${base}/o/{slug}/api`;
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    if (path.startsWith(PLATFORM_PREFIX))
      item.servers = [{ url: base, description: 'The deployment itself: the control plane is outside every organisation.' }];
    // @fastify/swagger calls every body required; one that needs no field may be left out (http/validation.ts).
    for (const operation of Object.values(item) as Array<{ requestBody?: { required?: boolean; content?: Record<string, { schema?: object }> } }>) {
      const schema = operation.requestBody?.content?.['application/json']?.schema;
      if (schema && bodyIsOptional(schema)) operation.requestBody!.required = false;
    }
  }
  return doc;
}
