import { Badge, Text } from '@mantine/core';
import type { Integration } from '../api/integrations';
import { DateTime } from './display';

export type Provider = 'stripe' | 'paddle';
export const PROVIDERS: Record<Provider, string> = { stripe: 'Stripe', paddle: 'Paddle' };
export const providerName = (provider: string) => PROVIDERS[provider as Provider] ?? provider;

/** Why a provider's delivery was last refused (`lastFailure`, DESIGN.md 22), in words. */
export const REFUSALS: Record<string, string> = { SIGNATURE: 'Signature refused', TIMESTAMP: 'Stale timestamp' };
export const refusalWords = (code: string) => REFUSALS[code] ?? code.charAt(0) + code.slice(1).toLowerCase();

/** What applying an event did, in words and colour. */
export const OUTCOMES = {
  ISSUED: ['Issued', 'green'],
  RENEWED: ['Renewed', 'teal'],
  REVOKED: ['Revoked', 'red'],
  REINSTATED: ['Reinstated', 'indigo'],
  UNCHANGED: ['Unchanged', 'gray'],
  IGNORED: ['Ignored', 'gray'],
  WAITING: ['Waiting', 'yellow'],
  FAILED: ['Failed', 'red'],
} as const satisfies Record<string, readonly [string, string]>;

export function OutcomeBadge({ outcome }: { outcome: string }) {
  const [words, colour] = OUTCOMES[outcome as keyof typeof OUTCOMES] ?? [outcome, 'gray'];
  return (
    <Badge color={colour} variant="dot" tt="none" style={{ minWidth: 'max-content' }}>
      {words}
    </Badge>
  );
}

/** An enabled or disabled connection. */
export function EnabledBadge({ enabled }: { enabled: boolean }) {
  return (
    <Badge color={enabled ? 'green' : 'gray'} variant="dot" tt="none" style={{ minWidth: 'max-content' }}>
      {enabled ? 'Enabled' : 'Disabled'}
    </Badge>
  );
}

/** What waits for the vendor: events not applied (failed, or a Paddle customer not seen yet). */
export function Attention({ integration: i }: { integration: Integration }) {
  if (i.failedEvents === 0 && i.waitingEvents === 0) return <Text size="sm">None</Text>;
  return (
    <Text size="sm">
      {i.failedEvents > 0 && (
        <Text span inherit c="red" fw={500}>
          {i.failedEvents.toLocaleString()} failed
        </Text>
      )}
      {i.failedEvents > 0 && i.waitingEvents > 0 && ' · '}
      {i.waitingEvents > 0 && (
        <Text span inherit fw={500}>
          {i.waitingEvents.toLocaleString()} waiting
        </Text>
      )}
    </Text>
  );
}

/** The last delivery the hook refused, and when: a wrong secret or a clock far off. */
export function LastRefusal({ integration: i }: { integration: Integration }) {
  if (!i.lastFailure)
    return (
      <Text span c="dimmed" inherit>
        —
      </Text>
    );
  return (
    <>
      <Text size="sm">{refusalWords(i.lastFailure)}</Text>
      <Text size="xs" c="dimmed">
        <DateTime value={i.lastFailureAt} />
      </Text>
    </>
  );
}
