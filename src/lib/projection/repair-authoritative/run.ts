/**
 * `projection repair-authoritative`, the runner (seed 000 §8.1, SPEC §6): {@link runRepairAuthoritative}
 * opens the evidence file, records the run, repairs every item ({@link runRepairBatch}) and records
 * the end. For each answer, one attempt is:
 *
 * 1. FC, one statement: the `answer` row (its snapshot built with fc.canon.v1) and the grant of its
 *    form to the consumer at the school, read now, never cached — or, with `--envelope`, the checked
 *    envelope's snapshot and the grant read now;
 * 2. the local projection row, read now (a plain read: no lock is held across the two databases);
 * 3. {@link decideRepair};
 * 4. with `execute`: one short SH transaction holding the conditional UPDATE (or the UNLINKED
 *    INSERT) and the `fc_reconcile_audit` row. A write that matches nothing, or a duplicate key on
 *    the insert, rolls back: the answer is LOCAL_CHANGED, with the row re-read;
 * 5. one evidence line.
 *
 * LOCAL_CHANGED is retried up to `maxRereads` times with the triple just read as the new
 * expectation; a local row that moved ahead comes out LOCAL_AHEAD and is never overwritten.
 */
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type OrderedDeps, runOrdered, type OrderedSummary } from '../../batch/ordered.js';
import { EnvironmentError, UsageError } from '../../cli/exit.js';
import type { Progress } from '../../cli/output.js';
import type { LazyDatabases } from '../../db/lazy.js';
import type { EvidenceFile } from '../../files/jsonl-evidence.js';
import {
  isRefused,
  repairExitCode,
  type RepairRunFacts,
  resultCounts,
  type Triple,
  tripleOf,
  authSummary,
  grantSummary,
  tripleJson,
} from './decide.js';
import { openRepairEvidence } from './evidence.js';
import type { RepairInputs, RepairItem } from './input.js';
import { attemptOnce } from './store.js';
import type { RepairDeps, RepairOutcome, RepairRunOptions } from './types.js';

/**
 * Repairs one answer: attempts until a result other than LOCAL_CHANGED, or `maxRereads` re-reads
 * are spent; each attempt's decision goes to the evidence file.
 * @example const outcome = await repairOne(item, options, { fcDb, shDb, evidence, now: () => new Date() })
 */
export async function repairOne(item: RepairItem, o: RepairRunOptions, deps: RepairDeps): Promise<RepairOutcome> {
  let expected = item.expected;
  for (let rereads = 0; ; rereads++) {
    const at = await attemptOnce(item, expected, rereads + 1, o, deps);
    await deps.evidence?.append({
      type: 'decision',
      time: deps.now().toISOString(),
      runId: o.runId,
      host: o.host,
      proofId: o.proofId,
      dryRun: !o.execute,
      consumerAppKey: o.consumerAppKey,
      line: item.line,
      answerUuid: item.answerUuid,
      schId: item.schId,
      category: item.plan?.category ?? null,
      attempt: rereads + 1,
      result: at.decision.result,
      code: at.decision.code,
      reason: at.decision.reason,
      write: at.decision.write?.kind ?? null,
      written: at.written,
      raced: at.raced,
      expected: tripleJson(expected),
      observed: at.observed,
      authoritative: authSummary(at.authoritative),
      grant: grantSummary(at.authoritative),
      plan: item.plan ?? null,
    });
    const last = at.decision.result !== 'LOCAL_CHANGED' || rereads >= o.maxRereads;
    if (last) {
      const auth = at.authoritative.kind === 'ready' ? at.authoritative.snapshot : null;
      return {
        line: item.line,
        answerUuid: item.answerUuid,
        schId: item.schId,
        category: item.plan?.category ?? null,
        result: at.decision.result,
        code: at.decision.code,
        reason: at.decision.reason,
        write: at.decision.write?.kind ?? null,
        written: at.written,
        rereads,
        expected: item.expected,
        lastExpected: expected,
        authoritative: auth
          ? {
              revision: auth.revision,
              contentHash: auth.contentHash,
              isDeleted: auth.isDeleted,
              grantVersion: auth.grantVersion,
              eventId: auth.eventId,
            }
          : null,
      };
    }
    expected = tripleOf(at.observed);
  }
}

