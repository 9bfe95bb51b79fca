import { Alert, Button, Group, List, Modal, Paper, Progress, Stack, Text, TextInput } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { key } from '../api/queries';
import { ErrorText } from './feedback';

/** The licence list's filter, as `/licenses/page` and `/licenses/export.csv` take it. */
export type Filter = Record<string, unknown>;
type Action = 'revoke' | 'archive' | 'export';
interface Failure {
  lid: string;
  message: string;
}
const WORDS: Record<Action, { verb: string; done: string; consequence: string }> = {
  revoke: { verb: 'Revoke', done: 'revoked', consequence: 'Online checks answer REVOKED at once; offline copies keep working until they expire.' },
  archive: { verb: 'Archive', done: 'archived', consequence: 'Only REVOKED or EXPIRED licences can be archived; any other is listed as refused.' },
  export: { verb: 'Export', done: 'exported', consequence: 'Their rows of the CSV export are downloaded.' },
};

/** Every lid the filter matches, page by page through the keyset cursor (the service pages, never the browser). */
async function lidsMatching(filter: Filter): Promise<string[]> {
  const lids: string[] = [];
  let cursor: string | undefined;
  do {
    const query = { ...filter, limit: 500, ...(cursor ? { cursor } : {}) };
    const page = await unwrap(api().GET('/licenses/page', { params: { query: query as never } }));
    lids.push(...page.items.map((l) => l.lid));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return lids;
}

/** The export of the filter, cut down to the chosen rows (its first column is the lid). */
async function exportRows(filter: Filter, lids: ReadonlySet<string> | null) {
  const csv = await unwrap(api().GET('/licenses/export.csv', { params: { query: filter as never }, parseAs: 'text' }));
  const [header, ...rows] = (csv as string).split('\r\n').filter(Boolean);
  const kept = lids ? rows.filter((row) => lids.has(row.slice(0, row.indexOf(',')))) : rows;
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([[header, ...kept].join('\r\n') + '\r\n'], { type: 'text/csv' }));
  link.download = 'licences-selected.csv';
  link.click();
  URL.revokeObjectURL(link.href);
  return kept.length;
}

/**
 * Revoke, archive or export several licences through the single-licence endpoints (what a script
 * would do): the chosen rows, or every licence of the filter with its count confirmed first.
 * Stays mounted without a selection, so the outcome of the last run stays in view.
 */
export function BulkActions(props: { selected: ReadonlySet<string>; allMatching: boolean; total: number; filter: Filter; disabled: boolean; reason: string; onDone: () => void }) {
  const queryClient = useQueryClient();
  const [action, setAction] = useState<Action | null>(null);
  const [reason, setReason] = useState('');
  const [progress, setProgress] = useState<{ done: number; of: number } | null>(null);
  const [result, setResult] = useState<{ action: Action; succeeded: number; failures: Failure[] } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const count = props.allMatching ? props.total : props.selected.size;

  const run = async () => {
    if (!action) return;
    setError(null);
    setProgress({ done: 0, of: count });
    try {
      if (action === 'export') {
        const exported = await exportRows(props.filter, props.allMatching ? null : props.selected);
        setResult({ action, succeeded: exported, failures: [] });
      } else {
        const lids = props.allMatching ? await lidsMatching(props.filter) : [...props.selected];
        setProgress({ done: 0, of: lids.length });
        const failures: Failure[] = [];
        let done = 0;
        const queue = [...lids];
        // A few at a time: quick for hundreds, gentle on the service for thousands.
        const worker = async () => {
          for (let lid = queue.shift(); lid !== undefined; lid = queue.shift()) {
            try {
              if (action === 'revoke') await unwrap(api().POST('/licenses/{lid}/revoke', { params: { path: { lid } }, body: { reason: reason.trim() || null } }));
              else await unwrap(api().POST('/licenses/{lid}/archive', { params: { path: { lid } }, body: {} }));
            } catch (e) {
              failures.push({ lid, message: e instanceof Error ? e.message : String(e) });
            }
            setProgress({ done: ++done, of: lids.length });
          }
        };
        await Promise.all([worker(), worker(), worker(), worker()]);
        setResult({ action, succeeded: lids.length - failures.length, failures });
        await Promise.all([queryClient.invalidateQueries({ queryKey: key('licences') }), queryClient.invalidateQueries({ queryKey: key('dashboard') })]);
        props.onDone();
      }
      setAction(null);
    } catch (e) {
      setError(e);
    } finally {
      setProgress(null);
    }
  };

  const words = action ? WORDS[action] : null;
  return (
    <>
      {count > 0 && (
        <Paper withBorder p="xs" radius="md" role="region" aria-label="Bulk actions">
          <Group justify="space-between" wrap="wrap" gap="xs">
            <Text size="sm" fw={500}>
              {props.allMatching ? `All ${count.toLocaleString()} matching licences selected` : `${count.toLocaleString()} selected`}
            </Text>
            <Group gap="xs">
              {(['revoke', 'archive'] as const).map((a) => (
                <Button key={a} size="xs" variant="light" color={a === 'revoke' ? 'red' : undefined} disabled={props.disabled} title={props.disabled ? props.reason : undefined} onClick={() => setAction(a)}>
                  {WORDS[a].verb} selected
                </Button>
              ))}
              <Button size="xs" variant="default" onClick={() => setAction('export')}>
                Export selected
              </Button>
            </Group>
          </Group>
          {props.disabled && (
            <Text size="xs" c="dimmed" mt={4}>
              {props.reason}
            </Text>
          )}
        </Paper>
      )}
      {result && (
        <Alert
          color={result.failures.length ? 'orange' : 'green'}
          variant="light"
          withCloseButton
          closeButtonLabel="Dismiss"
          onClose={() => setResult(null)}
          title={`${result.succeeded.toLocaleString()} ${result.succeeded === 1 ? 'licence' : 'licences'} ${WORDS[result.action].done}${result.failures.length ? `; ${result.failures.length} refused` : ''}`}
          role="status"
        >
          {result.failures.length > 0 && (
            <List size="sm" spacing={2}>
              {result.failures.map((f) => (
                <List.Item key={f.lid}>
                  <Text span ff="monospace" size="xs">
                    {f.lid}
                  </Text>
                  : {f.message}
                </List.Item>
              ))}
            </List>
          )}
        </Alert>
      )}
      <Modal closeButtonProps={{ 'aria-label': 'Close' }} opened={action !== null} onClose={() => progress === null && setAction(null)} title={words ? `${words.verb} ${count.toLocaleString()} ${count === 1 ? 'licence' : 'licences'}` : ''} centered>
        {words && (
          <Stack>
            <Text size="sm">
              {props.allMatching ? `Every licence of the current filter: ${count.toLocaleString()} now. ` : ''}
              {words.consequence}
            </Text>
            {action === 'revoke' && <TextInput label="Reason" description="Shown to each application with its check" maxLength={500} value={reason} onChange={(e) => setReason(e.currentTarget.value)} />}
            {progress && <Progress value={progress.of ? (progress.done / progress.of) * 100 : 0} aria-label={`${progress.done} of ${progress.of} done`} animated />}
            {progress && (
              <Text size="xs" c="dimmed">
                {progress.done.toLocaleString()} of {progress.of.toLocaleString()} done
              </Text>
            )}
            <ErrorText error={error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={() => setAction(null)} disabled={progress !== null}>
                Cancel
              </Button>
              <Button color={action === 'revoke' ? 'red' : undefined} loading={progress !== null} onClick={run}>
                {words.verb} {count.toLocaleString()}
              </Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </>
  );
}
