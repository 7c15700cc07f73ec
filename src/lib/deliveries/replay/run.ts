/**
 * `deliveries replay`, the I/O: read the facts, decide (`decide.ts`), and — with `execute` — record
 * the answer and apply the row's write in ONE short transaction. The operation row is inserted
 * first and acts as the idempotency lock: a second call with the same operation id (or a
 * concurrent one, which waits on that row's lock until the first commits) gets a duplicate key
 * and returns the recorded answer, writing nothing.
 */
import { runOrdered, type OrderedSummary } from '../../batch/ordered.js';
import type { PoolConnection } from 'mysql2/promise';
import type { Progress } from '../../cli/output.js';
import type { Db } from '../../db/connect.js';
import type { Statement } from '../../db/statement.js';
import type { DeliveryState, GrantRow } from '../types.js';
import {
  decideReplay,
  isRefused,
  opDigest,
  type RecordedAnswer,
  type ReplayCode,
  type ReplayDecision,
  type ReplayRequest,
  type ReplayResult,
  type ReplayRow,
} from './decide.js';
import { failedOperationId } from '../failed/decide.js';
import { selectFailed } from '../failed/run.js';
import { type FailedReplay, MAX_REPLAY_ITEMS, type ReplayItem } from './input.js';
import { replaySql } from './sql.js';

type Run = <T>(q: Statement) => Promise<T[]>;

interface RecordedRaw {
  answer_uuid: string;
  consumer_app_key: string;
  consumer_school_id: string | number;
  expected_revision: string | number;
  code: string;
  reason: string;
  event_id: string | null;
  row_state: DeliveryState | null;
  row_last_error: string | null;
}

function recordedOf(raw: RecordedRaw | undefined): RecordedAnswer | null {
  if (!raw) return null;
  if (raw.code === '')
    throw new Error(`replay operation recorded without an answer (op for answer ${raw.answer_uuid})`);
  return {
    answerUuid: raw.answer_uuid,
    consumerAppKey: raw.consumer_app_key,
    consumerSchoolId: String(raw.consumer_school_id),
    expectedRevision: String(raw.expected_revision),
    code: raw.code as ReplayCode,
    reason: raw.reason,
    eventId: raw.event_id,
    rowState: raw.row_state,
    rowLastError: raw.row_last_error,
  };
}

/** The facts of a request, read with `run` (inside the transaction, `lock` locks the row). */
async function readFacts(
  run: Run,
  request: ReplayRequest,
  lock: boolean,
): Promise<{ newest: ReplayRow | null; grant: GrantRow | null }> {
  const newest = (await run<ReplayRow>(replaySql.newestRow(request, lock)))[0] ?? null;
  const grant = newest
    ? ((
        await run<GrantRow>(replaySql.grant(newest.form_uuid, String(request.consumerSchoolId), request.consumerAppKey))
      )[0] ?? null)
    : null;
  return { newest, grant };
}

/** The guarded row write matched nothing although the row was locked: re-read and decide again. */
class GenerationMoved extends Error {}

const RETRYABLE = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);
const MAX_ATTEMPTS = 3;

/**
 * The answer to one request. Without `execute`: what it would answer (a recorded answer for the
 * operation, or a fresh decision), nothing written or recorded. With `execute`: one short
 * transaction — claim the operation, lock and read the newest row, read the grant, decide, apply
 * the conditional write, record the answer. Deadlocks and lock timeouts retry (bounded).
 * @example await replayOne(db, { answerUuid, consumerAppKey: '100100', consumerSchoolId: '5', expectedRevision: '3', opDigest: opDigest('inc-7') }, true)
 */
export async function replayOne(db: Db, request: ReplayRequest, execute: boolean): Promise<ReplayDecision> {
  if (!execute) {
    const run: Run = (q) => db.query(q.sql, q.params);
    const prior = recordedOf((await run<RecordedRaw>(replaySql.recorded(request.opDigest, false)))[0]);
    if (prior) return decideReplay({ request, newest: null, grant: null, prior });
    return decideReplay({ request, ...(await readFacts(run, request, false)), prior: null });
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction((conn) => replayInTransaction(conn, request));
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (attempt < MAX_ATTEMPTS && (err instanceof GenerationMoved || (code !== undefined && RETRYABLE.has(code))))
        continue;
      throw err;
    }
  }
}

