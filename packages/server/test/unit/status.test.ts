import { describe, expect, it } from 'vitest';
import { checkHealth, graceEnd, licenceStatus } from '../../src/listings/status.js';

const DAY = 86_400_000;
const exp = Date.parse('2026-06-01T00:00:00Z');

describe('licence status', () => {
  const at = (iso: string) => Date.parse(iso);
  const term = { revoked: false, startsAt: at('2026-01-01T00:00:00Z'), expiresAt: exp, graceDays: 3 };

  it.each([
    ['2025-12-31T23:59:59.999Z', 'PENDING'],
    ['2026-01-01T00:00:00.000Z', 'ACTIVE'],
    ['2026-05-31T23:59:59.999Z', 'ACTIVE'],
    ['2026-06-01T00:00:00.000Z', 'GRACE'],
    ['2026-06-03T23:59:59.999Z', 'GRACE'],
    ['2026-06-04T00:00:00.000Z', 'EXPIRED'],
  ])('at %s is %s', (now, status) => {
    expect(licenceStatus(term, at(now))).toBe(status);
  });

  it('is REVOKED whatever the calendar says', () => {
    expect(licenceStatus({ ...term, revoked: true }, at('2026-03-01T00:00:00Z'))).toBe('REVOKED');
    expect(licenceStatus({ ...term, revoked: true }, at('2025-03-01T00:00:00Z'))).toBe('REVOKED');
  });

  it('goes straight from ACTIVE to EXPIRED without grace, and never expires when perpetual', () => {
    expect(licenceStatus({ ...term, graceDays: 0 }, exp)).toBe('EXPIRED');
    expect(licenceStatus({ ...term, expiresAt: null }, at('2099-01-01T00:00:00Z'))).toBe('ACTIVE');
    expect(graceEnd(null, 5)).toBeNull();
    expect(graceEnd(exp, 2)).toBe(exp + 2 * DAY);
  });
});

describe('check health', () => {
  const now = Date.parse('2026-06-01T12:00:00Z');
  const online = { licenceType: 'ONLINE' as const, checkEverySeconds: 3600, checkMaxSeconds: 7200 };
  it.each([
    [{ ...online, licenceType: 'OFFLINE' as const, lastCheckedAt: now }, 'NOT_APPLICABLE'],
    [{ ...online, lastCheckedAt: null }, 'NEVER'],
    [{ ...online, lastCheckedAt: now - 3600_000 }, 'OK'],
    [{ ...online, lastCheckedAt: now - 3601_000 }, 'DUE'],
    [{ ...online, lastCheckedAt: now - 7200_000 }, 'DUE'],
    [{ ...online, lastCheckedAt: now - 7201_000 }, 'OVERDUE'],
  ])('%j is %s', (licence, health) => {
    expect(checkHealth(licence, now)).toBe(health);
  });
});
