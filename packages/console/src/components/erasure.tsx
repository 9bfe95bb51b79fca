import { List, Stack, Text } from '@mantine/core';

/** What every erasure keeps (DESIGN.md 22): what cannot or need not be edited. */
const ALWAYS_STAYS = [
  'ids, counts, statuses and times',
  'the signed licences and superseded terms: a signature cannot be edited, and the customer holds them',
  'machine fingerprints (shortened hashes) and the trial ledger (keyed hashes)',
  'webhook messages already queued (kept up to 30 days)',
];

/** An erasure's confirmation: what goes and what stays, a list each. */
export function Erasure({ erased, stays }: { erased: string[]; stays: string[] }) {
  return (
    <Stack gap={4}>
      <Text size="sm" fw={600}>
        Erased
      </Text>
      <List size="sm" spacing={2}>
        {erased.map((item) => (
          <List.Item key={item}>{item}</List.Item>
        ))}
      </List>
      <Text size="sm" fw={600} mt="xs">
        Stays
      </Text>
      <List size="sm" spacing={2}>
        {[...stays, ...ALWAYS_STAYS].map((item) => (
          <List.Item key={item}>{item}</List.Item>
        ))}
      </List>
    </Stack>
  );
}
