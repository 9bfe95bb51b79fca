import { Table } from '@mantine/core';
import type { ReactNode } from 'react';
import { Empty } from './feedback';

/** A plain table of records: a header per column, a row per record, a word when there are none. */
export function SimpleTable<T>(props: { label: string; rows: T[]; rowKey: (row: T) => string | number; columns: Array<[string, (row: T) => ReactNode]>; empty: string; minWidth?: number }) {
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
