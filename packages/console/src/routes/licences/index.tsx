import { Button, CloseButton, Group, MultiSelect, Select, SimpleGrid, Stack, Tabs, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { useCustomer } from '../../api/customers';
import { useLicencePage, useLicenceWindows, type Filter } from '../../api/licences';
import { useProduct } from '../../api/products';
import { useCanWrite } from '../../api/session';
import { Empty, ErrorText, Guarded, Loading } from '../../components/feedback';
import { IssueLicence } from '../../components/issue-licence';
import { LicenceTable, type Sort } from '../../components/licence-table';
import { Pager } from '../../components/record-table';
import { BulkActions } from './bulk-actions';
import { ExportCsv } from './export-csv';

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
/** The Trials select: every licence, trials only, or paid licences only (query `trial`). */
const TRIALS = [
  { value: '', label: 'All' },
  { value: 'true', label: 'Trials only' },
  { value: 'false', label: 'Without trials' },
];
type Trials = '' | 'true' | 'false';
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
    productId: Number(params.get('productId')) || null,
    customerId: Number(params.get('customerId')) || null,
    trial: (['true', 'false'].includes(params.get('trial') ?? '') ? params.get('trial') : '') as Trials,
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
    if (next.productId) out.set('productId', String(next.productId));
    if (next.customerId) out.set('customerId', String(next.customerId));
    if (next.trial) out.set('trial', next.trial);
    setParams(out, { replace: true });
  };
  return { filters, update };
}

export default function Licences() {
  const { filters, update } = useFilters();
  const [search, setSearch] = useState(filters.q);
  const pushSearch = useDebouncedCallback((q: string) => update({ q }), 250);
  const [searchParams] = useSearchParams();
  const [issuing, setIssuing] = useState(searchParams.get('issue') === '1');
  const write = useCanWrite();

  const filter: Filter = {
    ...(filters.q ? { q: filters.q } : {}),
    ...(filters.status.length ? { status: filters.status } : {}),
    window: filters.window,
    ...(filters.productId ? { productId: filters.productId } : {}),
    ...(filters.customerId ? { customerId: filters.customerId } : {}),
    ...(filters.trial ? { trial: filters.trial === 'true' } : {}),
    sort: filters.sort,
    asc: filters.asc,
  };
  const query = { ...filter, limit: PAGE, offset: filters.offset };
  const page = useLicencePage(query);
  const windows = useLicenceWindows();
  const scope = useScopeNames(filters.productId, filters.customerId);

  // A selection belongs to one filter: changing the filter clears it.
  const filterKey = JSON.stringify(filter);
  const [selection, setSelection] = useState<{ filter: string; lids: Set<string>; all: boolean }>({ filter: filterKey, lids: new Set(), all: false });
  const selected = selection.filter === filterKey ? selection : { filter: filterKey, lids: new Set<string>(), all: false };
  const toggle = (lids: string[], on: boolean) => {
    const next = new Set(selected.lids);
    for (const lid of lids) {
      if (on) next.add(lid);
      else next.delete(lid);
    }
    setSelection({ filter: filterKey, lids: next, all: false });
  };
  const clearSelection = () => setSelection({ filter: filterKey, lids: new Set(), all: false });
  const pageLids = page.data?.items.map((l) => l.lid) ?? [];
  const wholePageTicked = pageLids.length > 0 && pageLids.every((lid) => selected.lids.has(lid));

  const sortBy = (column: Sort) => update({ sort: column, asc: filters.sort === column ? !filters.asc : column === 'licensee' || column === 'product' });

  return (
    <Stack gap="md">
      <Group justify="space-between" wrap="wrap">
        <Title order={1}>Licences</Title>
        <Group gap="xs">
          <ExportCsv filter={filter} total={page.data?.total} />
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

      <SimpleGrid cols={{ base: 1, sm: 3 }}>
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
        <Select label="Trials" data={TRIALS} value={filters.trial} onChange={(trial) => update({ trial: (trial ?? '') as Trials })} allowDeselect={false} />
      </SimpleGrid>
      {scope.map(([label, clear]) => (
        <Group key={label} gap={4}>
          <Text size="sm">{label}</Text>
          <CloseButton size="sm" aria-label={`Show every licence, not only: ${label}`} onClick={() => update(clear)} />
        </Group>
      ))}
      <BulkActions
        selected={selected.lids}
        allMatching={selected.all}
        total={page.data?.total ?? 0}
        filter={filter}
        disabled={!write.allowed}
        reason={write.reason}
        onDone={clearSelection}
      />
      {(selected.lids.size > 0 || selected.all) && page.data && (
        <Group gap="xs">
          {wholePageTicked && !selected.all && page.data.total > pageLids.length && (
            <Button size="compact-sm" variant="subtle" onClick={() => setSelection({ ...selected, all: true })}>
              Select all {page.data.total.toLocaleString()} matching licences
            </Button>
          )}
          <Button size="compact-sm" variant="subtle" color="gray" onClick={clearSelection}>
            Clear selection
          </Button>
        </Group>
      )}
      <ErrorText error={page.error} />
      {!page.data ? (
        !page.error && <Loading label="Loading licences" />
      ) : page.data.items.length === 0 ? (
        <Empty>No licence matches.</Empty>
      ) : (
        <>
          <LicenceTable
            items={page.data.items}
            stale={page.isPlaceholderData}
            sort={{ column: filters.sort, asc: filters.asc, by: sortBy }}
            selection={{ selected: selected.all ? new Set(pageLids) : selected.lids, toggle }}
          />
          <Pager
            offset={filters.offset}
            size={PAGE}
            shown={page.data.items.length}
            total={page.data.total}
            onOffset={(offset) => update({ ...filters, offset })}
          />
        </>
      )}
      <IssueLicence opened={issuing} onClose={() => setIssuing(false)} />
    </Stack>
  );
}

/** The product or customer a list is narrowed to (from their pages), by name, with the way back to all. */
function useScopeNames(productId: number | null, customerId: number | null): Array<[string, { productId?: null; customerId?: null }]> {
  const product = useProduct(productId);
  const customer = useCustomer(customerId);
  const out: Array<[string, { productId?: null; customerId?: null }]> = [];
  if (productId) out.push([`Product: ${product.data?.name ?? productId}`, { productId: null }]);
  if (customerId) out.push([`Customer: ${customer.data?.name ?? customerId}`, { customerId: null }]);
  return out;
}
