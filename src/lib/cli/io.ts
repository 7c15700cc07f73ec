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
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    interactive: Boolean(process.stdout.isTTY) && !env['CI'],
  };
}
