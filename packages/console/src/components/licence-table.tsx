import { Anchor, Group, Text } from '@mantine/core';
import { Link, useParams } from 'react-router';
import type { LicenceRow } from '../api/licences';
import { DateTime, HealthBadge, StatusBadge, TrialBadge } from './display';
import { RecordTable, type Column, type Selection, type Sorting } from './record-table';

export type Sort = 'issuedAt' | 'expiresAt' | 'licensee' | 'status' | 'product' | 'lastCheckedAt';

const SORTS: Partial<Record<string, Sort>> = {
  Licensee: 'licensee',
  Product: 'product',
  Status: 'status',
  Issued: 'issuedAt',
  Expires: 'expiresAt',
  'Last check': 'lastCheckedAt',
};

function columns(slug: string): Array<Column<LicenceRow>> {
  return [
    [
      'Licensee',
      (licence) => (
        <>
          <Anchor component={Link} to={`/o/${slug}/licences/${licence.lid}`} fw={500}>
            {licence.licensee}
          </Anchor>
          {licence.licenseeEmail && (
            <Text size="xs" c="dimmed">
              {licence.licenseeEmail}
            </Text>
          )}
        </>
      ),
    ],
    ['Product', (licence) => licence.productName],
    [
      'Status',
      (licence) => (
        <Group gap={4} wrap="nowrap">
          <StatusBadge status={licence.status} />
          {licence.trial && <TrialBadge />}
          {licence.archived && (
            <Text size="xs" c="dimmed">
              archived
            </Text>
          )}
        </Group>
      ),
    ],
    [
      'Expires',
      (licence) =>
        licence.expiresAt ? (
          <DateTime value={licence.expiresAt} withTime={false} />
        ) : (
          <Text span c="dimmed" inherit>
            perpetual
          </Text>
        ),
    ],
    ['Seats', (licence) => `${licence.seatsUsed} / ${licence.maxMachines}`],
    ['Type', (licence) => licence.licenceType],
    ['Issued', (licence) => <DateTime value={licence.issuedAt} withTime={false} />],
    ['Last check', (licence) => <HealthBadge health={licence.checkHealth} />],
  ];
}

/** A page of licences; sortable headers when `sort` is given, a tick per row when `selection` is. */
export function LicenceTable(props: { items: LicenceRow[]; sort?: Omit<Sorting<Sort>, 'columns'>; selection?: Selection; stale?: boolean }) {
  const { slug = '' } = useParams();
  return (
    <RecordTable
      label="Licences"
      rows={props.items}
      rowKey={(licence) => licence.lid}
      empty="No licence."
      minWidth={900}
      columns={columns(slug)}
      card={{ badge: 'Status' }}
      stale={props.stale}
      sort={props.sort && { ...props.sort, columns: SORTS }}
      selection={
        props.selection && { ...props.selection, name: (licence) => `Select ${licence.licensee} (${licence.lid})`, all: 'Select every licence on this page' }
      }
    />
  );
}
