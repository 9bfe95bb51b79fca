import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { encodeFilename, multipart, planRanges } from '../../src/releases/ranges.js';

describe('Range plans', () => {
  it.each([
    ['bytes=0-9', { kind: 'single', range: { start: 0, end: 9 } }],
    ['bytes=90-', { kind: 'single', range: { start: 90, end: 99 } }],
    ['bytes=-10', { kind: 'single', range: { start: 90, end: 99 } }],
    ['bytes=-500', { kind: 'single', range: { start: 0, end: 99 } }],
    ['bytes=50-5000', { kind: 'single', range: { start: 50, end: 99 } }],
    ['bytes=100-', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    [
      'bytes=0-9, 20-29,-5',
      {
        kind: 'multi',
        ranges: [
          { start: 0, end: 9 },
          { start: 20, end: 29 },
          { start: 95, end: 99 },
        ],
      },
    ],
    [
      'bytes=0-9,10-19',
      {
        kind: 'multi',
        ranges: [
          { start: 0, end: 9 },
          { start: 10, end: 19 },
        ],
      },
    ],
    ['bytes=0-9,5-19', { kind: 'whole' }],
    ['bytes=20-29,0-9', { kind: 'whole' }],
    ['bytes=0-9,200-300', { kind: 'whole' }],
    ['bytes=9-0', { kind: 'whole' }],
    ['bytes=abc', { kind: 'whole' }],
    ['items=0-9', { kind: 'whole' }],
    ['bytes=', { kind: 'whole' }],
    ['bytes=0-9,', { kind: 'whole' }],
  ])('%s on 100 bytes', (header, plan) => {
    expect(planRanges(header, 100)).toEqual(plan);
  });

  it('takes 1,000 ranges as a batch and more as the whole file; no header is the whole file', () => {
    const specs = (n: number) => `bytes=${Array.from({ length: n }, (_, i) => `${i * 2}-${i * 2}`).join(',')}`;
    expect(planRanges(specs(1000), 5000).kind).toBe('multi');
    expect(planRanges(specs(1001), 5000).kind).toBe('whole');
    expect(planRanges(undefined, 5000).kind).toBe('whole');
  });

  it('streams multipart/byteranges with a Content-Length that matches', async () => {
    const file = Buffer.from('0123456789abcdefghij');
    const ranges = [
      { start: 0, end: 2 },
      { start: 10, end: 19 },
    ];
    const mp = multipart(ranges, file.length, 'application/zip', 'BOUNDARY');
    expect(mp.contentType).toBe('multipart/byteranges; boundary=BOUNDARY');
    const chunks: Buffer[] = [];
    for await (const chunk of mp.body((r) => Readable.from([file.subarray(r.start, r.end + 1)]))) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    expect(body).toBe(
      '--BOUNDARY\r\nContent-Type: application/zip\r\nContent-Range: bytes 0-2/20\r\n\r\n012' +
        '\r\n--BOUNDARY\r\nContent-Type: application/zip\r\nContent-Range: bytes 10-19/20\r\n\r\nabcdefghij' +
        '\r\n--BOUNDARY--\r\n',
    );
    expect(Buffer.byteLength(body)).toBe(mp.length);
  });

  it('percent-encodes filenames outside the unreserved set in uppercase hex', () => {
    expect(encodeFilename('App Setup 1.2.3.exe')).toBe('App%20Setup%201.2.3.exe');
    expect(encodeFilename('a+b_c~d-e.zip')).toBe('a%2Bb_c~d-e.zip');
  });
});
