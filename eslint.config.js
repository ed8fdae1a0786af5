// Lint that catches what review misses: floating promises, imports against the layers (and
// cycles between files or folders), console output outside the CLI.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import globals from 'globals';
import noFolderCycle from './scripts/lint/no-folder-cycle.mjs';

// The layers, bottom first (docs/architecture.md). A folder imports only from the layers below
// it; test, bench and scripts sit outside and may import anything, nothing imports them.
const LAYERS = ['src/errors', 'src/libvirt', 'src/provider', 'queues', 'workers', 'board', 'cli'];
const layerZones = LAYERS.slice(0, -1).map((target, i) => ({
  target: `./${target}`,
  from: LAYERS.slice(i + 1).map((upper) => `./${upper}`),
  message: `${target} is below ${LAYERS.slice(i + 1).join(', ')}: imports go downward only.`,
}));
const zones = [
  ...layerZones,
  {
    target: './src/libvirt/transport',
    from: './src/libvirt',
    except: ['./transport'],
    message: 'The transports sit below the RPC client: they know nothing of it.',
  },
  {
    target: LAYERS.map((layer) => `./${layer}`),
    from: ['./test', './bench', './scripts'],
    message: 'Product code never imports tests, benches or scripts.',
  },
];
// Redis and the job queue exist from the queue layer up; the libvirt client and the provider
// take locks and results through interfaces.
const queueLibraries = ['bullmq', 'ioredis', '@bull-board/api', '@bull-board/express'].map(
  (name) => ({ name, message: `${name} is for queues/ and above, never src/.` }),
);

export default tseslint.config(
  // examples/client is an application of its own: client-package.test.ts type-checks it
  // against the packed package, where `kvm2/client` resolves.
  {
    ignores: [
      'dist/**',
      'dist-bench/**',
      'node_modules/**',
      'coverage/**',
      '.cache/**',
      'examples/client/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX, kvm2: { rules: { 'no-folder-cycle': noFolderCycle } } },
    // NodeNext imports name the emitted `.js`; the source is the `.ts` beside it. Without the
    // alias nothing resolves, and no-cycle has no graph to find a cycle in.
    settings: {
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones, basePath: import.meta.dirname }],
      'kvm2/no-folder-cycle': [
        'error',
        { roots: [...new Set(LAYERS.map((l) => l.split('/')[0]))], basePath: import.meta.dirname },
      ],
      'no-console': 'error',
    },
  },
  {
    files: ['src/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: queueLibraries,
          patterns: [
            {
              group: ['bullmq/*', 'ioredis/*', '@bull-board/*'],
              message: 'queues/ and above only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['cli/**', 'bench/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['eslint.config.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { ...globals.node },
    },
  },
);
