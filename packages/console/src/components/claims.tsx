import { Code, Stack, Switch, Table, Tooltip } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { DateTime, days, duration } from './display';
import { PER_PERIOD, type MeterPeriod } from './usage-meters';

const ISSUER_CLAIMS = new Set(['v', 'lid', 'prd', 'org', 'typ', 'act', 'lic', 'iat', 'nbf', 'exp', 'grace', 'fp', 'fpn', 'mm', 'chk', 'max']);
// Issuer claims of floating licences (v 5) only: elsewhere they may be parameters.
const FLOATING_CLAIMS = new Set([...ISSUER_CLAIMS, 'lse', 'brw']);

/** A licence's signed claims: the issuer's (DESIGN.md 2), then the product's parameters apart. */
export function splitClaims(claims: Record<string, unknown>) {
  const issuer: Record<string, unknown> = {};
  const params: Record<string, unknown> = {};
  const names = claims.v === 5 ? FLOATING_CLAIMS : ISSUER_CLAIMS;
  // `trl` is the trial mark only as the boolean true (DESIGN.md 18), `mtr` the meters only as their list (DESIGN.md 19); an old product's parameter may keep either name.
  for (const [name, value] of Object.entries(claims))
    (names.has(name) || (name === 'trl' && value === true) || (name === 'mtr' && meterClaims(value)) ? issuer : params)[name] = value;
  return { ...issuer, params };
}

interface MeterClaim {
  k: string;
  p: string;
  l: number | null;
  o: number | null;
}
export const meterClaims = (value: unknown): value is MeterClaim[] =>
  Array.isArray(value) && value.every((m) => typeof m === 'object' && m !== null && typeof (m as MeterClaim).k === 'string');

/** The signed meters in words: "renders: 100 a month, 20 more past it; exports: no limit". */
export const metersText = (value: unknown) =>
  (value as MeterClaim[])
    .map((m) => {
      if (m.l === null) return `${m.k}: no limit`;
      const past = m.o === null ? ', no ceiling' : m.o > 0 ? `, ${m.o.toLocaleString()} more past it` : '';
      return `${m.k}: ${m.l.toLocaleString()} ${PER_PERIOD[m.p as MeterPeriod] ?? m.p}${past}`;
    })
    .join('; ');

const at = (seconds: unknown) => (typeof seconds === 'number' ? new Date(seconds * 1000).toISOString() : null);

/** An issuer claim's name and its value in words (DESIGN.md 2); times in the organisation's zone. */
const ISSUER_WORDS: Record<string, [string, (value: unknown) => ReactNode]> = {
  v: ['Format version', String],
  lid: ['Licence id', String],
  prd: ['Product key', String],
  org: ['Organisation', String],
  typ: ['Type', String],
  act: ['Activation', (v) => String(v).toLowerCase()],
  lic: ['Licensee', String],
  iat: ['Issued', (v) => <DateTime value={at(v)} />],
  nbf: ['Starts', (v) => <DateTime value={at(v)} />],
  exp: ['Expires', (v) => <DateTime value={at(v)} />],
  grace: ['Grace', (v) => days(Number(v))],
  fp: ['Machines named', (v) => (Array.isArray(v) ? `${v.length} fingerprints` : '1 fingerprint')],
  fpn: ['Fingerprint match', (v) => `${String(v)} of 5 components`],
  mm: ['Max machines', String],
  chk: ['Checks in every', (v) => duration(Number(v))],
  max: ['Works offline for', (v) => duration(Number(v))],
  lse: ['Lease length', (v) => duration(Number(v))],
  brw: ['Longest borrow', (v) => duration(Number(v))],
  trl: ['Trial', () => 'yes: started by the application'],
  mtr: ['Meters', metersText],
};

/** A parameter's signed value in words: yes/no, a list joined, anything else as it is. */
export function paramText(value: unknown): string {
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value)) return value.length ? value.join(', ') : 'none';
  return typeof value === 'string' || typeof value === 'number' ? String(value) : JSON.stringify(value);
}

/**
 * A licence's signed claims in words, each by its name (a parameter by its label), with the raw
 * claim on hover (a date's hover is its exact instant) and a switch that shows them all raw, as the
 * string carries them.
 */
export function ClaimsTable({ claims, labels }: { claims: Record<string, unknown>; labels: Record<string, string> }) {
  const [raw, setRaw] = useState(false);
  const { params, ...issuer } = splitClaims(claims);
  const rows: Array<[string, string, ReactNode]> = [
    ...Object.entries(issuer).map(([name, value]): [string, string, ReactNode] => {
      const [label, words] = ISSUER_WORDS[name] ?? [name, paramText];
      return [name, label, words(value)];
    }),
    ...Object.entries(params).map(([name, value]): [string, string, ReactNode] => [name, labels[name] ?? name, paramText(value)]),
  ];
  return (
    <Stack gap="xs">
      <Switch size="xs" label="Show the raw claims" checked={raw} onChange={(e) => setRaw(e.currentTarget.checked)} />
      <Table withRowBorders={false} verticalSpacing={4} aria-label="Claims">
        <Table.Tbody>
          {rows.map(([name, label, words]) => (
            <Table.Tr key={name}>
              <Table.Td w={150}>{raw ? <Code>{name}</Code> : label}</Table.Td>
              <Table.Td style={{ wordBreak: 'break-all' }}>
                {raw ? (
                  <Code>{JSON.stringify(claims[name])}</Code>
                ) : typeof words === 'string' ? (
                  <Tooltip label={`${name}: ${JSON.stringify(claims[name])}`} withArrow>
                    {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a tooltip must be reachable by keyboard */}
                    <span tabIndex={0}>{words}</span>
                  </Tooltip>
                ) : (
                  // A date has its own hover: the exact instant.
                  words
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
