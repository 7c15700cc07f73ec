import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { EnvironmentError, ExitCode, UsageError } from '../../lib/cli/exit.js';
import { readInput } from '../../lib/cli/input.js';
import { requireSetting } from '../../lib/config/config.js';
import type { Column } from '../../lib/cli/table.js';
import { isRefused, REASON_CODES, resultsFor, type Triple } from '../../lib/projection/decide.js';
import { EvidenceFile } from '../../lib/projection/evidence.js';
import {
  authoritativeFromEnvelope,
  checkProofId,
  checkRunId,
  checkUuid,
  expectedFromFlags,
  MAX_ENVELOPE_BYTES,
  MAX_PLAN_BYTES,
  parsePlan,
  type RepairItem,
} from '../../lib/projection/input.js';
import { LineError } from '../../lib/cli/record-file.js';
import { type RepairOutcome, type RepairRunOptions, runRepairBatch } from '../../lib/projection/repair.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { consumerArg, intArg, pathArg, schoolArg, secondsArg } from '../options.js';

/** The evidence file's name when `--evidence` is not given: beside the plan, or in the current directory. */
export const DEFAULT_EVIDENCE_NAME = 'repair-evidence.jsonl';

export interface ProjectionRepairOptions {
  /** this SH deployment's consumer credential key: whose grant authorizes the projection */
  readonly consumerAppKey: string;
  readonly proofId: string;
  /** given: single mode's school, or (with a plan) the school every line must have */
  readonly schId?: string;
  /** one answer from the flags, or */
  readonly single?: { readonly answerUuid: string; readonly expected: Triple; readonly envelope?: string };
  /** a plan file (`-` for stdin): `repair-plan.jsonl` of `reconcile diff` */
  readonly plan?: string;
  readonly execute: boolean;
  /** default: {@link DEFAULT_EVIDENCE_NAME} beside the plan, or in the current directory */
  readonly evidence?: string;
  readonly runId: string;
  readonly concurrency: number;
  readonly maxRereads: number;
  readonly maxSeconds: number;
}

const COMMAND = 'projection repair-authoritative';
const RESULT_COLUMNS: readonly Column[] = [
  { key: 'line' },
  { key: 'answerUuid', header: 'answer' },
  { key: 'category' },
  { key: 'result' },
  { key: 'rereads' },
  { key: 'reason' },
];

const usage = <T>(f: () => T): T => {
  try {
    return f();
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(err.message);
    throw err;
  }
};

/** Reads and checks every input; exit 2 before anything connects. */
interface Inputs {
  readonly items: RepairItem[];
  readonly envelope?: RepairRunOptions['envelope'];
  /** SHA-256 of the plan or envelope file as read, for the evidence */
  readonly sha256: string | null;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function readItems(options: ProjectionRepairOptions, ctx: Ctx): Promise<Inputs> {
  if (options.single) {
    const s = options.single;
    const item: RepairItem = { line: 0, answerUuid: s.answerUuid, schId: options.schId!, expected: s.expected };
    if (s.envelope === undefined) return { items: [item], sha256: null };
    const bytes = await readInput(s.envelope, ctx.io, MAX_ENVELOPE_BYTES);
    const envelope = usage(() => authoritativeFromEnvelope(bytes, { answerUuid: s.answerUuid, schId: options.schId!, consumerAppKey: options.consumerAppKey }));
    return { items: [item], envelope, sha256: sha256(bytes) };
  }
  const bytes = await readInput(options.plan, ctx.io, MAX_PLAN_BYTES);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`--plan ${options.plan}: not UTF-8 text`);
  }
  try {
    return { items: parsePlan(text, options.schId), sha256: sha256(bytes) };
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(`--plan ${options.plan}: ${err.message}`);
    throw err;
  }
}

function evidencePath(options: ProjectionRepairOptions): string {
  if (options.evidence !== undefined) return resolve(options.evidence);
  if (options.plan !== undefined && options.plan !== '-') return join(dirname(resolve(options.plan)), DEFAULT_EVIDENCE_NAME);
  return resolve(DEFAULT_EVIDENCE_NAME);
}

/**
 * `fcctl projection repair-authoritative` (seed 000 §8.1, SPEC §6): repairs the local projection
 * of one answer, or of every line of a repair plan, from FC — conditionally on the local triple
 * read before, never downgrading, with one evidence line per decision and (with `--execute`) one
 * audit row. Exit 0 when every answer is APPLIED (WOULD_APPLY in a dry run), 1 when any is LOCAL_CHANGED, LOCAL_AHEAD,
 * DEFERRED or not run, 2 for bad input (nothing read or written), 3 when a database fails.
 */
