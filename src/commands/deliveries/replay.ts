import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { LineError } from '../../lib/cli/record-file.js';
import { EnvironmentError, ExitCode, UsageError } from '../../lib/cli/exit.js';
import type { Column } from '../../lib/cli/table.js';
import { isRefused, OPERATION_CONFLICT, REPLAY_CODES } from '../../lib/deliveries/replay.js';
import {
  checkAnswerUuid,
  checkOperationId,
  checkRevision,
  parseReplayFile,
  type ReplayItem,
} from '../../lib/deliveries/replay-input.js';
import { type ReplayResult, runReplayBatch } from '../../lib/deliveries/replay-run.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { intArg, routableConsumerArg, schoolArg, secondsArg } from '../options.js';

export interface DeliveriesReplayOptions {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  /** one request from `--answer/--expected-revision/--operation-id`, or */
  readonly single?: { readonly answerUuid: string; readonly expectedRevision: string; readonly operationId: string };
  /** a `--from` file (`-` for stdin) */
  readonly from?: string;
  /** write; without it, report what each request would answer */
  readonly execute: boolean;
  readonly concurrency: number;
  readonly maxSeconds: number;
}

const COMMAND = 'deliveries replay';
const RESULT_COLUMNS: readonly Column[] = [
  { key: 'line' },
  { key: 'answerUuid', header: 'answer' },
  { key: 'expectedRevision', header: 'rev' },
  { key: 'operationId', header: 'operation' },
  { key: 'code' },
  { key: 'reason' },
];

