/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../../db/connect.js';
import type { Statement } from '../../db/statement.js';
import type { DeliveryState, GrantRow } from '../types.js';
import {
  decideReplay,
  type RecordedAnswer,
  type ReplayCode,
  type ReplayDecision,
  type ReplayRequest,
  type ReplayRow,
} from './decide.js';
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
