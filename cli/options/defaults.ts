// Defaults shared by a command's help text (commands/) and its implementation (actions/).

/** `kvm2 gc --grace`: instances and volumes younger than this are left alone. */
export const DEFAULT_GRACE_MS = 10 * 60_000;

/** `kvm2 results --count`: entries printed before following. */
export const DEFAULT_RESULTS_COUNT = 20;