async function replayInTransaction(conn: PoolConnection, request: ReplayRequest): Promise<ReplayDecision> {
  const run: Run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T[];
  try {
    await run(replaySql.claimOperation(request));
  } catch (err) {
    if ((err as { code?: string }).code !== 'ER_DUP_ENTRY') throw err;
    // Recorded by an earlier or concurrent call (which has committed: our insert waited on it).
    const prior = recordedOf((await run<RecordedRaw>(replaySql.recorded(request.opDigest, true)))[0]);
    if (!prior) throw new GenerationMoved('operation row vanished');
    return decideReplay({ request, newest: null, grant: null, prior });
  }
  const decision = decideReplay({ request, ...(await readFacts(run, request, true)), prior: null });
  if (decision.code === 'OPERATION_CONFLICT') throw new Error('unreachable: conflict without a recorded answer');
  if (decision.write) {
    const w = replaySql.write(decision.write);
    const [res] = await conn.query(w.sql, w.params);
    if ((res as { affectedRows: number }).affectedRows !== 1)
      throw new GenerationMoved('the row changed between read and write');
  }
  await run(replaySql.recordAnswer(request.opDigest, decision.code, decision.reason, decision.deliveryId));
  return decision;
}

export interface BatchOptions {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly execute: boolean;
  readonly concurrency: number;
  readonly maxSeconds: number;
}

export interface BatchDeps {
  readonly db: Db;
  readonly signal: AbortSignal;
  readonly clock: () => number;
  /** each result, in input order */
  readonly onResult?: (result: ReplayResult) => void;
}

export type BatchSummary = OrderedSummary<ReplayResult>;

/**
 * Replays items with at most `concurrency` at once (p-limit); results are reported in input
 * order. On SIGINT/SIGTERM or `maxSeconds` no new item starts, the started ones finish. A
 * database error stops the run the same way and is returned once the started items settle.
 * @example const { results } = await runReplayBatch(items, { consumerAppKey: '100100', consumerSchoolId: '5', execute: false, concurrency: 4, maxSeconds: 3600 }, { db, signal, clock: Date.now })
 */
export async function runReplayBatch(
  items: readonly ReplayItem[],
  options: BatchOptions,
  deps: BatchDeps,
): Promise<BatchSummary> {
  return runOrdered(items, options, deps, async (it) => {
    const request: ReplayRequest = {
      answerUuid: it.answerUuid,
      consumerAppKey: options.consumerAppKey,
      consumerSchoolId: options.consumerSchoolId,
      expectedRevision: it.expectedRevision,
      opDigest: opDigest(it.operationId),
    };
    const d = await replayOne(deps.db, request, options.execute);
    const note = 'stillFailed' in d ? d.stillFailed : undefined;
    const again = note === undefined ? { stillFailed: false } : { stillFailed: true, note };
    return {
      line: it.line,
      answerUuid: it.answerUuid,
      expectedRevision: it.expectedRevision,
      operationId: it.operationId,
      code: d.code,
      reason: d.reason,
      eventId: d.eventId,
      repeated: d.repeated,
      ...again,
    };
  });
}

/**
 * `deliveries replay` as a whole: the batch run with its progress (a `--from` batch only), each
 * result handed to `onResult`.
 * @example const end = await replayDeliveries(items, options, { db, signal, clock, progress: null })
 */
export async function replayDeliveries(
  items: readonly ReplayItem[],
  options: BatchOptions,
  deps: BatchDeps & { readonly progress: Progress | null },
): Promise<BatchSummary> {
  let end: BatchSummary;
  try {
    end = await runReplayBatch(items, options, {
      ...deps,
      onResult: (r) => {
        deps.progress?.record(isRefused(r.code) ? r.code : undefined);
        deps.onResult?.(r);
      },
    });
  } finally {
    deps.progress?.stop();
  }
  return end;
}

/**
 * The requests of `deliveries replay --failed`: every matching FAILED/DEAD row of the consumer and
 * school that no newer revision of its answer superseded (replay would answer it REVISION_MISMATCH),
 * newest first, at most {@link MAX_REPLAY_ITEMS} (`more` when others match), each asking for the
 * row's own revision under the operation id `P:<eventId>`; `line` is its place in the list.
 * `superseded` counts the rows left out as superseded.
 * @example const { items } = await failedReplayItems(db, '100100', '5', { filter: ALL_FAILED, operationPrefix: 'INC-42' })
 */
export async function failedReplayItems(
  db: Db,
  consumerAppKey: string,
  consumerSchoolId: string,
  failed: FailedReplay,
): Promise<{ items: ReplayItem[]; more: boolean; superseded: number }> {
  const { rows, more, superseded } = await selectFailed(
    db,
    consumerAppKey,
    consumerSchoolId,
    failed.filter,
    MAX_REPLAY_ITEMS,
  );
  const items = rows.map((r, i) => ({
    line: i + 1,
    answerUuid: r.answerUuid,
    expectedRevision: r.answerRevision,
    operationId: failedOperationId(failed.operationPrefix, r.eventId),
  }));
  return { items, more, superseded };
}
