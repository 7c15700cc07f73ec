import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { UsageError } from '../cli/exit.js';
import type { Io } from '../cli/io.js';

/**
 * How an input argument is named in messages: `-` or no argument is standard input.
 * @example inputLabel(undefined) // 'standard input'
 */
export function inputLabel(path: string | undefined): string {
  return path === undefined || path === '-' ? 'standard input' : path;
}

/** A one-line reason for a file that cannot be read (no stack, no errno noise). */
function readProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EISDIR':
      return 'is a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return String((err as Error | undefined)?.message ?? err).split('\n')[0] ?? 'read error';
  }
}

/**
 * The whole of a file, or of standard input for `-` / no argument, as bytes (never decoded).
 * A missing or unreadable file, or an input over `maxBytes`, is a {@link UsageError} (exit 2).
 * @example const bytes = await readInput(options.file, ctx.io, MAX_INPUT_BYTES)
 */
export async function readInput(path: string | undefined, io: Io, maxBytes: number): Promise<Buffer> {
  const label = inputLabel(path);
  if (path !== undefined && path !== '-') {
    try {
      const info = await stat(path);
      if (info.isFile() && info.size > maxBytes)
        throw new UsageError(`${label}: ${info.size} bytes is over the ${maxBytes}-byte limit`);
      return await readFile(path);
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new UsageError(`cannot read ${label}: ${readProblem(err)}`, { cause: err });
    }
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of io.stdin) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : (chunk as Buffer);
      size += buf.length;
      if (size > maxBytes) throw new UsageError(`${label}: over the ${maxBytes}-byte limit`);
      chunks.push(buf);
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${label}: ${readProblem(err)}`, { cause: err });
  }
  return Buffer.concat(chunks, size);
}

/**
 * A file or standard input as a stream of byte chunks, for reading in constant memory. Errors
 * while reading (a missing file shows up at the first chunk) are {@link UsageError}s (exit 2);
 * the returned `close()` stops reading early (an interrupt): a pending read ends, the loop finishes.
 * @example for await (const chunk of openInput(file, io).chunks) splitter.push(chunk, onLine)
 */
export function openInput(
  path: string | undefined,
  io: Io,
  chunkBytes = 1024 * 1024,
): { chunks: AsyncIterable<Buffer>; close(): void } {
  const label = inputLabel(path);
  const stream = path === undefined || path === '-' ? io.stdin : createReadStream(path, { highWaterMark: chunkBytes });
  let closed = false;
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of stream) {
        if (closed) return;
        yield typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : (chunk as Buffer);
      }
    } catch (err) {
      if (closed) return;
      throw new UsageError(`cannot read ${label}: ${readProblem(err)}`, { cause: err });
    }
  }
  return {
    chunks: chunks(),
    close: () => {
      closed = true;
      // Ends a pending read at once (an interrupt must not wait for a quiet standard input).
      (stream as NodeJS.ReadableStream & { destroy(): void }).destroy();
    },
  };
}

/**
 * The text of a `--from` file (`-` for `stdin`): exit 2 naming the file when it cannot be read or
 * is not UTF-8 text.
 * @example const text = await readFromText('incident-42.csv', io.stdin)
 */
export async function readFromText(from: string, stdin: AsyncIterable<unknown>): Promise<string> {
  let bytes: Buffer;
  try {
    if (from === '-') {
      const chunks: Buffer[] = [];
      for await (const c of stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
      bytes = Buffer.concat(chunks);
    } else bytes = await readFile(from);
  } catch (err) {
    throw new UsageError(
      `--from ${from}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`--from ${from}: not UTF-8 text`);
  }
}
