import { Badge, Button, Card, Code, Group, SimpleGrid, Stack, Text, Textarea, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { ErrorText } from '../components/feedback';
import { DateTime, StatusBadge } from '../components/display';

/** A pasted licence string judged as an application would, with the ledger beside it. */
export default function Verify() {
  const { slug = '' } = useParams();
  const [text, setText] = useState('');
  const verify = useMutation({ mutationFn: (license: string) => unwrap(api().POST('/licenses/verify', { body: { license } })) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    verify.mutate(text.trim());
  };
  const r = verify.data;
  return (
    <Stack gap="lg">
      <Title order={1}>Verify</Title>
      <form onSubmit={submit}>
        <Stack>
          <Textarea label="Licence string" description="Paste the whole string a customer sent" autosize minRows={4} maxRows={10} value={text} onChange={(e) => setText(e.currentTarget.value)} required styles={{ input: { fontFamily: 'monospace' } }} />
          <Group>
            <Button type="submit" loading={verify.isPending}>
              Verify
            </Button>
          </Group>
        </Stack>
      </form>
      <ErrorText error={verify.error} />
      {r && (
        <Card withBorder aria-label="Verdict">
          <Stack>
            <Group>
              <Badge size="lg" color={r.valid ? 'teal.9' : 'red.9'}>
                {r.valid ? 'Valid' : 'Not valid'}
              </Badge>
              {r.reason && <Code>{r.reason}</Code>}
            </Group>
            <SimpleGrid cols={{ base: 1, sm: 2, md: 4 }}>
              <div>
                <Text size="xs" c="dimmed" tt="uppercase" fw={600}>Product</Text>
                <Text>{r.product ? `${r.product.name} (${r.product.productKey})` : 'unknown'}</Text>
              </div>
              <div>
                <Text size="xs" c="dimmed" tt="uppercase" fw={600}>Signature</Text>
                <Text>
                  {r.signature}
                  {r.signatureAlgorithm ? ` · ${r.signatureAlgorithm}` : ''}
                </Text>
              </div>
              <div>
                <Text size="xs" c="dimmed" tt="uppercase" fw={600}>Expiry</Text>
                {r.expiry ? (
                  <Group gap={6}>
                    <StatusBadge status={r.expiry.status} />
                    {r.expiry.expiresAt ? <DateTime value={r.expiry.expiresAt} /> : <Text span>perpetual</Text>}
                  </Group>
                ) : (
                  <Text c="dimmed">—</Text>
                )}
              </div>
              <div>
                <Text size="xs" c="dimmed" tt="uppercase" fw={600}>Ledger</Text>
                {r.ledger.known ? (
                  <Stack gap={2}>
                    <Group gap={6}>
                      {r.ledger.status && <StatusBadge status={r.ledger.status} />}
                      {r.ledger.archived && <Badge color="gray">archived</Badge>}
                      {r.ledger.superseded && <Badge color="orange">superseded</Badge>}
                    </Group>
                    {r.ledger.superseded && (
                      <Text size="sm">
                        A renewal replaced this term; the current one expires {r.ledger.currentExpiresAt ? <DateTime value={r.ledger.currentExpiresAt} /> : 'never'}.
                      </Text>
                    )}
                    <Link to={`/o/${slug}/licences/${r.ledger.lid}`}>Open the licence</Link>
                  </Stack>
                ) : (
                  <Text c="dimmed">No record of this licence</Text>
                )}
              </div>
            </SimpleGrid>
          </Stack>
        </Card>
      )}
    </Stack>
  );
}
