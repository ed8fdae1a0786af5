// YAML aliases in a configuration, bounded before the document is turned into values. A few
// lines of anchors that refer to each other nine deep expand to a billion nodes ("billion
// laughs"); the yaml package's own limit (maxAliasCount) trips only after it has expanded
// a good part of them, with a ReferenceError that names no path. A configuration has no need
// for more than a handful of aliases, so both the count of alias nodes and what they expand
// to are bounded, and the walk that measures them never expands anything.
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type Node } from 'yaml';
import { formatPath } from './config-path.js';

/** Alias nodes a configuration may hold (`<<: *defaults` once per host of a large fleet). */
export const MAX_ALIASES = 256;
/** Nodes the whole document may expand to, aliases resolved: far above any real fleet's file. */
export const MAX_EXPANDED_NODES = 100_000;

type Path = readonly (string | number)[];

function keyOf(key: unknown): string {
  if (!isScalar(key)) return '?';
  // A merge key (`<<`) is a symbol when merges are on.
  return typeof key.value === 'symbol' ? (key.value.description ?? '?') : String(key.value);
}

/**
 * A message naming where the document's aliases went beyond the bounds, or undefined. Sizes are
 * counted with each anchored node measured once, so the walk is linear in the text.
 */
export function aliasProblem(doc: Document): string | undefined {
  const sizes = new Map<Node, number>();
  let aliases = 0;
  let problem: string | undefined;

  const size = (node: unknown, path: Path, inside: ReadonlySet<unknown>): number => {
    if (problem !== undefined) return 0;
    if (isAlias(node)) {
      aliases += 1;
      if (aliases > MAX_ALIASES) {
        problem = `${formatPath(path)}: more than ${MAX_ALIASES} YAML aliases`;
        return 0;
      }
      const target = node.resolve(doc);
      // No anchor of that name before it: toJS would throw a ReferenceError quoting the name,
      // which is the value itself when an unquoted password starts with `*`.
      if (target === undefined) {
        problem = `${formatPath(path)}: a YAML alias names no anchor before it (a value that starts with * needs quotes)`;
        return 0;
      }
      // An alias inside its own anchor is a cycle: the parser reports it, nothing to count here.
      if (inside.has(target)) return 1;
      const known = sizes.get(target);
      if (known !== undefined) return known;
      const measured = size(target, path, inside);
      sizes.set(target, measured);
      return measured;
    }
    const within = new Set(inside).add(node);
    if (!isMap(node) && !isSeq(node)) return 1;
    let total = 1;
    node.items.forEach((item, index) => {
      const at = isPair(item) ? [...path, keyOf(item.key)] : [...path, index];
      const measured = isPair(item)
        ? size(item.key, at, within) + size(item.value, at, within)
        : size(item, at, within);
      // The first (so the deepest) value too large is where the expansion is to be found.
      if (measured > MAX_EXPANDED_NODES && problem === undefined) {
        problem = `${formatPath(at)}: YAML aliases expand to more than ${MAX_EXPANDED_NODES} nodes`;
      }
      total += measured;
    });
    return total;
  };

  const total = size(doc.contents, [], new Set());
  if (problem === undefined && total > MAX_EXPANDED_NODES) {
    problem = `kvm2: YAML aliases expand to more than ${MAX_EXPANDED_NODES} nodes`;
  }
  return problem;
}
