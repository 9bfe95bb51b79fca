import { describe, expect, it } from 'vitest';
import { terminalProgress } from '../../src/backup/progress.js';

const output = (isTTY: boolean) => {
  const written: string[] = [];
  return { isTTY, written, write: (text: string) => written.push(text) > 0 };
};

describe('backup and restore progress', () => {
  it('shows the table, its rows, the percent done and the time left on a terminal, at most four times a second', () => {
    const err = output(true);
    let now = 1_000_000;
    const progress = terminalProgress(err, output(true), () => now);
    progress.table('licences');
    now += 10_000;
    progress.advance(1000, 250_000, 1_000_000);
    expect(err.written.at(-1)).toBe('\rlicences: 1,000 rows, 25.0%, about 30 s left');
    now += 100;
    progress.advance(1000, 260_000, 1_000_000);
    expect(err.written).toHaveLength(1);
    now += 110_000;
    progress.advance(1000, 500_000, 1_000_000);
    expect(err.written.at(-1)).toMatch(/^\rlicences: 3,000 rows, 50\.0%, about 2 min 0 s left\s*$/);
    progress.end();
    expect(err.written.at(-1)).toMatch(/^\r\s+\r$/);
  });

  it('shows nothing when either output is not a terminal', () => {
    for (const [err, out] of [
      [output(false), output(true)],
      [output(true), output(false)],
    ] as const) {
      const progress = terminalProgress(err, out, () => 0);
      progress.table('licences');
      progress.advance(10, 10, 100);
      progress.end();
      expect(err.written).toEqual([]);
    }
  });
});
