/**
 * `apply-command requeue`: read the selection (a `--from` file checked whole before
 * anything connects), the answers already recorded for the operation, then per command read the
 * facts, decide (`decide.ts`) and — with `execute` — record the answer, apply the guarded write
 * and the audit row in ONE short SH transaction. The operation row is inserted first and is the
 * idempotency lock, as in `deliveries replay`. Before any of that, the operation id is bound to
 * its selection by a header row (its own statement), which also records when the operation
 * completed, so an interrupted `--dead` operation continues under the same id (the statements:
 * `store.ts`). Every decision, dry runs included, is a line of the
 * evidence file (the projection's append-only writer), format `fcctl.requeue-evidence.v1`:
 * - `{"type":"run", runId, operationId, selector, selectorSha256, execute, items, truncated, host, startedAt}`
 * - `{"type":"decision", runId, operationId, bizType, bizId, commandId, code, reason, repeated, dryRun, before, after, decidedAt}`
 * - `{"type":"refused-operation", runId, operationId, reason}` when the operation id belongs to another selection
 * - `{"type":"end", runId, exitCode, byCode, notRun, stoppedBy, endedAt}`
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type OrderedSummary, runOrdered } from '../../batch/ordered.js';
import { opDigest } from '../../deliveries/replay/decide.js';
import { EvidenceFile } from '../../files/jsonl-evidence.js';
import {
  isRefused,
  operationComplete,
  OPERATION_CONFLICT,
  type RequeueResult,
  type RequeueRunResult,
  requeueByCode,
  requeueExitCode,
  selectorOf,
  writtenOf,
} from './decide.js';
import { readSelection, type SelectedKey } from './input.js';
import { bindOperation, completeOperation, decideOne, itemsOf, readPrior } from './store.js';
import type { Operation, Prior, RequeueDeps, RequeueOptions } from './types.js';

export const REQUEUE_EVIDENCE_FORMAT = 'fcctl.requeue-evidence.v1';

/** The operation id belongs to another selection: refused whole, nothing done. */
async function refuseOperation(op: Operation, conflict: string, truncated: boolean): Promise<RequeueRunResult> {
  await op.line({ type: 'refused-operation', reason: conflict });
  const exitCode = requeueExitCode({ error: false, refused: 1, notRun: 0, interrupted: false });
  await op.line({
    type: 'end',
    exitCode,
    byCode: { [OPERATION_CONFLICT]: 1 },
    notRun: 0,
    stoppedBy: 'operation-conflict',
    endedAt: op.deps.now().toISOString(),
  });
  return {
    runId: op.runId,
    selector: op.selector.text,
    dryRun: !op.options.execute,
    items: 0,
    truncated,
    results: [],
    byCode: { [OPERATION_CONFLICT]: 1 },
    refused: 1,
    repeated: 0,
    notRun: 0,
    stoppedBy: 'operation-conflict',
    operationConflict: conflict,
    exitCode,
    evidencePath: op.evidencePath,
    error: null,
  };
}

/** One item: decided, its evidence line written, its result. */
async function answerItem(op: Operation, prior: Prior, it: SelectedKey): Promise<RequeueResult> {
  const key = { bizType: it.bizType, bizId: it.bizId };
  const { decision: d, row } = await decideOne(op, prior, key);
  await op.line({
    type: 'decision',
    ...key,
    commandId: d.commandId,
    code: d.code,
    reason: d.reason,
    repeated: d.repeated,
    dryRun: !op.options.execute,
    before: row,
    after: writtenOf(d),
    decidedAt: op.deps.now().toISOString(),
  });
  return { line: it.line, ...key, commandId: d.commandId, code: d.code, reason: d.reason, repeated: d.repeated };
}

/** Counts the answers, marks a complete operation so, writes the end line. */
async function finishOperation(
  op: Operation,
  summary: OrderedSummary<RequeueResult>,
  items: number,
  truncated: boolean,
): Promise<RequeueRunResult> {
  const byCode = requeueByCode(summary.results, op.options.execute);
  const refused = summary.results.filter((r) => isRefused(r.code)).length;
  const exitCode = requeueExitCode({
    error: summary.error !== null,
    refused,
    notRun: summary.notRun,
    interrupted: summary.stoppedBy === 'signal',
  });
  if (
    op.options.execute &&
    operationComplete({
      stoppedBy: summary.stoppedBy,
      error: summary.error !== null,
      notRun: summary.notRun,
      truncated,
      codes: summary.results.map((r) => r.code),
    })
  )
    await completeOperation(op);
  await op.line({
    type: 'end',
    exitCode,
    byCode,
    notRun: summary.notRun,
    stoppedBy: summary.stoppedBy,
    endedAt: op.deps.now().toISOString(),
  });
  return {
    runId: op.runId,
    selector: op.selector.text,
    dryRun: !op.options.execute,
    items,
    truncated,
    results: summary.results,
    byCode,
    refused,
    repeated: summary.results.filter((r) => r.repeated).length,
    notRun: summary.notRun,
    stoppedBy: summary.stoppedBy,
    operationConflict: null,
    exitCode,
    evidencePath: op.evidencePath,
    error: summary.error,
  };
}

/**
 * Runs one requeue operation. Bad input throws a UsageError before anything connects; a database
 * error before the first command throws; one during the run stops it (started commands finish)
 * and is returned as `error`.
 * @example const run = await runRequeue({ target: { kind: 'dead', reason: null }, operationId: 'INC-7', execute: false, evidencePath: 'requeue-evidence.jsonl', concurrency: 4, maxSeconds: 3600 }, deps)
 */
export async function runRequeue(options: RequeueOptions, deps: RequeueDeps): Promise<RequeueRunResult> {
  const { selection, lines } = await readSelection(options.target, deps.stdin);
  const selector = selectorOf(selection);
  const digest = opDigest(options.operationId);
  const db = await deps.shDb();
  // The evidence file is open first, so a run refused for it binds nothing.
  const evidence = await EvidenceFile.open(options.evidencePath);
  const runId = randomUUID();
  const op: Operation = {
    options,
    deps,
    db,
    digest,
    selection,
    selector,
    runId,
    host: deps.host ?? hostname(),
    evidencePath: evidence.path,
    mode: selection.kind === 'dead' ? 'dead' : 'named',
    reasonFilter: selection.kind === 'dead' ? selection.reason : null,
    line: (record) =>
      evidence.append({ format: REQUEUE_EVIDENCE_FORMAT, runId, operationId: options.operationId, ...record }),
  };
  try {
    if (options.execute) await bindOperation(op);
    const prior = await readPrior(op);
    const { items, truncated } = await itemsOf(op, lines, prior);
    await op.line({
      type: 'run',
      selector: selector.text,
      selectorSha256: selector.sha256,
      execute: options.execute,
      items: items.length,
      truncated,
      host: op.host,
      startedAt: deps.now().toISOString(),
    });
    if (prior.conflict !== null) return await refuseOperation(op, prior.conflict, truncated);
    const budget = { concurrency: options.concurrency, maxSeconds: options.maxSeconds };
    const summary = await runOrdered(
      items,
      budget,
      { signal: deps.signal, clock: deps.clock, onResult: deps.onResult },
      (it) => answerItem(op, prior, it),
    );
    return await finishOperation(op, summary, items.length, truncated);
  } finally {
    await evidence.close();
  }
}
