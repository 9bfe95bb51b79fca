// Signatures on a PKCS#11 token (SoftHSM2) through the service's own signer, against node:crypto
// with the key in memory. Run: npm run bench:sign (after the protocol rows), or
// tsx packages/server/bench/sign-hsm.ts; BENCH_SECONDS sets the time per measurement (default 1.5).
//
// "one at a time" awaits each signature before the next, as one request does; "8 in flight"
// keeps eight signatures outstanding, as concurrent requests do, spread over the session pool.
import { randomBytes } from 'node:crypto';
import { ALGORITHM_INFO, generateAlgorithmKeyPair, signBytes, type Algorithm } from '@licensor/protocol';
import { Hsm } from '../src/keys/pkcs11.js';
import { KEY_TYPES, softHsm, softHsmMissing } from '../test/softhsm.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1.5);
const PIN = 'bench-pin-1';
// A receipt's message: what every check signs.
const message = randomBytes(120);

async function rate(concurrency: number, sign: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 20; i++) await sign();
  let done = 0;
  const end = performance.now() + SECONDS * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await sign();
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

if (softHsmMissing) {
  console.log(`SoftHSM rows skipped: ${softHsmMissing}`);
} else {
  const tokens = softHsm();
  try {
    tokens.initToken('bench', PIN);
    const algorithms = Object.keys(KEY_TYPES) as Algorithm[];
    for (const algorithm of algorithms) tokens.generate('bench', PIN, algorithm, algorithm);
    const hsm = new Hsm(tokens.module, new Map([['bench', ['bench']]]));
    console.log(`\nSoftHSM2 signatures per second (wall clock), ${SECONDS} s each, receipt-sized message`);
    console.log('| Algorithm | token, one at a time | token, 8 in flight | node:crypto, key in memory |');
    console.log('|---|---:|---:|---:|');
    for (const algorithm of algorithms) {
      const key = await hsm.find('bench', 'bench', algorithm, PIN);
      const onToken = () => hsm.sign(key, PIN, algorithm, message);
      const { privateKey } = await generateAlgorithmKeyPair(algorithm);
      const row = [await rate(1, onToken), await rate(8, onToken), await rate(1, async () => signBytes(privateKey, message))];
      console.log(`| ${ALGORITHM_INFO[algorithm].label} | ${row.map((r) => Math.round(r).toLocaleString('en')).join(' | ')} |`);
    }
  } finally {
    tokens.dispose();
  }
}
