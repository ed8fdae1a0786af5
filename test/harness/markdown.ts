// Reads a table out of a docs/ page, for the tests that keep a page equal to its code table.
import { expect } from 'vitest';

/** The cells of the first markdown table after `heading`, header and separator left out. */
export function markdownTable(markdown: string, heading: string): string[][] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  expect(start, `${heading} in the document`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith('|')) {
      if (rows.length > 0) break;
      continue;
    }
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim().replace(/\\\|/g, '|')),
    );
  }
  return rows.slice(2);
}