async function readItems(options: DeliveriesReplayOptions, ctx: Ctx): Promise<ReplayItem[]> {
  if (options.single) return [{ line: 0, ...options.single }];
  const from = options.from!;
  let bytes: Buffer;
  try {
    if (from === '-') {
      const chunks: Buffer[] = [];
      for await (const c of ctx.io.stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
      bytes = Buffer.concat(chunks);
    } else bytes = await readFile(from);
  } catch (err) {
    throw new UsageError(`--from ${from}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`--from ${from}: not UTF-8 text`);
  }
  try {
    return parseReplayFile(text);
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(`--from ${from}: ${err.message}`);
    throw err;
  }
}

/**
 * `fcctl deliveries replay`: answers each request with one stable code (seed 000 §8
 * `replayAuthorized`) — QUEUED, ALREADY_DELIVERED, GRANT_REVOKED, REVISION_MISMATCH,
 * NO_DELIVERY_ROW, or fcctl's OPERATION_CONFLICT — and, with `--execute`, records the answer and
 * resets the row in one transaction. Exit 0 when every item is QUEUED or ALREADY_DELIVERED, 1
 * when any is refused or was not run, 2 for bad flags or a bad file (nothing written).
 */
export async function runDeliveriesReplay(options: DeliveriesReplayOptions, ctx: Ctx): Promise<number> {
  const items = await readItems(options, ctx);
  const started = Date.now();
  const db = await ctx.fcDb();
  const batch = options.single === undefined;
  const dryRun = !options.execute;
  const tableRows: ReplayResult[] = [];
  const progress = batch ? ctx.output.progress(dryRun ? `${COMMAND} (dry run)` : COMMAND, items.length) : null;
  let summary: Awaited<ReturnType<typeof runReplayBatch>>;
  try {
    summary = await runReplayBatch(
      items,
      { consumerAppKey: options.consumerAppKey, consumerSchoolId: options.consumerSchoolId, execute: options.execute, concurrency: options.concurrency, maxSeconds: options.maxSeconds },
      {
        db,
        signal: ctx.signal,
        clock: Date.now,
        onResult: (r) => {
          progress?.record(isRefused(r.code) ? r.code : undefined);
          const { line, ...rest } = r;
          ctx.output.event('result', { ...(batch ? { line } : {}), ...rest, dryRun });
          if (!ctx.output.json) {
            if (batch) tableRows.push(r);
            else ctx.output.note(`${r.code}  ${r.reason}${r.repeated ? ' (answer recorded for this operation id earlier)' : ''}`);
          }
        },
      },
    );
  } finally {
    progress?.stop();
  }
  if (batch && !ctx.output.json && tableRows.length > 0) ctx.output.rows(tableRows, RESULT_COLUMNS, 'table', dryRun ? 'would answer (dry run)' : 'answers');
  if (dryRun) ctx.output.note('dry run: nothing was written or recorded; pass --execute to replay');

  const byCode: Record<string, number> = Object.fromEntries([...REPLAY_CODES, OPERATION_CONFLICT].map((c) => [c, 0]));
  for (const r of summary.results) byCode[r.code] = (byCode[r.code] ?? 0) + 1;
  const refused = summary.results.filter((r) => isRefused(r.code)).length;
  const exitCode = summary.error ? ExitCode.ENVIRONMENT : refused + summary.notRun > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
  // JSON: every code with its count; a terminal: the codes that occurred, one row each.
  const counts = ctx.output.json ? undefined : Object.fromEntries(Object.entries(byCode).filter(([, n]) => n > 0));
  ctx.output.summary(
    {
      command: COMMAND,
      exitCode,
      dryRun,
      items: items.length,
      answered: summary.results.length,
      ...(counts ? {} : { byCode }),
      repeated: summary.results.filter((r) => r.repeated).length,
      refused,
      notRun: summary.notRun,
      stoppedBy: summary.stoppedBy,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    },
    counts,
  );
  if (summary.error) {
    const e = summary.error;
    if (e instanceof EnvironmentError) throw e;
    const hint = (e as { code?: string }).code === 'ER_NO_SUCH_TABLE' ? ' (schema missing: run `fcctl db init --side fc`)' : '';
    throw new EnvironmentError(`replay stopped by a database error: ${String((e as Error)?.message ?? e).split('\n')[0]}${hint}`, { cause: e });
  }
  return exitCode;
}

/** Checks a single-request flag with the file's rules, naming the flag. */
function flag<T>(check: (v: unknown, line: number, name: string) => T, value: unknown, name: string): T {
  try {
    return check(value, 0, name);
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(err.message);
    throw err;
  }
}

export function createDeliveriesReplayCommand(parent: Command, deps: Deps, resources: Resources, runF = runDeliveriesReplay): Command {
  return parent
    .command('replay')
    .description('replay deliveries under an operation id: QUEUED, ALREADY_DELIVERED, GRANT_REVOKED, REVISION_MISMATCH or NO_DELIVERY_ROW (writes only with --execute)')
    .requiredOption('--consumer <key>', 'consumer app key (no . * #: it must make a routing key)', routableConsumerArg)
    .requiredOption('--school <id>', 'consumer school id', schoolArg)
    .option('--answer <uuid>', 'answer uuid (single replay)')
    .option('--expected-revision <n>', 'the revision the newest row must have (single replay)')
    .option('--operation-id <op>', 'idempotency key, 1–128 characters: the same id again returns the first answer (single replay)')
    .option('--from <file>', 'CSV (header answerUuid,expectedRevision,operationId) or JSON lines with those members; - for stdin')
    .option('--execute', 'reset rows and record answers; without it only report what each would answer', false)
    .option('--concurrency <n>', 'items replayed at once (--from)', intArg(1, 32), 4)
    .option('--max-seconds <s>', 'start no new item after this long (--from)', secondsArg(1, 86400), 3600)
    .action(async (o: Record<string, unknown>, cmd: Command) => {
      const singleFlags = (['answer', 'expectedRevision', 'operationId'] as const).filter((k) => o[k] !== undefined);
      const from = o['from'] as string | undefined;
      if (from !== undefined && singleFlags.length > 0) throw new UsageError('--from cannot be combined with --answer, --expected-revision or --operation-id');
      if (from === undefined && singleFlags.length < 3) {
        throw new UsageError('give --answer, --expected-revision and --operation-id for one replay, or --from FILE for a batch');
      }
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        {
          consumerAppKey: o['consumer'] as string,
          consumerSchoolId: o['school'] as string,
          ...(from !== undefined
            ? { from }
            : {
                single: {
                  answerUuid: flag(checkAnswerUuid, o['answer'], '--answer'),
                  expectedRevision: flag(checkRevision, o['expectedRevision'], '--expected-revision'),
                  operationId: flag(checkOperationId, o['operationId'], '--operation-id'),
                },
              }),
          execute: o['execute'] as boolean,
          concurrency: o['concurrency'] as number,
          maxSeconds: o['maxSeconds'] as number,
        },
        ctx,
      );
    });
}
