import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/integrations/signature.js';

const stripe = new Stripe('sk_test_unused');
const secret = 'whsec_0123456789abcdefghijklmnop';
const body = '{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1"}}}';
const now = 1_800_000_000;

function stripeHeader(payload: string, timestamp: number, key = secret): string {
  return stripe.webhooks.generateTestHeaderString({ payload, secret: key, timestamp });
}

function paddleHeader(payload: string, timestamp: number, key = secret): string {
  const h1 = createHmac('sha256', key).update(`${timestamp}:${payload}`).digest('hex');
  return `ts=${timestamp};h1=${h1}`;
}

describe('provider signatures', () => {
  it("accepts Stripe's own test header over the raw bytes, 300 s either way", () => {
    for (const offset of [0, 300, -300]) {
      expect(verifySignature('stripe', stripeHeader(body, now + offset), Buffer.from(body), secret, now)).toEqual({ ok: true, timestamp: now + offset });
    }
  });

  it('refuses a body changed by one byte, another secret, and Paddle’s scheme on the Stripe path', () => {
    const header = stripeHeader(body, now);
    expect(verifySignature('stripe', header, Buffer.from(body.replace('in_1', 'in_2')), secret, now)).toMatchObject({ ok: false, failure: 'SIGNATURE' });
    expect(verifySignature('stripe', header, Buffer.from(body), `${secret}x`, now)).toMatchObject({ ok: false, failure: 'SIGNATURE' });
    expect(verifySignature('stripe', paddleHeader(body, now), Buffer.from(body), secret, now)).toMatchObject({ ok: false, failure: 'SIGNATURE' });
  });

  it('refuses a valid signature whose timestamp is over 300 s away, either way, as TIMESTAMP', () => {
    for (const offset of [301, -301]) {
      const verdict = verifySignature('stripe', stripeHeader(body, now + offset), Buffer.from(body), secret, now);
      expect(verdict).toMatchObject({ ok: false, failure: 'TIMESTAMP' });
    }
  });

  it('accepts any of several v1 signatures (a rolled secret) and ignores other schemes', () => {
    const good = stripeHeader(body, now).split(',v1=')[1];
    const header = `t=${now},v0=${'0'.repeat(64)},v1=${'a'.repeat(64)},v1=${good}`;
    expect(verifySignature('stripe', header, Buffer.from(body), secret, now)).toMatchObject({ ok: true });
    expect(verifySignature('stripe', `t=${now},v0=${good}`, Buffer.from(body), secret, now)).toMatchObject({ ok: false, failure: 'SIGNATURE' });
  });

  it('refuses a missing or malformed header as SIGNATURE, naming no secret', () => {
    for (const header of [
      undefined,
      '',
      'garbage',
      `v1=${'a'.repeat(64)}`,
      `t=abc,v1=${'a'.repeat(64)}`,
      `t=${now}`,
      `t=${now},t=${now},v1=${'a'.repeat(64)}`,
    ]) {
      const verdict = verifySignature('stripe', header, Buffer.from(body), secret, now);
      expect(verdict).toMatchObject({ ok: false, failure: 'SIGNATURE' });
      expect(JSON.stringify(verdict)).not.toContain(secret);
    }
  });

  it("checks Paddle's ts=;h1= over ts:body, several h1 accepted, 300 s either way", () => {
    expect(verifySignature('paddle', paddleHeader(body, now - 300), Buffer.from(body), secret, now)).toMatchObject({ ok: true });
    const good = paddleHeader(body, now).split(';h1=')[1];
    expect(verifySignature('paddle', `ts=${now};h1=${'b'.repeat(64)};h1=${good}`, Buffer.from(body), secret, now)).toMatchObject({ ok: true });
    expect(verifySignature('paddle', paddleHeader(body, now + 301), Buffer.from(body), secret, now)).toMatchObject({ ok: false, failure: 'TIMESTAMP' });
    expect(verifySignature('paddle', paddleHeader(`${body} `, now), Buffer.from(body), secret, now)).toMatchObject({ ok: false, failure: 'SIGNATURE' });
    expect(verifySignature('paddle', stripeHeader(body, now), Buffer.from(body), secret, now)).toMatchObject({ ok: false, failure: 'SIGNATURE' });
  });

  it('verifies the raw bytes, not a re-encoding (non-ASCII body)', () => {
    const raw = Buffer.from('{"id":"evt_2","type":"x","name":"Zoë"}', 'utf8');
    const header = stripeHeader(raw.toString('utf8'), now);
    expect(verifySignature('stripe', header, raw, secret, now)).toMatchObject({ ok: true });
    expect(verifySignature('stripe', header, Buffer.from(raw.toString('latin1'), 'utf8'), secret, now)).toMatchObject({ ok: false });
  });
});
