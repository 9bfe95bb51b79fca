import { Anchor, Button, Group, MultiSelect, Pagination, Progress, SimpleGrid, Stack, Table, Tabs, Text, TextInput, Title, UnstyledButton } from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { api, ApiError, unwrap } from '../api/client';
import { key, useCanWrite } from '../api/queries';
import { Empty, ErrorText, Guarded, Loading } from '../components/feedback';
import { DateTime, HealthBadge, StatusBadge } from '../components/display';
import { IssueLicence } from '../components/issue-licence';

const PAGE = 50;
const WINDOWS = [
  ['all', 'All'],
  ['7d', '7 days'],
  ['30d', '30 days'],
  ['90d', '90 days'],
  ['grace', 'In grace'],
  ['expired', 'Expired'],
  ['perpetual', 'Perpetual'],
  ['archived', 'Archived'],
] as const;
type Window = (typeof WINDOWS)[number][0];
const STATUSES = ['PENDING', 'ACTIVE', 'GRACE', 'EXPIRED', 'REVOKED'];
type Sort = 'issuedAt' | 'expiresAt' | 'licensee' | 'status' | 'product' | 'lastCheckedAt';
const COLUMNS: Array<[Sort | null, string]> = [
  ['licensee', 'Licensee'],
  ['product', 'Product'],
  ['status', 'Status'],
  [null, 'Type'],
  ['issuedAt', 'Issued'],
  ['expiresAt', 'Expires'],
  ['lastCheckedAt', 'Last check'],
];

/** Every filter lives in the URL, so a filtered list can be bookmarked and shared (DESIGN.md 7). */
function useFilters() {
  const [params, setParams] = useSearchParams();
  const filters = {
    q: params.get('q') ?? '',
    status: (params.get('status') ?? '').split(',').filter(Boolean),
    window: (params.get('window') ?? 'all') as Window,
    sort: (params.get('sort') ?? 'issuedAt') as Sort,
    asc: params.get('asc') === 'true',
    offset: Math.max(0, Number(params.get('offset') ?? 0) || 0),
  };
  const update = (change: Partial<typeof filters>) => {
    const next = { ...filters, offset: 0, ...change };
    const out = new URLSearchParams();
    if (next.q) out.set('q', next.q);
    if (next.status.length) out.set('status', next.status.join(','));
    if (next.window !== 'all') out.set('window', next.window);
    if (next.sort !== 'issuedAt') out.set('sort', next.sort);
    if (next.asc) out.set('asc', 'true');
    if (next.offset) out.set('offset', String(next.offset));
    setParams(out, { replace: true });
  };
  return { filters, update };
}

