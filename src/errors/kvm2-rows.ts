// kvm2's own error codes, every one it throws or reports, each with its kind. Kvm2Error
// (src/errors/error.ts) takes its code from this list, so a code without a row does not compile.
// `derived`: the error's kind comes from rows it points to (its libvirt or dial row, its HTTP
// status) or from its cause; the thrower passes it.
// Part of the one classification table (src/errors/table.ts).

export const KVM2_ROWS = [
  // The libvirt client (src/libvirt).
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT',
    kind: 'derived',
    why: 'A remote_error from libvirtd: the kind of its libvirt row (code, and errno in int1).',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_DIAL',
    kind: 'derived',
    why: 'A failed dial: the kind of its dial row (stage and reason).',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_CALL_TIMEOUT',
    kind: 'transient',
    why: 'A libvirt call outlived its budget; its link was killed and the next call redials.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_STREAM_STALLED',
    kind: 'transient',
    why: 'An upload or download moved no bytes for its stall limit (a hung iohelper, a stuck pool); its link was killed and the next attempt redials.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_CALL_ABORTED',
    kind: 'transient',
    why: "The caller's signal fired (cancellation, shutdown); never a false state.",
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_INTERRUPTED',
    kind: 'transient',
    why: 'The link under the call died; the call may or may not have run, and every step is idempotent.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_PROTOCOL',
    kind: 'transient',
    why: 'The peer broke the wire protocol; a fresh link usually works.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_CLOSED',
    kind: 'transient',
    why: 'kvm2 closed the connection (shutdown) under the call.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_ARGUMENT',
    kind: 'permanent',
    why: 'Arguments do not fit the procedure (a string over its limit).',
  },
  {
    source: 'kvm2',
    match: 'ERR_XDR_DECODE',
    kind: 'transient',
    why: "A reply that does not fit its procedure's layout: a broken frame; a fresh link usually works.",
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_URI',
    kind: 'permanent',
    why: 'A libvirt URI kvm2 cannot use.',
  },
  {
    source: 'kvm2',
    match: 'ERR_UNKNOWN_HOST',
    kind: 'permanent',
    why: 'The job names a host that is not configured.',
  },
  // The provider (src/provider).
  { source: 'kvm2', match: 'ERR_CONFIG', kind: 'permanent', why: 'The configuration is invalid.' },
  {
    source: 'kvm2',
    match: 'ERR_INVALID_INSTANCE_ID',
    kind: 'permanent',
    why: 'An instance id that is not two DNS labels joined by a slash (host/name).',
  },
  {
    source: 'kvm2',
    match: 'ERR_INVALID_REQUEST',
    kind: 'permanent',
    why: 'A create request that does not validate (the message names the field).',
  },
  {
    source: 'kvm2',
    match: 'ERR_UNKNOWN_IMAGE',
    kind: 'permanent',
    why: 'The request names an image that is not configured.',
  },
  {
    source: 'kvm2',
    match: 'ERR_NO_HOST_IN_ZONE',
    kind: 'permanent',
    why: 'A request that names a zone reached the provider without a host: placement must pick one first.',
  },
  {
    source: 'kvm2',
    match: 'ERR_XML_INVALID_SPEC',
    kind: 'permanent',
    why: 'A domain or volume spec kvm2 cannot write as XML (the message names the field).',
  },
  {
    source: 'kvm2',
    match: 'ERR_XML_MALFORMED',
    kind: 'permanent',
    why: 'XML from libvirt that is not well-formed, or not the document expected.',
  },
  {
    source: 'kvm2',
    match: 'ERR_XML_METADATA_MALFORMED',
    kind: 'permanent',
    why: "A domain's kvm2 metadata is present but incomplete or wrong.",
  },
  {
    source: 'kvm2',
    match: 'ERR_SEED_FILE_NAME',
    kind: 'permanent',
    why: 'A seed file name outside 1..64 characters of [a-z0-9._-], a path, or a duplicate.',
  },
  {
    source: 'kvm2',
    match: 'ERR_SEED_TOO_LARGE',
    kind: 'permanent',
    why: "The seed's files together exceed its size cap.",
  },
  {
    source: 'kvm2',
    match: 'ERR_SEED_INVALID',
    kind: 'permanent',
    why: 'A seed label, timestamp, identity field or MIME part that cannot be written.',
  },
  {
    source: 'kvm2',
    match: 'ERR_SEED_BOUNDARY_IN_CONTENT',
    kind: 'permanent',
    why: 'A given MIME boundary occurs inside a part it would have to delimit.',
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_HTTP',
    kind: 'derived',
    why: 'Fetching the image failed: the kind of its HTTP status row, or of the failure under it (a reset is transient); a body cut short is transient.',
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_EMPTY',
    kind: 'permanent',
    why: 'The image server answered Content-Length: 0, or the image file is empty.',
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_FILE',
    kind: 'derived',
    why: "Reading a local image file failed: permanent when the file is missing, unreadable or not a regular file (the configuration's to fix), transient for an I/O error or a cancelled read.",
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_DIGEST_MISMATCH',
    kind: 'permanent',
    why: 'The downloaded image does not match its configured sha256.',
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_TOO_LARGE',
    kind: 'permanent',
    why: 'The image is larger than its configured maxSize (said by Content-Length, or counted as it streamed): the configuration or the server must change.',
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_CONTENT',
    kind: 'permanent',
    why: 'The downloaded bytes are not an image of the configured format, or a qcow2 names a backing file.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LOCK_BUSY',
    kind: 'transient',
    why: 'Another holder has the lock (an image fill, a sweep); the retry waits its turn.',
  },
  {
    source: 'kvm2',
    match: 'ERR_DOMAIN_DIED',
    kind: 'transient',
    why: "The domain stopped or paused right after start (libvirt's state and reason in the message).",
  },
  {
    source: 'kvm2',
    match: 'ERR_SERIAL_LOG',
    kind: 'permanent',
    why: "libvirt cannot open the serial log file in the host's serialLogDir (missing or unwritable): a setting to fix, not a fault to retry; the instance is removed.",
  },
  {
    source: 'kvm2',
    match: 'ERR_DOMAIN_NOT_RUNNING',
    kind: 'permanent',
    why: "The domain was paused or suspended before kvm2 started it: an administrator's doing.",
  },
  {
    source: 'kvm2',
    match: 'ERR_FOREIGN_DOMAIN',
    kind: 'permanent',
    why: 'A domain of that name has no kvm2 metadata: kvm2 never touches it.',
  },
  {
    source: 'kvm2',
    match: 'ERR_UID_CONFLICT',
    kind: 'permanent',
    why: 'The instance belongs to another create (another uid).',
  },
  {
    source: 'kvm2',
    match: 'ERR_FOREIGN_VOLUME',
    kind: 'permanent',
    why: 'The overlay volume exists but is not backed by the requested image: never overwritten.',
  },
  {
    source: 'kvm2',
    match: 'ERR_POOL_FULL',
    kind: 'quota_exceeded',
    why: 'The pool has less free space than the image and seed need.',
  },
  {
    source: 'kvm2',
    match: 'ERR_NOT_FOUND',
    kind: 'not_found',
    why: 'No kvm2 instance of that id on its host.',
  },
  {
    source: 'kvm2',
    match: 'ERR_HOST_OBJECT_MISSING',
    kind: 'permanent',
    why: "The host's configured pool or network does not exist: configuration to fix.",
  },
  {
    source: 'kvm2',
    match: 'ERR_HOST_OBJECT_VANISHED',
    kind: 'transient',
    why: 'An object on the host (a volume, say) disappeared while kvm2 used it; the retry looks again.',
  },
  {
    source: 'kvm2',
    match: 'ERR_PARTIAL_VIEW',
    kind: 'derived',
    why: "listByTag could not list a host, so it answers nothing: the kind of that host's failure.",
  },
  // The queue side (queues/).
  {
    source: 'kvm2',
    match: 'ERR_INVALID_JOB',
    kind: 'permanent',
    why: 'Job data that does not validate against the job registry (the message names the field).',
  },
  {
    source: 'kvm2',
    match: 'ERR_UID_REUSED',
    kind: 'permanent',
    why: 'A create uid already used for another instance or request.',
  },
  {
    source: 'kvm2',
    match: 'ERR_ZONE_UNRESOLVED',
    kind: 'permanent',
    why: 'No configured host is in the zone, or the client has no zone placement.',
  },
  {
    source: 'kvm2',
    match: 'ERR_ZONE_UNAVAILABLE',
    kind: 'transient',
    why: 'Hosts are configured in the zone but none has a fresh healthy report; the next health round may bring one back.',
  },
  {
    source: 'kvm2',
    match: 'ERR_REDIS_UNAVAILABLE',
    kind: 'transient',
    why: 'Redis could not be reached in time.',
  },
  {
    source: 'kvm2',
    match: 'ERR_CLIENT_CLOSED',
    kind: 'permanent',
    why: 'The client was closed before the call.',
  },
  {
    source: 'kvm2',
    match: 'ERR_WAIT_TIMEOUT',
    kind: 'transient',
    why: 'No final result arrived within the wait; the job may still finish.',
  },
  // The worker runtime (workers/).
  {
    source: 'kvm2',
    match: 'ERR_LOCK_LOST',
    kind: 'transient',
    why: "The instance's Redis lock could not be renewed: the work is abandoned and retried by whoever holds the lock next.",
  },
  {
    source: 'kvm2',
    match: 'ERR_KEY_BUSY',
    kind: 'transient',
    why: "An instance's lock is held by another job: the job is delayed, no attempt spent.",
  },
  {
    source: 'kvm2',
    match: 'ERR_JOB_STALLED',
    kind: 'transient',
    why: "A worker stopped renewing the job's lock (it died or hung); BullMQ hands the job to another worker.",
  },
  // The command (cli/).
  {
    source: 'kvm2',
    match: 'ERR_USAGE',
    kind: 'permanent',
    why: 'A mistake in a kvm2 command line (exit status 2).',
  },
  {
    source: 'kvm2',
    match: 'ERR_CLI_INPUT',
    kind: 'permanent',
    why: 'A kvm2 command could not use its input (an unreadable --user-data file, say).',
  },
  {
    source: 'kvm2',
    match: 'ERR_INTERRUPTED',
    kind: 'transient',
    why: 'A kvm2 command was stopped while it waited (Ctrl-C); the job itself carries on.',
  },
] as const;
