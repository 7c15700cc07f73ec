import { type Command, Option } from 'commander';
import { canonicalize, CanonParseError, contentHash, MAX_INPUT_BYTES, type NumberMode } from '../../lib/canon/index.js';
import { ExitCode } from '../../lib/cli/exit.js';
import { openInput, readInput } from '../../lib/cli/input.js';
import { BufferedWriter, type LineEvent, LineSplitter } from '../../lib/cli/lines.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { intArg } from '../options.js';

/** Default longest line `--lines` holds in memory; a longer line is an error line. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

/** The `--lines` error code of a line over `--max-line-bytes` (outside the canon set: a limit of the reader, not of JSON). */
export const LINE_TOO_LONG = 'LINE_TOO_LONG';

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

/** One-line text for a tab-separated field: no tab, CR or LF inside. */
const field = (text: string) => text.replace(/[\t\r\n]/g, ' ');

/**
 * `fcctl canon hash [FILE|-]`: the fc.canon.v1 hash (or, with `--canonical`, the canonical bytes)
 * of one JSON document, or of each line of a JSON Lines input with `--lines`.
 */
export async function runCanonHash(options: CanonHashOptions, ctx: Ctx): Promise<number> {
  return options.lines ? hashLines(options, ctx) : hashDocument(options, ctx);
}

/**
 * One document. Refused: exit 2 and exactly `error: CODE: message (line L, column C)` on stderr.
 * `--canonical` writes the exact canonical bytes; a newline is added only when stdout is a
 * terminal (so piped output can be compared or hashed byte for byte).
 */
async function hashDocument(options: CanonHashOptions, ctx: Ctx): Promise<number> {
  const bytes = await readInput(options.file, ctx.io, MAX_INPUT_BYTES);
  const r = canonicalize(bytes, { numberMode: options.numberMode });
  if (!r.ok) {
    const e = r.error;
    ctx.io.stderr.write(`error: ${e.code}: ${field(e.message)} (line ${e.line}, column ${e.column})\n`);
    return ExitCode.USAGE;
  }
  if (options.canonical) {
    ctx.io.stdout.write(r.canonical);
    if (ctx.io.stdout.isTTY) ctx.io.stdout.write('\n');
  } else {
    ctx.io.stdout.write(`${r.hash}\n`);
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
async function hashLines(options: CanonHashOptions, ctx: Ctx): Promise<number> {
  const mode = { numberMode: options.numberMode };
  const out = new BufferedWriter(ctx.io.stdout);
  const splitter = new LineSplitter(options.maxLineBytes);
  let lines = 0;
  let failed = 0;
  const fail = (code: string, message: string) => {
    failed++;
    out.write(`error\t${code}\t${field(message)}\n`);
  };
  const onLine = (line: LineEvent) => {
    lines++;
    if (line.kind === 'overlong') {
      fail(LINE_TOO_LONG, `a line of ${line.bytes} bytes is over the ${options.maxLineBytes}-byte limit (--max-line-bytes)`);
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

  const input = openInput(options.file, ctx.io);
  // An interrupt closes the input, which ends a pending read at once (a quiet standard input
  // must not keep us waiting). Not Promise.race against a long-lived promise: that would keep
  // every chunk reachable until the end.
  const stop = () => input.close();
  ctx.signal.addEventListener('abort', stop, { once: true });
  try {
    if (!ctx.signal.aborted) {
      for await (const chunk of input.chunks) {
        splitter.push(chunk, onLine);
        // Flush after each chunk: output keeps pace with a slow producer (`tail -f | …`).
        await out.flush();
        if (out.closed || ctx.signal.aborted) break;
      }
    }
    if (!ctx.signal.aborted && !out.closed) splitter.end(onLine);
  } finally {
    ctx.signal.removeEventListener('abort', stop);
    input.close();
  }
  const interrupted = ctx.signal.aborted;
  await out.flush();
  if (interrupted) {
    ctx.io.stderr.write(`fcctl: canon hash --lines: interrupted after ${lines} lines; the output is incomplete\n`);
    return ExitCode.ITEMS_FAILED;
  }
  return failed > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

export function createCanonHashCommand(parent: Command, deps: Deps, resources: Resources, runF = runCanonHash): Command {
  return parent
    .command('hash')
    .description('fc.canon.v1 content hash of a JSON document (or of each line with --lines)')
    .argument('[file]', 'the JSON file; - or nothing reads standard input')
    .option('--canonical', 'print the canonical bytes instead of the hash (a newline is added only on a terminal)', false)
    .option('--lines', 'JSON Lines: one output line per input line, the hash or error<TAB>CODE<TAB>message; exit 1 if any line failed', false)
    .addOption(new Option('--number-mode <mode>', 'exact: numbers as exact decimals; double: fractions read as doubles first').choices(['exact', 'double']).default('exact'))
    .addOption(
      new Option('--max-line-bytes <n>', 'with --lines: a longer line is an error line (LINE_TOO_LONG), never held in memory')
        .argParser(intArg(1, MAX_INPUT_BYTES))
        .default(DEFAULT_MAX_LINE_BYTES, '64 MiB'),
    )
    .action(async (file: string | undefined, opts: { canonical: boolean; lines: boolean; numberMode: NumberMode; maxLineBytes: number }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF({ file, canonical: opts.canonical, lines: opts.lines, numberMode: opts.numberMode, maxLineBytes: opts.maxLineBytes }, ctx);
    });
}
