// The options `kvm2 results` and `kvm2 events` share (actions/stream-view.ts reads them): follow,
// start after a stream id, how many of the newest entries before following.
import { DEFAULT_RESULTS_COUNT } from '../options/defaults.js';

/** `what`: the entries in the command's words (`entries`, `events`). */
export function streamViewOptions(what: string) {
  return {
    follow: { type: 'boolean', description: `keep printing new ${what} until Ctrl-C` },
    from: { type: 'string', value: 'ID', description: 'start after this stream id (0: the start)' },
    count: {
      type: 'string',
      value: 'N',
      description: `at most N ${what} before following (default ${DEFAULT_RESULTS_COUNT})`,
    },
  } as const;
}
