import { Alert, Button, Group, List, Paper, Progress, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { useAction } from '../../api/action';
import { archiveLicence, exportCsv, lidsMatching, revokeLicence, useBulk, type Filter } from '../../api/licences';
import { ModalForm } from '../../components/modal-form';
import { saveCsv } from './export-csv';

type Kind = 'revoke' | 'archive' | 'export';
const WORDS: Record<Kind, { verb: string; done: string; consequence: string }> = {
  revoke: { verb: 'Revoke', done: 'revoked', consequence: 'Online checks answer REVOKED at once; offline copies keep working until they expire.' },
  archive: { verb: 'Archive', done: 'archived', consequence: 'Only REVOKED or EXPIRED licences can be archived; any other is listed as refused.' },
  export: { verb: 'Export', done: 'exported', consequence: 'Their rows of the CSV export are downloaded.' },
};

/** The export of the filter, cut down to the chosen rows (its first column is the lid). */
async function exportRows(filter: Filter, lids: ReadonlySet<string> | null) {
  const csv = await new Response((await exportCsv(filter)).stream).text();
  const [header, ...rows] = csv.split('\r\n').filter(Boolean);
  const kept = lids ? rows.filter((row) => lids.has(row.slice(0, row.indexOf(',')))) : rows;
  saveCsv([`${[header, ...kept].join('\r\n')}\r\n`], 'licences-selected.csv');
  return kept.length;
}

/**
 * Revoke, archive or export several licences through the single-licence endpoints (what a script
 * would do): the chosen rows, or every licence of the filter with its count confirmed first.
 * Stays mounted without a selection, so the outcome of the last run stays in view.
 */
export function BulkActions(props: {
  selected: ReadonlySet<string>;
  allMatching: boolean;
  total: number;
  filter: Filter;
  disabled: boolean;
  reason: string;
  onDone: () => void;
}) {
  const [kind, setKind] = useState<Kind | null>(null);
  const [reason, setReason] = useState('');
  const [progress, setProgress] = useState<{ done: number; of: number } | null>(null);
  const [result, setResult] = useState<{ kind: Kind; succeeded: number; failures: Array<{ lid: string; message: string }> } | null>(null);
  const bulk = useBulk();
  const exporting = useAction(() => exportRows(props.filter, props.allMatching ? null : props.selected));
  const count = props.allMatching ? props.total : props.selected.size;

  const run = async () => {
    if (!kind) return null;
    if (kind === 'export') {
      const exported = await exporting.run();
      if (exported) setResult({ kind, succeeded: exported.value, failures: [] });
      return exported;
    }
    const one = kind === 'revoke' ? revokeLicence(reason.trim() || null) : archiveLicence;
    let done = 0;
    setProgress({ done, of: count });
    const outcome = await bulk.run({
      lids: async () => (props.allMatching ? lidsMatching(props.filter) : [...props.selected]),
      each: (lid, of) => one(lid).finally(() => setProgress({ done: ++done, of })),
    });
    setProgress(null);
    if (outcome) {
      setResult({ kind, succeeded: outcome.value.attempted - outcome.value.failures.length, failures: outcome.value.failures });
      props.onDone();
    }
    return outcome;
  };

  const words = kind ? WORDS[kind] : null;
  const action = kind === 'export' ? exporting : bulk;
  return (
    <>
      {count > 0 && (
        <Paper withBorder p="xs" radius="md" role="region" aria-label="Bulk actions">
          <Group justify="space-between" wrap="wrap" gap="xs">
            <Text size="sm" fw={500}>
              {props.allMatching ? `All ${count.toLocaleString()} matching licences selected` : `${count.toLocaleString()} selected`}
            </Text>
            <Group gap="xs">
              {(['revoke', 'archive'] as const).map((k) => (
                <Button
                  key={k}
                  size="xs"
                  variant="light"
                  color={k === 'revoke' ? 'red' : undefined}
                  disabled={props.disabled}
                  title={props.disabled ? props.reason : undefined}
                  onClick={() => setKind(k)}
                >
                  {WORDS[k].verb} selected
                </Button>
              ))}
              <Button size="xs" variant="default" onClick={() => setKind('export')}>
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
          title={`${result.succeeded.toLocaleString()} ${result.succeeded === 1 ? 'licence' : 'licences'} ${WORDS[result.kind].done}${result.failures.length ? `; ${result.failures.length} refused` : ''}`}
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
      {words && (
        <ModalForm
          title={`${words.verb} ${count.toLocaleString()} ${count === 1 ? 'licence' : 'licences'}`}
          submit={`${words.verb} ${count.toLocaleString()}`}
          size="md"
          onClose={() => progress === null && setKind(null)}
          action={action}
          onSubmit={run}
        >
          <Text size="sm">
            {props.allMatching ? `Every licence of the current filter: ${count.toLocaleString()} now. ` : ''}
            {words.consequence}
          </Text>
          {kind === 'revoke' && (
            <TextInput
              label="Reason"
              description="Shown to each application with its check"
              maxLength={500}
              value={reason}
              onChange={(e) => setReason(e.currentTarget.value)}
            />
          )}
          {progress && (
            <>
              <Progress value={progress.of ? (progress.done / progress.of) * 100 : 0} aria-label={`${progress.done} of ${progress.of} done`} animated />
              <Text size="xs" c="dimmed">
                {progress.done.toLocaleString()} of {progress.of.toLocaleString()} done
              </Text>
            </>
          )}
        </ModalForm>
      )}
    </>
  );
}
