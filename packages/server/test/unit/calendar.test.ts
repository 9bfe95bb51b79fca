import { describe, expect, it } from 'vitest';
import { addMonths, isDate, localDate, startOfDate } from '../../src/core/calendar.js';

describe('calendar', () => {
  it.each([
    ['2026-01-31', 1, '2026-02-28'],
    ['2028-01-31', 1, '2028-02-29'],
    ['2026-03-31', 1, '2026-04-30'],
    ['2026-01-15', 12, '2027-01-15'],
    ['2026-11-30', 3, '2027-02-28'],
    ['2026-08-31', -6, '2026-02-28'],
    ['2026-05-10', 0, '2026-05-10'],
  ])('%s plus %i months is %s', (date, months, expected) => {
    expect(addMonths(date, months)).toBe(expected);
  });

  it('writes years below 1000 with four digits, and gives no date past the year 9999', () => {
    expect(addMonths('0999-11-30', 3)).toBe('1000-02-28');
    expect(addMonths('0399-12-31', 2)).toBe('0400-02-29');
    expect(addMonths('0050-01-31', 1)).toBe('0050-02-28');
    expect(localDate(startOfDate('0999-06-15', 'UTC'), 'UTC')).toBe('0999-06-15');
    expect(localDate(Date.UTC(2026, 0, 1), 'UTC')).toBe('2026-01-01');
    expect(addMonths('9999-01-31', 11)).toBe('9999-12-31');
    expect(addMonths('9999-12-01', 1)).toBeNull();
    expect(addMonths('2026-01-01', 1200 * 100)).toBeNull();
  });

  it.each(['2026-02-29', '2026-13-01', '2026-00-10', '2026-1-01', '26-01-01', '2026-01-01T00:00:00Z', ''])('refuses %j as a date', (text) => {
    expect(isDate(text)).toBe(false);
  });

  it('accepts real dates, leap days included', () => {
    expect(isDate('2028-02-29')).toBe(true);
    expect(isDate('2026-12-31')).toBe(true);
    expect(isDate('0050-02-28')).toBe(true);
    expect(isDate('0050-02-29')).toBe(false);
  });

  it('starts a date at local midnight in ordinary zones', () => {
    expect(new Date(startOfDate('2026-06-15', 'UTC')).toISOString()).toBe('2026-06-15T00:00:00.000Z');
    expect(new Date(startOfDate('2026-06-15', 'Europe/Berlin')).toISOString()).toBe('2026-06-14T22:00:00.000Z');
    expect(new Date(startOfDate('2026-01-15', 'Europe/Berlin')).toISOString()).toBe('2026-01-14T23:00:00.000Z');
    expect(new Date(startOfDate('2026-06-15', 'Pacific/Kiritimati')).toISOString()).toBe('2026-06-14T10:00:00.000Z');
    expect(new Date(startOfDate('2026-06-15', 'Asia/Kolkata')).toISOString()).toBe('2026-06-14T18:30:00.000Z');
  });

  it('starts a date on the day of a DST change at the right instant', () => {
    // Europe/Berlin springs forward at 02:00 on 29 March 2026: midnight exists, offset +01:00.
    expect(new Date(startOfDate('2026-03-29', 'Europe/Berlin')).toISOString()).toBe('2026-03-28T23:00:00.000Z');
    expect(new Date(startOfDate('2026-03-30', 'Europe/Berlin')).toISOString()).toBe('2026-03-29T22:00:00.000Z');
    // America/Havana springs forward at midnight: 8 March 2026 begins at 01:00 local (05:00 UTC).
    expect(new Date(startOfDate('2026-03-08', 'America/Havana')).toISOString()).toBe('2026-03-08T05:00:00.000Z');
    // America/Santiago falls back at midnight on 5 April 2026: 23:00 on the 4th is repeated, the 5th starts once.
    expect(localDate(startOfDate('2026-04-05', 'America/Santiago'), 'America/Santiago')).toBe('2026-04-05');
    expect(localDate(startOfDate('2026-04-05', 'America/Santiago') - 1, 'America/Santiago')).toBe('2026-04-04');
  });

  it('gives the local date of an instant', () => {
    expect(localDate(Date.parse('2026-11-22T23:30:00Z'), 'Europe/Berlin')).toBe('2026-11-23');
    expect(localDate(Date.parse('2026-11-22T23:30:00Z'), 'UTC')).toBe('2026-11-22');
    expect(localDate(Date.parse('2026-11-23T03:00:00Z'), 'America/New_York')).toBe('2026-11-22');
  });
});