export interface BatchDeps extends RepairDeps, OrderedDeps<RepairOutcome> {}

export type BatchSummary = OrderedSummary<RepairOutcome>;

/**
 * Repairs items with at most `concurrency` at once (p-limit); outcomes are reported in input
 * order. On SIGINT/SIGTERM or `maxSeconds` no new item starts and the started ones finish; a
 * database error stops the run the same way and is returned once the started items settle.
 * @example const { results } = await runRepairBatch(items, options, { concurrency: 8, maxSeconds: 3600 }, { fcDb, shDb, evidence, now, signal, clock: Date.now })
 */
export async function runRepairBatch(
  items: readonly RepairItem[],
  o: RepairRunOptions,
  budget: { readonly concurrency: number; readonly maxSeconds: number },
  deps: BatchDeps,
): Promise<BatchSummary> {
  return runOrdered(items, budget, deps, (item) => repairOne(item, o, deps));
}

/** The evidence file's name when `--evidence` is not given: beside the plan, or in the current directory. */
export const DEFAULT_EVIDENCE_NAME = 'repair-evidence.jsonl';

/** What `projection repair-authoritative` was asked (its flags, checked). */
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

export interface ProjectionRepairDeps extends LazyDatabases {
  readonly now: () => Date;
  readonly clock: () => number;
  readonly signal: AbortSignal;
  /** the live display of a plan run, opened once both databases are (none in single mode) */
  readonly progress?: (total: number) => Progress;
  /** each outcome, in input order */
  readonly onResult?: (outcome: RepairOutcome) => void;
}

const NOTHING_RUN: BatchSummary = { results: [], notRun: 0, stoppedBy: 'done', error: null };

/**
 * The run, as a list of steps: open the evidence file (exit 2 when it cannot be), record the run,
 * repair every item (nothing to connect when there are none), record the end, close. A database
 * error stops the run and is in `error` ({@link repairFailure} makes it the exit-3 error).
 * @example const run = await runRepairAuthoritative(options, await readRepairInputs(options, io), { fcDb, shDb, now, clock, signal })
 */
export async function runRepairAuthoritative(
  options: ProjectionRepairOptions,
  inputs: RepairInputs,
  deps: ProjectionRepairDeps,
): Promise<RepairRunFacts> {
  const host = hostname();
  const dryRun = !options.execute;
  const evidence = await openRepairEvidence(evidencePath(options));
  let batch = NOTHING_RUN;
  let exitCode: number;
  try {
    await evidence.append(runLine(options, inputs, host, deps.now()));
    if (inputs.items.length > 0) batch = await repairItems(options, inputs, host, evidence, deps);
    exitCode = repairExitCode(batch);
    const byResult = resultCounts(batch.results, dryRun);
    await evidence
      .append({
        type: 'end',
        runId: options.runId,
        exitCode,
        byResult,
        notRun: batch.notRun,
        stoppedBy: batch.stoppedBy,
        endedAt: deps.now().toISOString(),
      })
      .catch(() => undefined);
    const { results, notRun, stoppedBy, error } = batch;
    const asked = {
      dryRun,
      runId: options.runId,
      proofId: options.proofId,
      consumerAppKey: options.consumerAppKey,
      source: inputs.envelope ? ('envelope' as const) : ('fc' as const),
      items: inputs.items.length,
    };
    return { ...asked, results, notRun, stoppedBy, error, byResult, exitCode, evidence: evidence.path };
  } finally {
    await evidence.close();
  }
}

function evidencePath(options: ProjectionRepairOptions): string {
  if (options.evidence !== undefined) return resolve(options.evidence);
  if (options.plan !== undefined && options.plan !== '-')
    return join(dirname(resolve(options.plan)), DEFAULT_EVIDENCE_NAME);
  return resolve(DEFAULT_EVIDENCE_NAME);
}

