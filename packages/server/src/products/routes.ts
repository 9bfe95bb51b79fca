import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { IdParams, NoContent, responses } from '../core/schemas.js';
import type { Keyring } from '../keys/keyring.js';
import { CheckCredential, CreateProductBody, Product, ProductForm, ProductKeyRecord, ProductOptions, UpdateProductBody } from './schemas.js';
import {
  certificatePem,
  createProduct,
  deleteProduct,
  getProduct,
  listProductKeys,
  listProducts,
  productForm,
  productOptions,
  publicKeyPem,
  rotateCheckToken,
  updateProduct,
} from './service.js';

const tags = ['Products'];
const PEM_TYPE = 'application/x-pem-file';
const Pem = { content: { [PEM_TYPE]: { schema: Type.String({ description: 'PEM text.' }) } } };

const sendPem = (reply: FastifyReply, pem: string) => reply.type(PEM_TYPE).send(pem);

export function productRoutes(keyring: Keyring, checkRateAddress: number): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/products',
      {
        config: { access: 'products:read' },
        schema: { summary: "The organisation's products", tags, response: responses({ 200: Type.Array(Product) }) },
      },
      async (request) => listProducts(request.ctx, keyring),
    );

    app.get(
      '/products/options',
      {
        config: { access: 'products:read' },
        schema: {
          summary: 'Algorithms, certificate types, key origins, licence types and parameter types this deployment offers',
          tags,
          response: responses({ 200: ProductOptions }),
        },
      },
      async (request) => productOptions(keyring.hsm, request.ctx.org.slug, checkRateAddress),
    );

    app.get(
      '/products/:id',
      {
        config: { access: 'products:read' },
        schema: { summary: 'One product with its parameters and public key', tags, params: IdParams, response: responses({ 200: Product }) },
      },
      async (request) => getProduct(request.ctx, keyring, request.params.id),
    );

    app.get(
      '/products/:id/form',
      {
        config: { access: 'products:read' },
        schema: {
          summary: "The product's form options: what an issue form needs",
          tags,
          params: IdParams,
          response: responses({ 200: ProductForm }),
        },
      },
      async (request) => productForm(request.ctx, request.params.id),
    );

    app.post(
      '/products',
      {
        config: { access: 'products:write' },
        schema: {
          summary: 'Create a product',
          description:
            'Generates a key pair (Ed25519 unless `algorithm` says otherwise), or imports `privateKeyPem`. Private key material and passphrases are write-only: sealed, never returned.',
          tags,
          body: CreateProductBody,
          response: responses({ 201: Product }, [409]),
        },
      },
      async (request, reply) => reply.code(201).send(await createProduct(request.ctx, keyring, request.body)),
    );

    app.put(
      '/products/:id',
      {
        config: { access: 'products:write' },
        schema: {
          summary: 'Edit a product',
          description:
            'Changes only the fields sent. `regenerateKey: true` replaces a managed key and `privateKeyPem` an imported one; previous keys are kept to verify what they signed. `productKey` is fixed once a licence exists.',
          tags,
          params: IdParams,
          body: UpdateProductBody,
          response: responses({ 200: Product }, [409, 503]),
        },
      },
      async (request) => updateProduct(request.ctx, keyring, request.params.id, request.body),
    );

    app.delete(
      '/products/:id',
      {
        config: { access: 'products:write' },
        schema: { summary: 'Delete a product without licences', tags, params: IdParams, response: responses({ 204: NoContent }, [409]) },
      },
      async (request, reply) => {
        await deleteProduct(request.ctx, request.params.id);
        return reply.code(204).send();
      },
    );

    app.get(
      '/products/:id/public-key',
      {
        config: { access: 'products:read' },
        schema: { summary: "The product's current public key (SPKI PEM)", tags, params: IdParams, response: responses({ 200: Pem }) },
      },
      async (request, reply) => sendPem(reply, await publicKeyPem(request.ctx, request.params.id)),
    );

    app.get(
      '/products/:id/certificate',
      {
        config: { access: 'products:read' },
        schema: {
          summary: "The current key's X.509 certificate (PEM)",
          description: '404 when the product has no certificate (certificateType NONE).',
          tags,
          params: IdParams,
          response: responses({ 200: Pem }),
        },
      },
      async (request, reply) => sendPem(reply, await certificatePem(request.ctx, request.params.id)),
    );

    app.get(
      '/products/:id/keys',
      {
        config: { access: 'products:read' },
        schema: {
          summary: "The product's key pairs, current first (public parts only)",
          tags,
          params: IdParams,
          response: responses({ 200: Type.Array(ProductKeyRecord) }),
        },
      },
      async (request) => listProductKeys(request.ctx, request.params.id),
    );

    app.post(
      '/products/:id/check-token',
      {
        config: { access: 'products:write' },
        schema: {
          summary: 'Rotate the check token',
          description: 'Returns the new token once. The previous token stops working at once: installed applications holding it can no longer check in.',
          tags,
          params: IdParams,
          response: responses({ 200: CheckCredential }),
        },
      },
      async (request) => rotateCheckToken(request.ctx, request.params.id),
    );
  };
}
