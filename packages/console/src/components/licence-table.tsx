import { Anchor, Checkbox, Group, Table, Text, UnstyledButton } from '@mantine/core';
import { Link, useParams } from 'react-router';
import type { Answer } from '../api/client';
import { DateTime, HealthBadge, StatusBadge } from './display';

export type LicenceRow = Answer<'/licenses/page', 'get'>['items'][number];
export type Sort = 'issuedAt' | 'expiresAt' | 'licensee' | 'status' | 'product' | 'lastCheckedAt';
const COLUMNS: Array<[Sort | null, string]> = [
  ['licensee', 'Licensee'],
  ['product', 'Product'],
  ['status', 'Status'],
  [null, 'Type'],
  ['issuedAt', 'Issued'],
  ['expiresAt', 'Expires'],
  ['lastCheckedAt', 'Last check'],
];

/** Rows ticked for a bulk action, by lid. */
export interface Selection {
  selected: ReadonlySet<string>;
  toggle: (lids: string[], on: boolean) => void;
}

/** A page of licences; sortable headers when `sort` is given, a tick per row when `selection` is. */
export function LicenceTable(props: {
  items: LicenceRow[];
  sort?: { column: Sort; asc: boolean; by: (column: Sort) => void };
  selection?: Selection;
  stale?: boolean;
}) {
  const { slug = '' } = useParams();
  const { items, sort, selection } = props;
  const lids = items.map((l) => l.lid);
  const ticked = selection ? lids.filter((lid) => selection.selected.has(lid)).length : 0;
  return (
    <Table.ScrollContainer minWidth={900}>
      <Table highlightOnHover striped aria-label="Licences" style={{ opacity: props.stale ? 0.6 : 1 }}>
        <Table.Thead>
          <Table.Tr>
            {selection && (
              <Table.Th w={36}>
                <Checkbox
                  aria-label="Select every licence on this page"
                  checked={ticked === lids.length && lids.length > 0}
                  indeterminate={ticked > 0 && ticked < lids.length}
                  onChange={(e) => selection.toggle(lids, e.currentTarget.checked)}
                />
              </Table.Th>
            )}
            {COLUMNS.map(([column, label]) => (
              <Table.Th key={label} aria-sort={column && sort?.column === column ? (sort.asc ? 'ascending' : 'descending') : undefined}>
                {column && sort ? (
                  <UnstyledButton onClick={() => sort.by(column)} fw={600} fz="sm">
                    {label} {sort.column === column ? (sort.asc ? '▲' : '▼') : ''}
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
          {items.map((licence) => (
            <Table.Tr key={licence.lid} bg={selection?.selected.has(licence.lid) ? 'var(--mantine-primary-color-light)' : undefined}>
              {selection && (
                <Table.Td>
                  <Checkbox aria-label={`Select ${licence.licensee} (${licence.lid})`} checked={selection.selected.has(licence.lid)} onChange={(e) => selection.toggle([licence.lid], e.currentTarget.checked)} />
                </Table.Td>
              )}
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
  );
}
