import { Button, Progress, Stack } from '@mantine/core';
import { useState } from 'react';
import { useAction } from '../../api/action';
import { exportCsv, type Filter } from '../../api/licences';
import { ErrorText } from '../../components/feedback';

/** Saves rows as a file the browser downloads. */
export function saveCsv(parts: BlobPart[], name: string) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob(parts, { type: 'text/csv' }));
  link.download = name;
  link.click();
  URL.revokeObjectURL(link.href);
}

/** Downloads the current filter as CSV, showing progress; a refusal above 25,000 rows is the API's message. */
export function ExportCsv({ filter, total }: { filter: Filter; total: number | undefined }) {
  const [progress, setProgress] = useState(0);
  const run = useAction(async () => {
    setProgress(0);
    const { stream, name } = await exportCsv(filter);
    const reader = stream.getReader();
    const chunks: Uint8Array[] = [];
    let rows = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      rows += value.reduce((count, byte) => count + (byte === 10 ? 1 : 0), 0);
      if (total) setProgress(Math.min(100, (rows / (total + 1)) * 100));
    }
    saveCsv(chunks as BlobPart[], name);
  });
  return (
    <Stack gap={4}>
      <Button variant="default" onClick={() => void run.run()} loading={run.busy}>
        Export CSV
      </Button>
      {run.busy && <Progress value={progress} size="xs" aria-label="Export progress" />}
      <ErrorText error={run.error} title="Not exported" />
    </Stack>
  );
}
