// The options of the commands that can wait for their job's final result (actions/wait.ts reads
// them): --wait, and --timeout to give up on it.
export const waitOptions = {
  wait: { type: 'boolean', description: 'wait for the final result and exit 0 only on success' },
  timeout: {
    type: 'string',
    value: 'DURATION',
    description: 'with --wait: give up after this long, status 124 (the job carries on)',
  },
} as const;
