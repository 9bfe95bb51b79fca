import { Button, Card, Checkbox, DataList, Group, Pagination, Select, Table, Text, UnstyledButton } from '@mantine/core';
import { useElementSize, useMediaQuery } from '@mantine/hooks';
import type { ReactNode } from 'react';
import { Empty, ErrorText, Loading } from './feedback';

/** A column: its header and what it shows for a record. */
export type Column<T> = [title: string, cell: (row: T) => ReactNode];

/** Rows ticked for a bulk action, by row key. */
export interface Selection {
  selected: ReadonlySet<string>;
  toggle: (keys: string[], on: boolean) => void;
}

/** Columns that sort in the service, by header; `by` the column clicked again flips the direction. */
export interface Sorting<S extends string> {
  columns: Partial<Record<string, S>>;
  column: S;
  asc: boolean;
  by: (column: S) => void;
}

interface Props<T, S extends string> {
  label: string;
  rows: T[] | undefined;
  error?: unknown;
  rowKey: (row: T) => string | number;
  columns: Array<Column<T>>;
  empty: string;
  /** The table's narrowest (640 px by default): in a narrower place the records show as cards. */
  minWidth?: number;
  /**
   * How a record reads as a card on a phone: the column that heads it (the first by default), the
   * one shown beside that heading (a state badge), and the one at its foot without a label
   * (actions). Every other column is a labelled line.
   */
  card?: { heading?: string; badge?: string; actions?: string };
  sort?: Sorting<S>;
  /** A tick per record for bulk actions; `name` says which record a tick is for. */
  selection?: Selection & { name: (row: T) => string; all: string };
  /** A newer page is on its way: the rows shown are the previous ones. */
  stale?: boolean;
}

/** Below 600 px a record is a card: a phone never scrolls a table sideways. */
const PHONE = '(max-width: 37.49em)';

/**
 * Records as a table, with the states around them: the API's error, loading, a word when there
 * are none, then a header per column and a row per record; a card per record wherever the table
 * would not fit (a phone, or a tablet with the navigation beside the page), so nothing scrolls
 * sideways. Until its width is measured, the screen's width decides.
 */
export function RecordTable<T, S extends string = string>(props: Props<T, S>) {
  const phone = useMediaQuery(PHONE, false, { getInitialValueInEffect: false });
  const { ref, width } = useElementSize();
  const cards = width > 0 ? width < (props.minWidth ?? 640) : phone;
  let shown: ReactNode;
  if (props.error) shown = <ErrorText error={props.error} />;
  else if (!props.rows) shown = <Loading />;
  else if (props.rows.length === 0) shown = <Empty>{props.empty}</Empty>;
  else shown = cards ? <Cards {...props} rows={props.rows} /> : <Rows {...props} rows={props.rows} />;
  return <div ref={ref}>{shown}</div>;
}

function SelectPage<T>({ rows, rowKey, selection, labelled }: Pick<Props<T, never>, 'rowKey' | 'selection'> & { rows: T[]; labelled?: boolean }) {
  if (!selection) return null;
  const keys = rows.map((row) => String(rowKey(row)));
  const ticked = keys.filter((k) => selection.selected.has(k)).length;
  return (
    <Checkbox
      {...(labelled ? { label: selection.all } : { 'aria-label': selection.all })}
      checked={ticked === keys.length}
      indeterminate={ticked > 0 && ticked < keys.length}
      onChange={(e) => selection.toggle(keys, e.currentTarget.checked)}
    />
  );
}

function Tick<T>({ row, rowKey, selection }: Pick<Props<T, never>, 'rowKey' | 'selection'> & { row: T }) {
  if (!selection) return null;
  const k = String(rowKey(row));
  return <Checkbox aria-label={selection.name(row)} checked={selection.selected.has(k)} onChange={(e) => selection.toggle([k], e.currentTarget.checked)} />;
}

const selectedBackground = 'var(--mantine-primary-color-light)';

