/**
 * `apply-command requeue`, the I/O: read the selection (a `--from` file checked whole before
 * anything connects), the answers already recorded for the operation, then per command read the
 * facts, decide (`decide.ts`) and — with `execute` — record the answer, apply the guarded write
 * and the audit row in ONE short SH transaction. The operation row is inserted first and is the
 * idempotency lock, as in `deliveries replay`. Before any of that, the operation id is bound to
 * its selection by a header row (its own statement), which also records when the operation
 * completed, so an interrupted `--dead` operation continues under the same id. Every decision, dry runs included, is a line of the
 * evidence file (the projection's append-only writer), format `fcctl.requeue-evidence.v1`:
 * - `{"type":"run", runId, operationId, selector, selectorSha256, execute, items, truncated, host, startedAt}`
 * - `{"type":"decision", runId, operationId, bizType, bizId, commandId, code, reason, repeated, dryRun, before, after, decidedAt}`
 * - `{"type":"refused-operation", runId, operationId, reason}` when the operation id belongs to another selection
 * - `{"type":"end", runId, exitCode, byCode, notRun, stoppedBy, endedAt}`
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { PoolConnection } from 'mysql2/promise';
import { type OrderedSummary, runOrdered } from '../../batch/ordered.js';
import { EnvironmentError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import type { Statement } from '../../db/statement.js';
import { opDigest } from '../../deliveries/replay/decide.js';
import { EvidenceFile } from '../../files/jsonl-evidence.js';
import {
  type BizKey,
  decideRequeue,
  isRefused,
  isTemporary,
  operationComplete,
  operationConflict,
  OPERATION_CONFLICT,
  type RecordedRequeue,
  type RequeueCode,
  type RequeueDecision,
  type RequeueFacts,
  type RequeueResult,
  type RequeueRow,
  type RequeueRunResult,
  type RequeueSelection,
  requeueByCode,
  requeueExitCode,
  selectorOf,
} from './decide.js';
import { MAX_REQUEUE_ITEMS, readSelection, type RequeueTarget, type SelectedKey } from './input.js';
import { requeueSql } from './sql.js';

export type { RequeueResult, RequeueRunResult } from './decide.js';

export const REQUEUE_EVIDENCE_FORMAT = 'fcctl.requeue-evidence.v1';

export interface RequeueOptions {
  readonly target: RequeueTarget;
  readonly operationId: string;
  /** write; without it, report what each command would answer (evidence lines marked dryRun) */
  readonly execute: boolean;
  readonly evidencePath: string;
  readonly concurrency: number;
  readonly maxSeconds: number;
}

export interface RequeueDeps {
  readonly shDb: () => Promise<Db>;
  /** standard input, for `--from -` */
  readonly stdin: AsyncIterable<unknown>;
  readonly now: () => Date;
  readonly signal: AbortSignal;
  readonly clock: () => number;
  readonly host?: string;
  /** each result, in selection order */
  readonly onResult?: (r: RequeueResult) => void;
}

type Run = <T>(q: Statement) => Promise<T[]>;

interface HeaderRaw {
  selector: string;
  selector_sha256: string;
  completed_at: string | null;
}

interface RecordedRaw {
  biz_type: string;
  biz_id: string;
  selector: string;
  selector_sha256: string;
  code: string;
  reason: string;
  command_id: string | number | null;
}

const recordedOf = (r: RecordedRaw): RecordedRequeue => ({
  selector: r.selector,
  selectorSha256: r.selector_sha256,
  code: r.code as RequeueCode,
  reason: r.reason,
  commandId: r.command_id === null ? null : String(r.command_id),
});
const keyId = (k: BizKey) => `${k.bizType}\u0000${k.bizId}`;

/** A schema without the requeue table is the environment's problem, with the fix named. */
function schemaHint(err: unknown): unknown {
  if ((err as { code?: string }).code === 'ER_NO_SUCH_TABLE') {
    return new EnvironmentError(
      `SH schema missing a table (${String((err as Error).message).split('\n')[0]}): run \`fcctl db init --side sh\``,
      { cause: err },
    );
  }
  return err;
}

