import { PassThrough, Readable } from 'node:stream';
import type { Io } from '../../src/lib/cli/io.js';

/** Captured streams for a command run in this process (GitHub CLI's `iostreams.Test()`). */
export interface TestIo {
  readonly io: Io;
  stdout(): string;
  stderr(): string;
}

/** `stdin`: its whole text, or a stream the test writes to as it goes. */
export function testIo(options: { tty?: boolean; stdin?: string | Readable; columns?: number } = {}): TestIo {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const tty = options.tty ?? false;
  const stdout = Object.assign(new PassThrough(), { isTTY: tty, columns: options.columns ?? 120 });
  const stderr = Object.assign(new PassThrough(), { isTTY: tty, columns: options.columns ?? 120 });
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  return {
    io: {
      stdout,
      stderr,
      stdin: options.stdin instanceof Readable ? options.stdin : Readable.from([options.stdin ?? '']),
      interactive: tty,
    },
    stdout: () => Buffer.concat(out).toString('utf8'),
    stderr: () => Buffer.concat(err).toString('utf8'),
  };
}
