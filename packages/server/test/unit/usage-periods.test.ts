import { describe, expect, it } from 'vitest';
import { periodAt, rememberedUntil } from '../../src/usage/periods.js';

const at = (text: string) => Date.parse(text);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const period = (p: Parameters<typeof periodAt>[0], now: string, zone = 'UTC') => {
  const { key, start, resetsAt } = periodAt(p, at(now), zone);
  return { key, start: iso(start), resetsAt: iso(resetsAt) };
};

describe('usage periods (DESIGN.md 19), computed at read time', () => {
  it('are calendar periods in UTC', () => {
    expect(period('DAY', '2026-12-31T23:59:59.999Z')).toEqual({ key: '2026-12-31', start: '2026-12-31T00:00:00.000Z', resetsAt: '2027-01-01T00:00:00.000Z' });
    expect(period('MONTH', '2026-02-14T10:00:00Z')).toEqual({ key: '2026-02', start: '2026-02-01T00:00:00.000Z', resetsAt: '2026-03-01T00:00:00.000Z' });
    expect(period('MONTH', '2026-12-14T10:00:00Z')).toEqual({ key: '2026-12', start: '2026-12-01T00:00:00.000Z', resetsAt: '2027-01-01T00:00:00.000Z' });
    expect(period('YEAR', '2028-02-29T12:00:00Z')).toEqual({ key: '2028', start: '2028-01-01T00:00:00.000Z', resetsAt: '2029-01-01T00:00:00.000Z' });
    expect(period('NONE', '2026-02-14T10:00:00Z')).toEqual({ key: 'NONE', start: null, resetsAt: null });
  });

  it('cross a boundary between two instants a millisecond apart: a fresh key, so a fresh count', () => {
    expect(period('MONTH', '2026-11-30T23:59:59.999Z').key).toBe('2026-11');
    expect(period('MONTH', '2026-12-01T00:00:00.000Z').key).toBe('2026-12');
    expect(period('DAY', '2026-11-30T23:59:59.999Z').key).not.toBe(period('DAY', '2026-12-01T00:00:00.000Z').key);
  });

  it("follow the organisation's timezone, DST included", () => {
    // 23:30 UTC on 31 October is already November in Berlin.
    expect(period('MONTH', '2026-10-31T23:30:00Z', 'Europe/Berlin')).toEqual({
      key: '2026-11',
      start: '2026-10-31T23:00:00.000Z',
      resetsAt: '2026-11-30T23:00:00.000Z',
    });
    // New York's day of the spring change lasts 23 hours.
    expect(period('DAY', '2026-03-08T12:00:00Z', 'America/New_York')).toEqual({
      key: '2026-03-08',
      start: '2026-03-08T05:00:00.000Z',
      resetsAt: '2026-03-09T04:00:00.000Z',
    });
    expect(period('YEAR', '2026-12-31T20:00:00Z', 'Pacific/Auckland').key).toBe('2027');
  });

  it('remember an id 35 days past its period, or 400 days for NONE', () => {
    const now = at('2026-12-14T10:00:00Z');
    expect(iso(rememberedUntil(periodAt('MONTH', now, 'UTC'), now))).toBe('2027-02-05T00:00:00.000Z');
    expect(iso(rememberedUntil(periodAt('NONE', now, 'UTC'), now))).toBe('2028-01-18T10:00:00.000Z');
  });
});
