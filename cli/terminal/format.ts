// Shared text formatting for the CLI: aligned tables and key: value lists, sizes, durations,
// times. Everything printed from outside (messages, names) goes through oneLine first, so a
// newline or a terminal escape in a value cannot break a table or the terminal.

/** Shown for a value that is not there. */
export const NONE = '-';

/** Control characters (newlines, escapes) folded to single spaces. */
export function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
}

function cell(value: string | number | undefined): string {
  if (value === undefined || value === '') return NONE;
  return oneLine(String(value));
}

/**
 * Columns padded to their widest cell, two spaces apart; the last column is not padded (it
 * holds free text such as a message). A table without rows is its header alone.
 */
export function table(
  header: readonly string[],
  rows: readonly (readonly (string | number | undefined)[])[],
): string[] {
  const cells = [header.map(cell), ...rows.map((row) => header.map((_, i) => cell(row[i])))];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells.map((row) =>
    row
      .map((text, i) => (i === row.length - 1 ? text : text.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

/**
 * One table line with fixed column widths, for output printed a line at a time (results
 * --follow) that must line up with a header printed before the rows were known.
 */
export function fixedRow(
  cells: readonly (string | number | undefined)[],
  widths: readonly number[],
): string {
  return cells
    .map((value, i) => (i < widths.length ? cell(value).padEnd(widths[i] ?? 0) : cell(value)))
    .join('  ')
    .trimEnd();
}

/** `key:  value` lines with the values aligned. */
export function keyValues(
  pairs: readonly (readonly [string, string | number | undefined])[],
): string[] {
  const width = Math.max(0, ...pairs.map(([key]) => key.length + 1));
  return pairs.map(([key, value]) => `${`${key}:`.padEnd(width)}  ${cell(value)}`);
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** `512 B`, `1.5 GiB`. */
export function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined || !Number.isFinite(bytes)) return NONE;
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${value.toFixed(digits)} ${BYTE_UNITS[unit]}`;
}

const DURATION_STEPS: readonly (readonly [number, string])[] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1_000, 's'],
];

/** Milliseconds as the largest whole unit: `10m`, `90s`, `1d`, `250ms`. */
export function formatDuration(ms: number): string {
  for (const [size, unit] of DURATION_STEPS) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** Milliseconds since the epoch (or an ISO string) as ISO 8601 UTC; `-` when unknown. */
export function formatTime(time: number | string | undefined): string {
  if (time === undefined) return NONE;
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? cell(String(time)) : date.toISOString();
}