/** The guarded write matched nothing although the row was locked: re-read and decide again. */
class GenerationMoved extends Error {}
const RETRYABLE = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);
const MAX_ATTEMPTS = 3;

interface Decided {
  readonly decision: RequeueDecision;
  readonly row: RequeueRow | null;
}

/** What every step of one operation shares: its selection, database, ids and evidence file. */
interface Operation {
  readonly options: RequeueOptions;
  readonly deps: RequeueDeps;
  readonly db: Db;
  readonly digest: string;
  readonly selection: RequeueSelection;
  readonly selector: { readonly text: string; readonly sha256: string };
  readonly mode: RequeueFacts['mode'];
  readonly reasonFilter: string | null;
  readonly runId: string;
  readonly host: string;
  readonly evidencePath: string;
  /** appends one evidence line */
  line(record: Record<string, unknown>): Promise<void>;
}

/** What the operation id has recorded already. */
interface Prior {
  readonly header: HeaderRaw | null;
  readonly recorded: readonly RecordedRaw[];
  /** the id is bound to another selection: nothing may be done */
  readonly conflict: string | null;
  readonly byKey: ReadonlyMap<string, RecordedRequeue>;
}

/**
 * Binds the operation id to its selection (the header row) before any command is read or written,
 * in its own statement: a concurrent call with another selection is refused whole. A dry run
 * binds nothing; it only reads the binding.
 */
async function bindOperation(op: Operation): Promise<void> {
  const q = requeueSql.bindOperation(op.digest, op.selector);
  await op.db.query(q.sql, q.params).catch((err: unknown) => {
    if ((err as { code?: string }).code !== 'ER_DUP_ENTRY') throw schemaHint(err);
  });
}

/** The operation's header and answers, and whether they belong to another selection. */
async function readPrior(op: Operation): Promise<Prior> {
  const h = requeueSql.header(op.digest);
  const header =
    (
      await op.db.query<HeaderRaw>(h.sql, h.params).catch((err: unknown) => {
        throw schemaHint(err);
      })
    )[0] ?? null;
  const r = requeueSql.recorded(op.digest);
  const recorded = await op.db.query<RecordedRaw>(r.sql, r.params).catch((err: unknown) => {
    throw schemaHint(err);
  });
  const conflict = operationConflict(
    [
      ...(header ? [{ selector: header.selector, selectorSha256: header.selector_sha256 }] : []),
      ...recorded.map(recordedOf),
    ],
    op.selector,
  );
  return {
    header,
    recorded,
    conflict,
    byKey: new Map(recorded.map((x) => [keyId({ bizType: x.biz_type, bizId: x.biz_id }), recordedOf(x)])),
  };
}

/**
 * The commands the run answers. `--dead`: a completed operation answers exactly its recorded
 * commands again, none new; an incomplete one (interrupted, or a command CLAIMED) repeats those
 * and selects again the DEAD rows it has not answered yet.
 */
async function itemsOf(
  op: Operation,
  lines: SelectedKey[],
  prior: Prior,
): Promise<{ items: SelectedKey[]; truncated: boolean }> {
  if (op.selection.kind !== 'dead' || prior.conflict !== null) return { items: lines, truncated: false };
  const items: SelectedKey[] = prior.recorded.map((r) => ({ bizType: r.biz_type, bizId: r.biz_id, line: null }));
  if (prior.header?.completed_at != null) return { items, truncated: false };
  for (let after = '0'; ; ) {
    const q = requeueSql.deadKeys(op.selection.reason, after, 1000);
    const page = await op.db.query<{ id: string | number; biz_type: string; biz_id: string }>(q.sql, q.params);
    items.push(
      ...page
        .filter((r) => !prior.byKey.has(keyId({ bizType: r.biz_type, bizId: r.biz_id })))
        .map((r) => ({ bizType: r.biz_type, bizId: r.biz_id, line: null })),
    );
    if (page.length < 1000 || items.length > MAX_REQUEUE_ITEMS) break;
    after = String(page[page.length - 1]!.id);
  }
  return { items: items.slice(0, MAX_REQUEUE_ITEMS), truncated: items.length > MAX_REQUEUE_ITEMS };
}

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

