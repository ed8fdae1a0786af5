// Where the CLI's output goes. Commands write through this, never console.*: standard output
// carries what a script reads (tables, JSON), standard error what a person reads (errors,
// warnings, progress).

export interface CliIo {
  /** Writes each line, newline-terminated, to standard output. */
  out(...lines: string[]): void;
  /** Writes each line, newline-terminated, to standard error. */
  err(...lines: string[]): void;
  /** Writes text as is to standard error (a progress line redraws itself with `\r`). */
  errRaw(text: string): void;
  /** Whether standard error is a terminal (progress is drawn only then). */
  readonly stderrIsTTY: boolean;
  /** The terminal's width, 80 when unknown. */
  readonly stderrColumns: number;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** All of standard input, for a file option given as `-`; absent where there is none. */
  readonly readStdin?: () => Promise<Buffer>;
}

export const processIo: CliIo = {
  out: (...lines) => void process.stdout.write(lines.map((l) => `${l}\n`).join('')),
  err: (...lines) => void process.stderr.write(lines.map((l) => `${l}\n`).join('')),
  errRaw: (text) => void process.stderr.write(text),
  get stderrIsTTY() {
    return process.stderr.isTTY === true;
  },
  get stderrColumns() {
    const columns = process.stderr.columns ?? 0;
    return columns > 0 ? columns : 80;
  },
  env: process.env,
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  },
};

/** JSON for scripts: one document on one line. */
export function printJson(io: CliIo, value: unknown): void {
  io.out(JSON.stringify(value));
}
