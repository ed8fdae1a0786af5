#!/usr/bin/env node
// The `kvm2` binary (SPEC §1): worker, board, create, delete, gc, get, list, check, results,
// config check. docs/cli.md is the operator's reference.
import { processIo } from './terminal/io.js';
import { runCli } from './run.js';

// `kvm2 results | head`: a closed pipe ends the output, not with a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

process.exitCode = await runCli(process.argv.slice(2), processIo);
// Everything a command opened is closed by now; should a stray handle keep the event loop
// alive (a library's timer), it does not keep a finished command from exiting.
setTimeout(() => process.exit(), 2_000).unref();