export default function Licences() {
  const { slug = '' } = useParams();
  const { filters, update } = useFilters();
  const [search, setSearch] = useState(filters.q);
  const pushSearch = useDebouncedCallback((q: string) => update({ q }), 250);
  const [searchParams] = useSearchParams();
  const [issuing, setIssuing] = useState(searchParams.get('issue') === '1');
  const write = useCanWrite();

  const query = {
    ...(filters.q ? { q: filters.q } : {}),
    ...(filters.status.length ? { status: filters.status } : {}),
    window: filters.window,
    sort: filters.sort,
    asc: filters.asc,
    limit: PAGE,
    offset: filters.offset,
  };
  const page = useQuery({
    queryKey: key('licences', 'page', query),
    queryFn: () => unwrap(api().GET('/licenses/page', { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const windows = useQuery({ queryKey: key('licences', 'windows'), queryFn: () => unwrap(api().GET('/licenses/windows')) });

  const sortBy = (column: Sort) => update({ sort: column, asc: filters.sort === column ? !filters.asc : column === 'licensee' || column === 'product' });

  return (
    <Stack gap="md">
      <Group justify="space-between" wrap="wrap">
        <Title order={1}>Licences</Title>
        <Group gap="xs">
          <ExportCsv query={query} total={page.data?.total} />
          <Guarded allowed={write.allowed} reason={write.reason}>
            {(disabled) => (
              <Button onClick={() => setIssuing(true)} disabled={disabled}>
                Issue licence
              </Button>
            )}
          </Guarded>
        </Group>
      </Group>

      <Tabs value={filters.window} onChange={(value) => update({ window: (value ?? 'all') as Window })} keepMounted={false}>
        <Tabs.List style={{ flexWrap: 'wrap' }}>
          {WINDOWS.map(([value, label]) => (
            <Tabs.Tab key={value} value={value}>
              {label}
              {windows.data && (
                <Text span c="dimmed" size="xs" ml={6}>
                  {windows.data[value].toLocaleString()}
                </Text>
              )}
            </Tabs.Tab>
          ))}
        </Tabs.List>
      </Tabs>

      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        <TextInput
          label="Search"
          placeholder="Licensee, email, lid, product or notes"
          value={search}
          onChange={(e) => {
            setSearch(e.currentTarget.value);
            pushSearch(e.currentTarget.value.trim());
          }}
        />
        <MultiSelect label="Status" placeholder="Any status" data={STATUSES} value={filters.status} onChange={(status) => update({ status })} clearable />
      </SimpleGrid>

      <ErrorText error={page.error} />
      {!page.data ? (
        !page.error && <Loading label="Loading licences" />
      ) : page.data.items.length === 0 ? (
        <Empty>No licence matches.</Empty>
      ) : (
        <>
          <Table.ScrollContainer minWidth={860}>
            <Table highlightOnHover striped aria-label="Licences" style={{ opacity: page.isPlaceholderData ? 0.6 : 1 }}>
              <Table.Thead>
                <Table.Tr>
                  {COLUMNS.map(([column, label]) => (
                    <Table.Th key={label} aria-sort={column && filters.sort === column ? (filters.asc ? 'ascending' : 'descending') : undefined}>
                      {column ? (
                        <UnstyledButton onClick={() => sortBy(column)} fw={600} fz="sm">
                          {label} {filters.sort === column ? (filters.asc ? '▲' : '▼') : ''}
                        </UnstyledButton>
                      ) : (
                        label
                      )}
                    </Table.Th>
                  ))}
                  <Table.Th>Seats</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {page.data.items.map((licence) => (
                  <Table.Tr key={licence.lid}>
                    <Table.Td>
                      <Anchor component={Link} to={`/o/${slug}/licences/${licence.lid}`} fw={500}>
                        {licence.licensee}
                      </Anchor>
                      {licence.licenseeEmail && (
                        <Text size="xs" c="dimmed">
                          {licence.licenseeEmail}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td>{licence.productName}</Table.Td>
                    <Table.Td>
                      <Group gap={4} wrap="nowrap">
                        <StatusBadge status={licence.status} />
                        {licence.archived && <Text size="xs" c="dimmed">archived</Text>}
                      </Group>
                    </Table.Td>
                    <Table.Td>{licence.licenceType}</Table.Td>
                    <Table.Td>
                      <DateTime value={licence.issuedAt} withTime={false} />
                    </Table.Td>
                    <Table.Td>{licence.expiresAt ? <DateTime value={licence.expiresAt} withTime={false} /> : <Text span c="dimmed">perpetual</Text>}</Table.Td>
                    <Table.Td>
                      <HealthBadge health={licence.checkHealth} />
                    </Table.Td>
                    <Table.Td>
                      {licence.seatsUsed} / {licence.maxMachines}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          <Group justify="space-between" wrap="wrap">
            <Text size="sm" c="dimmed">
              {(filters.offset + 1).toLocaleString()}–{(filters.offset + page.data.items.length).toLocaleString()} of {page.data.total.toLocaleString()}
            </Text>
            <Pagination
              total={Math.ceil(page.data.total / PAGE)}
              value={Math.floor(filters.offset / PAGE) + 1}
              onChange={(n) => update({ ...filters, offset: (n - 1) * PAGE })}
              getControlProps={(control) => ({ 'aria-label': `${control} page` })}
              size="sm"
            />
          </Group>
        </>
      )}
      <IssueLicence opened={issuing} onClose={() => setIssuing(false)} />
    </Stack>
  );
}

/** Downloads the current filter as CSV, showing progress; a refusal above 25,000 rows is the API's message. */
function ExportCsv({ query, total }: { query: Record<string, unknown>; total: number | undefined }) {
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const run = async () => {
    setError(null);
    setProgress(0);
    try {
      const { limit: _limit, offset: _offset, ...filter } = query;
      const { response } = await api().GET('/licenses/export.csv', { params: { query: filter }, parseAs: 'stream' });
      if (!response.ok) throw new ApiError(response.status, ((await response.json()) as { error: string }).error);
      const reader = response.body!.getReader();
      const chunks: Uint8Array[] = [];
      let rows = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        rows += value.reduce((count, byte) => count + (byte === 10 ? 1 : 0), 0);
        if (total) setProgress(Math.min(100, (rows / (total + 1)) * 100));
      }
      const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'licences.csv';
      const link = document.createElement('a');
      link.href = URL.createObjectURL(new Blob(chunks as BlobPart[], { type: 'text/csv' }));
      link.download = name;
      link.click();
      URL.revokeObjectURL(link.href);
    } catch (e) {
      setError(e);
    } finally {
      setProgress(null);
    }
  };
  return (
    <Stack gap={4}>
      <Button variant="default" onClick={run} loading={progress !== null}>
        Export CSV
      </Button>
      {progress !== null && <Progress value={progress} size="xs" aria-label="Export progress" />}
      <ErrorText error={error} />
    </Stack>
  );
}
