import { Table } from '@mantine/core';
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