/** The evidence file's first line: what was asked, of which input (its SHA-256), where. */
function runLine(
  options: ProjectionRepairOptions,
  inputs: RepairInputs,
  host: string,
  now: Date,
): Record<string, unknown> {
  const batch = options.single === undefined;
  return {
    type: 'run',
    runId: options.runId,
    proofId: options.proofId,
    consumerAppKey: options.consumerAppKey,
    mode: batch ? 'plan' : 'single',
    plan: batch ? (options.plan === '-' ? '-' : resolve(options.plan!)) : null,
    planSha256: batch ? inputs.sha256 : null,
    envelope:
      options.single?.envelope === undefined
        ? null
        : options.single.envelope === '-'
          ? '-'
          : resolve(options.single.envelope),
    envelopeSha256: batch ? null : inputs.sha256,
    execute: options.execute,
    maxRereads: options.maxRereads,
    concurrency: options.concurrency,
    items: inputs.items.length,
    host,
    startedAt: now.toISOString(),
  };
}

/** Connects both databases, then repairs every item under the run's budget, the progress display open meanwhile. */
async function repairItems(
  options: ProjectionRepairOptions,
  inputs: RepairInputs,
  host: string,
  evidence: EvidenceFile,
  deps: ProjectionRepairDeps,
): Promise<BatchSummary> {
  const fcDb = await deps.fcDb();
  const shDb = await deps.shDb();
  const progress = deps.progress?.(inputs.items.length) ?? null;
  const runOptions: RepairRunOptions = {
    consumerAppKey: options.consumerAppKey,
    proofId: options.proofId,
    runId: options.runId,
    host,
    execute: options.execute,
    maxRereads: options.maxRereads,
    ...(inputs.envelope ? { envelope: inputs.envelope } : {}),
  };
  try {
    return await runRepairBatch(
      inputs.items,
      runOptions,
      { concurrency: options.concurrency, maxSeconds: options.maxSeconds },
      {
        fcDb,
        shDb,
        evidence,
        now: deps.now,
        signal: deps.signal,
        clock: deps.clock,
        onResult: (r) => {
          progress?.record(isRefused(r.result) ? r.code : undefined);
          deps.onResult?.(r);
        },
      },
    );
  } finally {
    progress?.stop();
  }
}

/**
 * The error a run stopped by ends with (exit 3, or the error itself when it is already exit 2 or 3),
 * a missing table named as a missing schema.
 * @example throw repairFailure(Object.assign(new Error('no table'), { code: 'ER_NO_SUCH_TABLE' }))
 */
export function repairFailure(e: unknown): Error {
  if (e instanceof EnvironmentError || e instanceof UsageError) return e;
  const hint =
    (e as { code?: string }).code === 'ER_NO_SUCH_TABLE'
      ? ' (schema missing: run `fcctl db init --side fc` / `--side sh`)'
      : '';
  return new EnvironmentError(
    `repair stopped by an error: ${String((e as Error)?.message ?? e).split('\n')[0]}${hint}`,
    { cause: e },
  );
}

/**
 * The `result` event of one outcome: line and category only for a plan run.
 * @example resultEventOf(outcome, false, true).dryRun // true
 */
export function resultEventOf(r: RepairOutcome, batch: boolean, dryRun: boolean): Record<string, unknown> {
  return {
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
  };
}

/**
 * The one line a terminal shows for the answer of single mode.
 * @example outcomeNote({ result: 'LOCAL_CHANGED', reason: 'x', rereads: 2 }) // 'LOCAL_CHANGED  x (after 2 re-reads)'
 */
export function outcomeNote(r: Pick<RepairOutcome, 'result' | 'reason' | 'rereads'>): string {
  return `${r.result}  ${r.reason}${r.rereads > 0 ? ` (after ${r.rereads} re-read${r.rereads > 1 ? 's' : ''})` : ''}`;
}
