// SIGINT, SIGTERM and SIGHUP (the terminal closed) for commands that run until stopped (a
// wait, results --follow, board). While a handler is installed Node's default (exit at once)
// is off, so the command can close its connections and say where things stand.

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** Calls `handler` on each SIGINT, SIGTERM or SIGHUP until the returned function removes it. */
export function onStopSignal(handler: (signal: StopSignal) => void): () => void {
  const listeners = STOP_SIGNALS.map((signal) => {
    const listener = (): void => handler(signal);
    process.on(signal, listener);
    return [signal, listener] as const;
  });
  return () => {
    for (const [signal, listener] of listeners) process.off(signal, listener);
  };
}
