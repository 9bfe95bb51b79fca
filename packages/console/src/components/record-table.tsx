import { Group, Pagination, Table, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { Empty, ErrorText, Loading } from './feedback';

/**
 * Records as a table, with the states around them: the API's error, loading, a word when there
 * are none, then a header per column and a row per record (scrolling sideways on a phone).
 */
export function RecordTable<T>(props: {
  label: string;
  rows: T[] | undefined;
  error?: unknown;
  rowKey: (row: T) => string | number;
  columns: Array<[string, (row: T) => ReactNode]>;
  empty: string;
  minWidth?: number;
}) {
  if (props.error) return <ErrorText error={props.error} />;
  if (!props.rows) return <Loading />;
  if (props.rows.length === 0) return <Empty>{props.empty}</Empty>;
  return (
    <Table.ScrollContainer minWidth={props.minWidth ?? 640}>
      <Table highlightOnHover striped aria-label={props.label}>
        <Table.Thead>
          <Table.Tr>
            {props.columns.map(([title]) => (
              <Table.Th key={title}>{title}</Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {props.rows.map((row) => (
            <Table.Tr key={props.rowKey(row)}>
              {props.columns.map(([title, cell]) => (
                <Table.Td key={title}>{cell(row)}</Table.Td>
              ))}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** Where a paged list stands ("51–100 of 1,234") and the way to another page. */
export function Pager(props: { offset: number; size: number; shown: number; total: number; onOffset: (offset: number) => void }) {
  const { offset, size, shown, total } = props;
  if (total === 0) return null;
  return (
    <Group justify="space-between" wrap="wrap">
      <Text size="sm" c="dimmed">
        {(offset + 1).toLocaleString()}–{(offset + shown).toLocaleString()} of {total.toLocaleString()}
      </Text>
      {total > size && (
        <Pagination
          total={Math.ceil(total / size)}
          value={Math.floor(offset / size) + 1}
          onChange={(n) => props.onOffset((n - 1) * size)}
          getControlProps={(control) => ({ 'aria-label': `${control} page` })}
          size="sm"
        />
      )}
    </Group>
  );
}
