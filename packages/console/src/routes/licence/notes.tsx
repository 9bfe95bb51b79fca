import { Button, Card, Group, Stack, Text, Textarea, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useSaveNotes } from '../../api/licences';
import { ErrorText, Guarded } from '../../components/feedback';

/** A licence's notes, edited in place (never signed into the licence). */
export function Notes({ lid, notes, write }: { lid: string; notes: string | null; write: { allowed: boolean; reason: string } }) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(notes ?? '');
  const save = useSaveNotes(lid);
  useEffect(() => setText(notes ?? ''), [notes]);
  return (
    <Card withBorder>
      <Group justify="space-between" mb="xs">
        <Title order={2} size="h4">
          Notes
        </Title>
        {!editing && (
          <Guarded allowed={write.allowed} reason={write.reason}>
            {(disabled) => (
              <Button size="xs" variant="default" disabled={disabled} onClick={() => setEditing(true)}>
                Edit notes
              </Button>
            )}
          </Guarded>
        )}
      </Group>
      {editing ? (
        <Stack gap="xs">
          <Textarea
            label="Notes"
            description="Never signed into the licence"
            autosize
            minRows={3}
            maxLength={10_000}
            value={text}
            onChange={(e) => setText(e.currentTarget.value)}
          />
          <ErrorText error={save.error} title="Notes not saved" />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setEditing(false)}>
              Cancel
            </Button>
            <Button loading={save.busy} onClick={async () => (await save.run(text.trim() ? text : null)) && setEditing(false)}>
              Save notes
            </Button>
          </Group>
        </Stack>
      ) : (
        <Text size="sm" c={notes ? undefined : 'dimmed'} style={{ whiteSpace: 'pre-wrap' }}>
          {notes ?? 'No notes.'}
        </Text>
      )}
    </Card>
  );
}
