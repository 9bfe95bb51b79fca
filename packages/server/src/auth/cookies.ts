import type { FastifyReply } from 'fastify';
import type { Config } from '../config.js';
import type { Organisation } from '../core/context.js';
import { SESSION_COOKIE, SESSION_LIFETIME_MS } from './credentials.js';

// One browser may be signed in to several organisations side by side (DESIGN.md 4).
const cookiePath = (org: Organisation) => `/o/${org.slug}/`;

/** Sets a new session's cookie, the same for a password and a passkey sign-in. */
export function setSessionCookie(reply: FastifyReply, config: Pick<Config, 'publicUrl'>, org: Organisation, value: string) {
  reply.setCookie(SESSION_COOKIE, value, {
    path: cookiePath(org),
    httpOnly: true,
    sameSite: 'strict',
    secure: config.publicUrl.startsWith('https:'),
    maxAge: SESSION_LIFETIME_MS / 1000,
  });
}

export function clearSessionCookie(reply: FastifyReply, org: Organisation) {
  reply.clearCookie(SESSION_COOKIE, { path: cookiePath(org) });
}
