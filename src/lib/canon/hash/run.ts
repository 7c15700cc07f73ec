import { ExitCode } from '../../cli/exit.js';
import { openInput, readInput } from '../../files/input.js';
import type { Io } from '../../cli/io.js';
import { BufferedWriter, type LineEvent, LineSplitter } from '../../cli/lines.js';
import { canonicalize, CanonParseError, contentHash, MAX_INPUT_BYTES, type NumberMode } from '../index.js';
import { documentErrorLine, hashLinesExitCode, hashLinesNotice, LINE_TOO_LONG, lineErrorLine } from './decide.js';

export interface CanonHashOptions {
  /** a file, `-` or undefined for standard input */
  readonly file: string | undefined;
  /** print the canonical bytes instead of the hash */
  readonly canonical: boolean;
  /** JSON Lines: one output line per input line */
  readonly lines: boolean;
  readonly numberMode: NumberMode;
  readonly maxLineBytes: number;
}

export interface CanonHashDeps {
  readonly io: Io;
  readonly signal: AbortSignal;
}

/**
 * `fcctl canon hash [FILE|-]`: the fc.canon.v1 hash (or, with `--canonical`, the canonical bytes)
 * of one JSON document, or of each line of a JSON Lines input with `--lines`.
 */
export async function runCanonHash(options: CanonHashOptions, deps: CanonHashDeps): Promise<number> {
  return options.lines ? hashLines(options, deps) : hashDocument(options, deps.io);
}

/**
 * One document. Refused: exit 2 and exactly `error: CODE: message (line L, column C)` on stderr.
 * `--canonical` writes the exact canonical bytes; a newline is added only when stdout is a
 * terminal (so piped output can be compared or hashed byte for byte).
 */
async function hashDocument(options: CanonHashOptions, io: Io): Promise<number> {
  const bytes = await readInput(options.file, io, MAX_INPUT_BYTES);
  const r = canonicalize(bytes, { numberMode: options.numberMode });
  if (!r.ok) {
    io.stderr.write(documentErrorLine(r.error));
    return ExitCode.USAGE;
  }
  if (options.canonical) {
    io.stdout.write(r.canonical);
    if (io.stdout.isTTY) io.stdout.write('\n');
  } else {
    io.stdout.write(`${r.hash}\n`);
  }
  return ExitCode.OK;
}

/**
 * JSON Lines, streamed: the input is read as byte chunks and split on LF here (never decoded,
 * never held whole); each line gives exactly one output line, in order — the hash (or canonical
 * text), or `error<TAB>CODE<TAB>message (column C)`. Empty lines are `EMPTY_INPUT` error lines;
 * a line over `maxLineBytes` is a `LINE_TOO_LONG` error line and is skipped without being kept.
 * Output waits for the reader (backpressure). Exit 1 when any line failed.
 */
async function hashLines(options: CanonHashOptions, deps: CanonHashDeps): Promise<number> {
  const out = new BufferedWriter(deps.io.stdout);
  const tally = { lines: 0, failed: 0 };
  await pumpLines(options, deps, out, lineHasher(options, out, tally));
  const result = { ...tally, interrupted: deps.signal.aborted };
  await out.flush();
  const notice = hashLinesNotice(result);
  if (notice !== undefined) deps.io.stderr.write(notice);
  return hashLinesExitCode(result);
}

/** What each line becomes: its hash or canonical text, or its error line (counted in `tally`). */
function lineHasher(
  options: CanonHashOptions,
  out: BufferedWriter,
  tally: { lines: number; failed: number },
): (line: LineEvent) => void {
  const mode = { numberMode: options.numberMode };
  const fail = (code: string, message: string) => {
    tally.failed++;
    out.write(lineErrorLine(code, message));
  };
  return (line) => {
    tally.lines++;
    if (line.kind === 'overlong') {
      fail(
        LINE_TOO_LONG,
        `a line of ${line.bytes} bytes is over the ${options.maxLineBytes}-byte limit (--max-line-bytes)`,
      );
      return;
    }
    if (options.canonical) {
      const r = canonicalize(line.bytes, mode);
      if (r.ok) {
        out.write(r.canonical);
        out.write('\n');
      } else fail(r.error.code, `${r.error.message} (column ${r.error.column})`);
      return;
    }
    try {
      // contentHash skips the copy of the canonical bytes that canonicalize makes.
      out.write(`${contentHash(line.bytes, mode)}\n`);
    } catch (e) {
      if (!(e instanceof CanonParseError)) throw e;
      fail(e.code, `${e.error.message} (column ${e.column})`);
    }
  };
}

/** Reads the input chunk by chunk into the line splitter until it ends, the output closes or a signal stops it. */
async function pumpLines(
  options: CanonHashOptions,
  deps: CanonHashDeps,
  out: BufferedWriter,
  onLine: (line: LineEvent) => void,
): Promise<void> {
  const { signal } = deps;
  const splitter = new LineSplitter(options.maxLineBytes);
  const input = openInput(options.file, deps.io);
  // An interrupt closes the input, which ends a pending read at once (a quiet standard input
  // must not keep us waiting). Not Promise.race against a long-lived promise: that would keep
  // every chunk reachable until the end.
  const stop = () => input.close();
  signal.addEventListener('abort', stop, { once: true });
  try {
    if (!signal.aborted) {
      for await (const chunk of input.chunks) {
        splitter.push(chunk, onLine);
        // Flush after each chunk: output keeps pace with a slow producer (`tail -f | …`).
        await out.flush();
        if (out.closed || signal.aborted) break;
      }
    }
    if (!signal.aborted && !out.closed) splitter.end(onLine);
  } finally {
    signal.removeEventListener('abort', stop);
    input.close();
  }
}