const factsOf = (op: Operation, key: BizKey, prior: RecordedRequeue | null, row: RequeueRow | null): RequeueFacts => ({
  mode: op.mode,
  reasonFilter: op.reasonFilter,
  execute: op.options.execute,
  key,
  selector: op.selector,
  prior,
  row,
});

/** One command's decision: the recorded answer, a dry run's read, or the transaction (retried on a deadlock or a moved generation). */
async function decideOne(op: Operation, prior: Prior, key: BizKey): Promise<Decided> {
  const recorded = prior.byKey.get(keyId(key)) ?? null;
  if (recorded) return { decision: decideRequeue(factsOf(op, key, recorded, null)), row: null };
  if (!op.options.execute) {
    const q = requeueSql.command(key, false);
    const row = (await op.db.query<RequeueRow>(q.sql, q.params))[0] ?? null;
    return { decision: decideRequeue(factsOf(op, key, null, row)), row };
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await op.db.transaction((conn) => requeueInTransaction(op, conn, key));
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (attempt < MAX_ATTEMPTS && (err instanceof GenerationMoved || (code !== undefined && RETRYABLE.has(code))))
        continue;
      throw schemaHint(err);
    }
  }
}

/** Claim the answer, read the row locked, decide, write, record (or forget) the answer, audit: one transaction. */
async function requeueInTransaction(op: Operation, conn: PoolConnection, key: BizKey): Promise<Decided> {
  const run: Run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T[];
  try {
    await run(requeueSql.claimOperation(op.digest, key, op.selector));
  } catch (err) {
    if ((err as { code?: string }).code !== 'ER_DUP_ENTRY') throw err;
    // Answered by a concurrent call (which has committed: our insert waited on it).
    const prior = (await run<RecordedRaw>(requeueSql.recordedOne(op.digest, key)))[0];
    if (!prior) throw new GenerationMoved('operation row vanished');
    return { decision: decideRequeue(factsOf(op, key, recordedOf(prior), null)), row: null };
  }
  const row = (await run<RequeueRow>(requeueSql.command(key, true)))[0] ?? null;
  const decision = decideRequeue(factsOf(op, key, null, row));
  if (decision.write) {
    const w = requeueSql.requeue(decision.write);
    const [res] = await conn.query(w.sql, w.params);
    if ((res as { affectedRows: number }).affectedRows !== 1)
      throw new GenerationMoved('the command changed between read and write');
  }
  // A temporary answer is audited but not kept, so the operation takes the command later.
  if (isTemporary(decision.code)) await run(requeueSql.forgetAnswer(op.digest, key));
  else await run(requeueSql.recordAnswer(op.digest, key, decision.code, decision.reason, decision.commandId));
  const expected = {
    ...key,
    selector: op.selector.text,
    states: op.mode === 'dead' ? ['DEAD'] : ['DEAD', 'FAILED'],
    reason: op.reasonFilter,
  };
  await run(
    requeueSql.audit({
      outcome: decision.code,
      reason: decision.reason,
      operationId: op.options.operationId,
      runId: op.runId,
      host: op.host,
      expected,
      observed: { row, written: writtenOf(decision) },
    }),
  );
  return { decision, row };
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
  ) {
    const q = requeueSql.completeOperation(op.digest);
    await op.db.query(q.sql, q.params);
  }
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

/** What a decision writes to the command, as evidence and audit show it. */
function writtenOf(d: RequeueDecision): Record<string, unknown> | null {
  return d.write
    ? {
        state: 'UNKNOWN',
        retryCount: 0,
        nextRetryAt: null,
        attempt: d.write.from.attempt,
        requestToken: d.write.from.requestToken,
        lastError: d.write.lastError,
      }
    : null;
}
