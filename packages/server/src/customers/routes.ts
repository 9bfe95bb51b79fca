import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { IdParams, NoContent, responses } from '../core/schemas.js';
import { Customer, CustomerBody, CustomerEditBody } from './schemas.js';
import { createCustomer, deleteCustomer, getCustomer, listCustomers, updateCustomer } from './service.js';

const tags = ['Customers'];

export const customerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/customers',
    {
      config: { access: 'customers:read' },
      schema: {
        summary: "The organisation's customers",
        tags,
        querystring: Type.Object(
          { q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Case-insensitive substring of name or email.' })) },
          { additionalProperties: false },
        ),
        response: responses({ 200: Type.Array(Customer) }),
      },
    },
    async (request) => listCustomers(request.ctx, request.query.q),
  );

  app.get(
    '/customers/:id',
    {
      config: { access: 'customers:read' },
      schema: { summary: 'One customer', tags, params: IdParams, response: responses({ 200: Customer }) },
    },
    async (request) => getCustomer(request.ctx, request.params.id),
  );

  app.post(
    '/customers',
    {
      config: { access: 'customers:write' },
      schema: {
        summary: 'Create a customer',
        description: 'Emails are unique per organisation, ignoring case.',
        tags,
        body: CustomerBody,
        response: responses({ 201: Customer }, [409]),
      },
    },
    async (request, reply) => reply.code(201).send(await createCustomer(request.ctx, request.body)),
  );

  app.put(
    '/customers/:id',
    {
      config: { access: 'customers:write' },
      schema: {
        summary: 'Edit a customer',
        description: 'Replaces name, email and notes: an absent email or notes becomes null.',
        tags,
        params: IdParams,
        body: CustomerEditBody,
        response: responses({ 200: Customer }, [409]),
      },
    },
    async (request) => updateCustomer(request.ctx, request.params.id, request.body),
  );

  app.delete(
    '/customers/:id',
    {
      config: { access: 'customers:write' },
      schema: {
        summary: 'Delete a customer',
        description: 'Refused (409) while the customer holds licences.',
        tags,
        params: IdParams,
        response: responses({ 204: NoContent }, [409]),
      },
    },
    async (request, reply) => {
      await deleteCustomer(request.ctx, request.params.id);
      return reply.code(204).send();
    },
  );
};