export async function runProjectionRepair(options: ProjectionRepairOptions, ctx: Ctx): Promise<number> {
  const { items, envelope, sha256: inputSha256 } = await readItems(options, ctx);
  const started = Date.now();
  const dryRun = !options.execute;
  const batch = options.single === undefined;
  const host = hostname();
  // A database that is not configured is bad input too: refused before the evidence file is touched.
  if (items.length > 0) for (const name of ['fcDatabaseUrl', 'shDatabaseUrl'] as const) requireSetting(ctx.config, name);
  const evidence = await EvidenceFile.open(evidencePath(options));
  const runOptions: RepairRunOptions = {
    consumerAppKey: options.consumerAppKey,
    proofId: options.proofId,
    runId: options.runId,
    host,
    execute: options.execute,
    maxRereads: options.maxRereads,
    ...(envelope ? { envelope } : {}),
  };
  const tableRows: Array<Record<string, unknown>> = [];
  let summary: Awaited<ReturnType<typeof runRepairBatch>> = { results: [], notRun: 0, stoppedBy: 'done', error: null };
  // A dry run counts WOULD_APPLY, never APPLIED: its summary must not read as done.
  const byResult: Record<string, number> = Object.fromEntries(resultsFor(dryRun ? 'dry-run' : 'execute').map((c) => [c, 0]));
  let exitCode: number = ExitCode.OK;
  try {
    await evidence.append({
      type: 'run',
      runId: options.runId,
      proofId: options.proofId,
      consumerAppKey: options.consumerAppKey,
      mode: batch ? 'plan' : 'single',
      plan: batch ? (options.plan === '-' ? '-' : resolve(options.plan!)) : null,
      planSha256: batch ? inputSha256 : null,
      envelope: options.single?.envelope === undefined ? null : options.single.envelope === '-' ? '-' : resolve(options.single.envelope),
      envelopeSha256: batch ? null : inputSha256,
      execute: options.execute,
      maxRereads: options.maxRereads,
      concurrency: options.concurrency,
      items: items.length,
      host,
      startedAt: ctx.now().toISOString(),
    });
    if (items.length > 0) {
      const fcDb = await ctx.fcDb();
      const shDb = await ctx.shDb();
      const progress = batch ? ctx.output.progress(dryRun ? `${COMMAND} (dry run)` : COMMAND, items.length) : null;
      try {
        summary = await runRepairBatch(
          items,
          runOptions,
          { concurrency: options.concurrency, maxSeconds: options.maxSeconds },
          {
            fcDb,
            shDb,
            evidence,
            now: ctx.now,
            signal: ctx.signal,
            clock: Date.now,
            onResult: (r: RepairOutcome) => {
              progress?.record(isRefused(r.result) ? r.code : undefined);
              ctx.output.event('result', {
                ...(batch ? { line: r.line } : {}),
                answerUuid: r.answerUuid,
                schId: r.schId,
                ...(batch ? { category: r.category } : {}),
                result: r.result,
                code: r.code,
                reason: r.reason,
                write: r.write,
                written: r.written,
                rereads: r.rereads,
                expected: r.expected,
                ...(r.rereads > 0 ? { lastExpected: r.lastExpected } : {}),
                authoritative: r.authoritative,
                dryRun,
              });
              if (!ctx.output.json) {
                if (batch) tableRows.push({ ...r });
                else ctx.output.note(`${r.result}  ${r.reason}${r.rereads > 0 ? ` (after ${r.rereads} re-read${r.rereads > 1 ? 's' : ''})` : ''}`);
              }
            },
          },
        );
      } finally {
        progress?.stop();
      }
    }
    for (const r of summary.results) byResult[r.result] = (byResult[r.result] ?? 0) + 1;
    const refusedOrNotRun = summary.results.filter((r) => isRefused(r.result)).length + summary.notRun;
    exitCode = summary.error ? ExitCode.ENVIRONMENT : refusedOrNotRun > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
    await evidence.append({ type: 'end', runId: options.runId, exitCode, byResult, notRun: summary.notRun, stoppedBy: summary.stoppedBy, endedAt: ctx.now().toISOString() }).catch(() => undefined);
  } finally {
    await evidence.close();
  }
  if (batch && !ctx.output.json && tableRows.length > 0) ctx.output.rows(tableRows, RESULT_COLUMNS, 'table', dryRun ? 'would answer (dry run)' : 'results');
  if (dryRun) ctx.output.note('dry run: nothing was written to the databases (decisions recorded in the evidence file with dryRun: true); pass --execute to repair');

  const byCode: Record<string, number> = {};
  for (const r of summary.results) byCode[r.code] = (byCode[r.code] ?? 0) + 1;
  const orderedCodes = Object.fromEntries(REASON_CODES.filter((c) => byCode[c] !== undefined).map((c) => [c, byCode[c]!]));
  const refused = summary.results.filter((r) => isRefused(r.result)).length;
  const counts = ctx.output.json ? undefined : Object.fromEntries(Object.entries(byResult).filter(([, n]) => n > 0));
  ctx.output.summary(
    {
      command: COMMAND,
      exitCode,
      dryRun,
      runId: options.runId,
      proofId: options.proofId,
      consumerAppKey: options.consumerAppKey,
      source: envelope ? 'envelope' : 'fc',
      items: items.length,
      decided: summary.results.length,
      ...(counts ? {} : { byResult }),
      byCode: orderedCodes,
      ...(dryRun
        ? { wouldInsert: summary.results.filter((r) => r.write === 'insert').length, wouldUpdate: summary.results.filter((r) => r.write === 'update').length }
        : { inserted: summary.results.filter((r) => r.written && r.write === 'insert').length, updated: summary.results.filter((r) => r.written && r.write === 'update').length }),
      rereads: summary.results.reduce((n, r) => n + r.rereads, 0),
      refused,
      notRun: summary.notRun,
      stoppedBy: summary.stoppedBy,
      evidence: evidence.path,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    },
    counts,
  );
  if (summary.error) {
    const e = summary.error;
    if (e instanceof EnvironmentError || e instanceof UsageError) throw e;
    const hint = (e as { code?: string }).code === 'ER_NO_SUCH_TABLE' ? ' (schema missing: run `fcctl db init --side fc` / `--side sh`)' : '';
    throw new EnvironmentError(`repair stopped by an error: ${String((e as Error)?.message ?? e).split('\n')[0]}${hint}`, { cause: e });
  }
  return exitCode;
}

