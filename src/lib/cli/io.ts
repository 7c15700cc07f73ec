/** The streams a command talks through; injected so tests capture them and TTY can be switched. */
export interface Io {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly stdin: NodeJS.ReadableStream;
  /** stdout is a terminal and CI is not set: the live ink view is used */
  readonly interactive: boolean;
}

/** The process's own streams. Non-interactive under CI or when stdout is not a terminal. */
export function processIo(env: Readonly<Record<string, string | undefined>> = process.env): Io {
  // A reader that went away (`fcctl … | head`) ends nothing but the output: the run goes on and
  // keeps its exit code, later writes are dropped — never an unhandled 'error' with a stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    interactive: Boolean(process.stdout.isTTY) && !env['CI'],
  };
}
