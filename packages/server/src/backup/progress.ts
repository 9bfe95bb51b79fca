/** What a long backup or restore shows on a terminal: the table, its rows, the percent done and the time left. */
export interface Progress {
  table(name: string): void;
  /** `rows` more rows of the current table; `done` of `total` units of the whole work (rows or bytes). */
  advance(rows: number, done: number, total: number): void;
  end(): void;
}

const SILENT: Progress = { table() {}, advance() {}, end() {} };
const EVERY_MS = 250;

const duration = (seconds: number) =>
  seconds >= 3600
    ? `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`
    : seconds >= 60
      ? `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`
      : `${Math.round(seconds)} s`;

type Output = Pick<NodeJS.WriteStream, 'isTTY' | 'write'>;

/** A line redrawn on standard error when both outputs are terminals; nothing otherwise (scripts, logs, pipes). */
export function terminalProgress(stream: Output = process.stderr, answer: Output = process.stdout, clock: () => number = Date.now): Progress {
  if (!stream.isTTY || !answer.isTTY) return SILENT;
  const started = clock();
  let table = '';
  let rows = 0;
  let shown = 0;
  let width = 0;
  const draw = (text: string) => {
    stream.write(`\r${text.padEnd(width)}`);
    width = text.length;
  };
  return {
    table(name) {
      table = name;
      rows = 0;
    },
    advance(more, done, total) {
      rows += more;
      const now = clock();
      if (now - shown < EVERY_MS) return;
      shown = now;
      const share = total > 0 ? Math.min(1, done / total) : 0;
      const left = share > 0 ? ((now - started) / 1000) * (1 / share - 1) : NaN;
      draw(`${table}: ${rows.toLocaleString('en')} rows, ${(share * 100).toFixed(1)}%${Number.isFinite(left) ? `, about ${duration(left)} left` : ''}`);
    },
    end() {
      if (width > 0) stream.write(`\r${''.padEnd(width)}\r`);
    },
  };
}