function Rows<T, S extends string>(props: Props<T, S> & { rows: T[] }) {
  const { sort, selection } = props;
  return (
    <Table.ScrollContainer minWidth={props.minWidth ?? 640}>
      <Table highlightOnHover striped aria-label={props.label} style={{ opacity: props.stale ? 0.6 : 1 }}>
        <Table.Thead>
          <Table.Tr>
            {selection && (
              <Table.Th w={36}>
                <SelectPage {...props} />
              </Table.Th>
            )}
            {props.columns.map(([title]) => {
              const column = sort?.columns[title];
              return (
                <Table.Th key={title} aria-sort={column && sort.column === column ? (sort.asc ? 'ascending' : 'descending') : undefined}>
                  {column ? (
                    <UnstyledButton onClick={() => sort.by(column)} fw={600} fz="sm">
                      {title} {sort.column === column ? (sort.asc ? '▲' : '▼') : ''}
                    </UnstyledButton>
                  ) : (
                    title
                  )}
                </Table.Th>
              );
            })}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {props.rows.map((row) => (
            <Table.Tr key={props.rowKey(row)} bg={selection?.selected.has(String(props.rowKey(row))) ? selectedBackground : undefined}>
              {selection && (
                <Table.Td>
                  <Tick {...props} row={row} />
                </Table.Td>
              )}
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

function Cards<T, S extends string>(props: Props<T, S> & { rows: T[] }) {
  const { sort, selection, card = {} } = props;
  const heading = card.heading ?? props.columns[0]![0];
  const cellOf = (title: string | undefined) => props.columns.find(([t]) => t === title)?.[1];
  const [headingCell, badgeCell, actionsCell] = [cellOf(heading), cellOf(card.badge), cellOf(card.actions)];
  const lines = props.columns.filter(([title]) => title !== heading && title !== card.badge && title !== card.actions);
  const sortable = sort ? Object.entries(sort.columns).filter((entry): entry is [string, S] => entry[1] !== undefined) : [];
  return (
    <div style={{ opacity: props.stale ? 0.6 : 1 }}>
      {(selection || sort) && (
        <Group justify="space-between" align="flex-end" mb="sm" wrap="nowrap">
          {selection ? <SelectPage {...props} labelled /> : <span />}
          {sort && (
            <Group gap={4} wrap="nowrap" align="flex-end">
              <Select
                label="Sort by"
                size="xs"
                w={130}
                allowDeselect={false}
                data={sortable.map(([title, value]) => ({ value, label: title }))}
                value={sort.column}
                onChange={(value) => value && value !== sort.column && sort.by(value as S)}
              />
              <Button size="xs" variant="default" onClick={() => sort.by(sort.column)} aria-label={`Sorted ${sort.asc ? 'ascending' : 'descending'}; reverse`}>
                {sort.asc ? '▲' : '▼'}
              </Button>
            </Group>
          )}
        </Group>
      )}
      <ul
        aria-label={props.label}
        style={{
          listStyle: 'none',
          margin: 0,
          padding: 0,
          display: 'grid',
          gridTemplateColumns: 'repeat(auto-fill, minmax(min(100%, 340px), 1fr))',
          gap: 'var(--mantine-spacing-sm)',
        }}
      >
        {props.rows.map((row) => {
          const actions = actionsCell?.(row);
          return (
            <Card
              component="li"
              withBorder
              padding="sm"
              key={props.rowKey(row)}
              bg={selection?.selected.has(String(props.rowKey(row))) ? selectedBackground : undefined}
            >
              <Group justify="space-between" align="flex-start" wrap="nowrap" gap="sm">
                <Group gap="sm" align="flex-start" wrap="nowrap" miw={0}>
                  <Tick {...props} row={row} />
                  <div style={{ minWidth: 0, overflowWrap: 'anywhere' }}>{headingCell?.(row)}</div>
                </Group>
                {badgeCell && <div>{badgeCell(row)}</div>}
              </Group>
              {lines.length > 0 && (
                <DataList size="sm" gap={4} labelWidth={104} mt="xs">
                  {lines.map(([title, cell]) => (
                    <DataList.Item key={title}>
                      <DataList.ItemLabel>{title}</DataList.ItemLabel>
                      <DataList.ItemValue>{cell(row)}</DataList.ItemValue>
                    </DataList.Item>
                  ))}
                </DataList>
              )}
              {actions ? <Group mt="sm">{actions}</Group> : null}
            </Card>
          );
        })}
      </ul>
    </div>
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
