import { describe, it, expect } from 'vitest';
import { calendarStatus, graceEndsAt } from '../src/index.js';

const DAY = 86_400;
const nbf = 1_700_000_000;
const exp = 1_800_000_000;

describe('graceEndsAt', () => {
  it('adds exact days in seconds', () => {
    expect(graceEndsAt(exp, 0)).toBe(exp);
    expect(graceEndsAt(exp, 14)).toBe(exp + 14 * DAY);
  });
  it('is null for a perpetual licence', () => {
    expect(graceEndsAt(undefined, 14)).toBeNull();
    expect(graceEndsAt(null, 0)).toBeNull();
  });
});

describe('calendarStatus', () => {
  it.each([
    [nbf - 1, 'PENDING'],
    [nbf, 'ACTIVE'],
    [exp - 1, 'ACTIVE'],
    [exp, 'GRACE'],
    [exp + 3 * DAY - 1, 'GRACE'],
    [exp + 3 * DAY, 'EXPIRED'],
  ])('at %i is %s', (now, status) => {
    expect(calendarStatus({ nbf, exp, grace: 3 }, now)).toBe(status);
  });

  it('never passes through GRACE with zero grace days', () => {
    expect(calendarStatus({ exp, grace: 0 }, exp - 1)).toBe('ACTIVE');
    expect(calendarStatus({ exp, grace: 0 }, exp)).toBe('EXPIRED');
  });

  it('is ACTIVE without nbf until exp', () => {
    expect(calendarStatus({ exp, grace: 0 }, 0)).toBe('ACTIVE');
  });

  it('never expires a perpetual licence', () => {
    expect(calendarStatus({ grace: 30 }, 4_000_000_000)).toBe('ACTIVE');
    expect(calendarStatus({ nbf, exp: null, grace: 0 }, nbf - 1)).toBe('PENDING');
    expect(calendarStatus({ nbf, exp: null, grace: 0 }, Number.MAX_SAFE_INTEGER)).toBe('ACTIVE');
  });

  it('takes parsed claims directly', () => {
    const claims = { v: 3, lid: 'l', prd: 'p', org: 'o', iat: 0, exp, grace: 1, mm: 1 };
    expect(calendarStatus(claims, exp)).toBe('GRACE');
  });
});
