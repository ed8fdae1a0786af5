// ESLint rule: no cycle between folders. import-x/no-cycle follows files, so folder A can import
// folder B while B imports A through other files, and each file still looks fine. This rule
// treats every folder (the files directly in it) as one node, builds the graph of relative
// imports over the given roots once per lint run, and reports an import whose target folder
// leads back to the importing file's folder.
import fs from 'node:fs';
import path from 'node:path';

const IMPORT =
  /(?:^|[\s;])(?:import|export)\b[^'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;
const COMMENT = /\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm;

function sourceFiles(dir, out) {
  if (!fs.existsSync(dir)) return out;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) sourceFiles(p, out);
    else if (/\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** folder -> Set of folders its files import (relative imports only, inside the roots). */
function folderGraph(roots) {
  const graph = new Map();
  for (const root of roots) {
    for (const file of sourceFiles(root, [])) {
      const from = path.dirname(file);
      const text = fs.readFileSync(file, 'utf8').replace(COMMENT, '');
      for (const m of text.matchAll(IMPORT)) {
        const to = path.dirname(path.resolve(from, m[1] ?? m[2]));
        if (to === from || !roots.some((r) => to === r || to.startsWith(r + path.sep))) continue;
        if (!graph.has(from)) graph.set(from, new Set());
        graph.get(from).add(to);
      }
    }
  }
  return graph;
}

/** A path of folders from `start` to `goal`, or undefined. Breadth first: the shortest. */
function findPath(graph, start, goal) {
  const previous = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    if (node === goal) {
      const trail = [];
      for (let n = node; n !== undefined; n = previous.get(n)) trail.unshift(n);
      return trail;
    }
    for (const next of graph.get(node) ?? []) {
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return undefined;
}

const graphs = new Map();

export default {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid imports that close a cycle between folders' },
    schema: [
      {
        type: 'object',
        properties: {
          roots: { type: 'array', items: { type: 'string' } },
          basePath: { type: 'string' },
        },
        additionalProperties: false,
      },
    ],
    messages: { cycle: 'This import closes a cycle between folders: {{trail}}.' },
  },
  create(context) {
    const options = context.options[0] ?? {};
    const base = options.basePath ?? context.cwd;
    const roots = (options.roots ?? ['.']).map((r) => path.resolve(base, r));
    const key = roots.join('\0');
    if (!graphs.has(key)) graphs.set(key, folderGraph(roots));
    const graph = graphs.get(key);
    const here = path.dirname(context.filename);
    const label = (dir) => path.relative(base, dir) || '.';

    function check(node) {
      const spec = node.source?.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const there = path.dirname(path.resolve(here, spec));
      if (there === here) return;
      const back = findPath(graph, there, here);
      if (back !== undefined) {
        const trail = [here, ...back].map(label).join(' → ');
        context.report({ node: node.source, messageId: 'cycle', data: { trail } });
      }
    }
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};
