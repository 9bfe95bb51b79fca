import { useMemo } from 'react';

/** "+01:00" for a zone now, as its people read their clocks. */
function offsetOf(timeZone: string, at: Date): string {
  const name = new Intl.DateTimeFormat('en', { timeZone, timeZoneName: 'longOffset' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  return name === 'GMT' ? '+00:00' : name.slice(3);
}

/** Every zone this browser knows, with its current offset, for a searchable list. */
export function useZones() {
  return useMemo(() => {
    const now = new Date();
    const names = new Set(['UTC', ...Intl.supportedValuesOf('timeZone')]);
    return [...names].map((zone) => ({ value: zone, label: `${zone} (UTC${offsetOf(zone, now)})` }));
  }, []);
}