export function createProjectionRepairCommand(parent: Command, deps: Deps, resources: Resources, runF = runProjectionRepair): Command {
  return parent
    .command('repair-authoritative')
    .description('repair the local projection from FC, conditionally on the local triple read before: APPLIED (WOULD_APPLY in a dry run), LOCAL_CHANGED, LOCAL_AHEAD or DEFERRED (writes only with --execute)')
    .requiredOption('--consumer <key>', 'this SH deployment\'s consumer app key: the grant (form, school, this key) that authorizes the projection', consumerArg)
    .requiredOption('--proof-id <id>', 'audit reference of this repair (the reconcile task or incident), 1–128 characters')
    .option('--school <id>', 'school of the answer (one answer); with --plan, the school every line must have', schoolArg)
    .option('--answer <uuid>', 'answer uuid (one answer)')
    .option('--expected-revision <n>', 'the local revision as read (one answer)')
    .option('--expected-hash <hash>', 'the local content hash as read (one answer)')
    .option('--expected-is-deleted <0|1>', 'the local isDeleted as read (one answer)')
    .option('--expect-missing', 'the local row was observed missing: insert it UNLINKED (one answer)', false)
    .option('--envelope <file>', 'take the authoritative snapshot from this v2 envelope (checked as canon check-envelope does) instead of building it from the FC answer row; - for stdin', pathArg)
    .option('--plan <file>', 'repair every line of a repair-plan.jsonl of reconcile diff; - for stdin', pathArg)
    .option('--execute', 'write; without it only report what each answer would get', false)
    .option('--evidence <file>', `JSON lines appended per decision (default: ${DEFAULT_EVIDENCE_NAME} beside the plan, or in the current directory)`, pathArg)
    .option('--run-id <id>', 'run id for the audit rows and evidence (default: a new UUID)')
    .option('--concurrency <n>', 'answers repaired at once (--plan)', intArg(1, 32), 4)
    .option('--max-rereads <n>', 'times an answer is re-read and decided again after LOCAL_CHANGED', intArg(0, 10), 3)
    .option('--max-seconds <s>', 'start no new answer after this long (--plan)', secondsArg(1, 86400), 3600)
    .action(async (o: Record<string, unknown>, cmd: Command) => {
      const plan = o['plan'] as string | undefined;
      const singleFlags = (['answer', 'expectedRevision', 'expectedHash', 'expectedIsDeleted', 'envelope'] as const).filter((k) => o[k] !== undefined);
      if (plan !== undefined && (singleFlags.length > 0 || o['expectMissing'] === true)) {
        throw new UsageError('--plan cannot be combined with --answer, --expected-*, --expect-missing or --envelope');
      }
      if (plan === undefined && (o['answer'] === undefined || o['school'] === undefined)) {
        throw new UsageError('give --school and --answer with --expected-revision/--expected-hash/--expected-is-deleted or --expect-missing for one answer, or --plan FILE');
      }
      if (plan === '-' && o['envelope'] === '-') throw new UsageError('only one input can be standard input');
      const proofId = usage(() => checkProofId(o['proofId'], 0));
      const runId = o['runId'] === undefined ? randomUUID() : usage(() => checkRunId(o['runId']));
      const single =
        plan === undefined
          ? usage(() => ({
              answerUuid: checkUuid(o['answer'], 0, '--answer'),
              expected: expectedFromFlags({ revision: o['expectedRevision'], hash: o['expectedHash'], isDeleted: o['expectedIsDeleted'], missing: o['expectMissing'] === true }),
              ...(o['envelope'] !== undefined ? { envelope: o['envelope'] as string } : {}),
            }))
          : undefined;
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        {
          consumerAppKey: o['consumer'] as string,
          proofId,
          ...(o['school'] !== undefined ? { schId: o['school'] as string } : {}),
          ...(single ? { single } : { plan: plan! }),
          execute: o['execute'] as boolean,
          ...(o['evidence'] !== undefined ? { evidence: o['evidence'] as string } : {}),
          runId,
          concurrency: o['concurrency'] as number,
          maxRereads: o['maxRereads'] as number,
          maxSeconds: o['maxSeconds'] as number,
        },
        ctx,
      );
    });
}
