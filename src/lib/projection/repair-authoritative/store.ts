/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import { AnswerSnapshotError, buildAnswerSnapshot } from '../../answers/snapshot.js';
import type { Db } from '../../db/connect.js';
import { RowMoved } from '../../db/row-moved.js';
import type { Statement } from '../../db/statement.js';
import {
  type Authoritative,
  authSummary,
  decideRepair,
  envelopeAgainstFc,
  grantSummary,
  type ObservedLocal,
  type RepairDecision,
  repairEventId,
  type Triple,
  tripleJson,
  tripleOf,
} from './decide.js';
import type { RepairItem } from './input.js';
import { type AnswerWithGrantRaw, auditSql, fcSql, grantOf, type LocalRowRaw, projectionSql } from './sql.js';
import type { RepairDeps, RepairRunOptions } from './types.js';

const stmt = async <T>(db: Db, s: Statement) => db.query<T>(s.sql, s.params);

/** The local row of an answer at a school, typed; null when there is none. */
export async function readLocal(shDb: Db, answerUuid: string, schId: string): Promise<ObservedLocal | null> {
  const raw = (await stmt<LocalRowRaw>(shDb, projectionSql.readLocal(answerUuid, schId)))[0];
  return raw === undefined ? null : localOf(raw);
}

function localOf(r: LocalRowRaw): ObservedLocal {
  return {
    answerUuid: r.answer_uuid,
    schId: String(r.sch_id),
    formUuid: r.form_uuid,
    formVersion: String(r.form_version),
    revision: BigInt(r.answer_revision).toString(),
    hash: r.content_hash,
    isDeleted: Number(r.is_deleted) === 1,
    linkState: r.link_state,
    conflictFlag: Number(r.conflict_flag) === 1,
    projectionVersion: String(r.projection_version),
    retiredAt: r.retired_at,
    retireProofId: r.retire_proof_id,
  };
}

/**
 * Step 1 from FC, in one statement: the answer row's snapshot (fc.canon.v1) and the grant
 * of its form to the consumer at the school, both read now; or why there is no authoritative
 * snapshot (answer absent, other school, a row that cannot form a snapshot, no grant).
 */
async function readFromFc(fcDb: Db, item: RepairItem, o: RepairRunOptions): Promise<Authoritative> {
  const row = (
    await stmt<AnswerWithGrantRaw>(fcDb, fcSql.answerWithGrant(item.answerUuid, item.schId, o.consumerAppKey))
  )[0];
  if (row === undefined)
    return {
      kind: 'unavailable',
      code: 'ANSWER_NOT_AT_FC',
      detail: `FC has no answer ${item.answerUuid}; nothing written`,
    };
  if (String(row.sch_id) !== item.schId) {
    return {
      kind: 'unavailable',
      code: 'SCHOOL_MISMATCH',
      detail: `FC's answer ${item.answerUuid} belongs to school ${row.sch_id}, not ${item.schId}; nothing written`,
    };
  }
  let snapshot: { snapshotJson: string; contentHash: string };
  try {
    snapshot = buildAnswerSnapshot(row);
  } catch (err) {
    if (err instanceof AnswerSnapshotError)
      return { kind: 'unavailable', code: 'SNAPSHOT_INVALID', detail: `${err.message}; nothing written` };
    throw err;
  }
  const grant = grantOf(row);
  if (grant === null) {
    return {
      kind: 'unavailable',
      code: 'GRANT_MISSING',
      detail: `no grant of form ${row.form_uuid} to consumer ${o.consumerAppKey} at school ${item.schId}; nothing written`,
    };
  }
  const revision = BigInt(row.answer_revision).toString();
  return {
    kind: 'ready',
    consumerAppKey: o.consumerAppKey,
    grant,
    snapshot: {
      source: 'fc',
      eventId: repairEventId(o.proofId, o.consumerAppKey, item.schId, item.answerUuid, revision, snapshot.contentHash),
      answerUuid: row.answer_uuid,
      schId: item.schId,
      formUuid: row.form_uuid,
      formVersion: String(row.form_version),
      revision,
      contentHash: snapshot.contentHash,
      isDeleted: Number(row.is_deleted) === 1,
      // The version of the grant read with the answer, so equal by construction here; the check
      // decides for an --envelope, which carries the sender's grant version.
      grantVersion: String(grant.grant_version),
      snapshotJson: snapshot.snapshotJson,
    },
  };
}

interface Attempt {
  readonly decision: RepairDecision;
  readonly observed: ObservedLocal | null;
  readonly authoritative: Authoritative;
  readonly written: boolean;
  /** the write was tried and lost a race (0 rows matched, or a duplicate key) */
  readonly raced: boolean;
}

/** The audit row of a decision (every decision of an executed run, refusals included). */
function auditOf(
  item: RepairItem,
  o: RepairRunOptions,
  expected: Triple,
  at: Omit<Attempt, 'written'> & { attempt: number },
): Statement {
  return auditSql.insert({
    outcome: at.decision.result,
    reason: at.decision.reason,
    proofId: o.proofId,
    runId: o.runId,
    host: o.host,
    schId: item.schId,
    answerUuid: item.answerUuid,
    expectedJson: JSON.stringify(tripleJson(expected)),
    observedJson: JSON.stringify({
      code: at.decision.code,
      attempt: at.attempt,
      raced: at.raced,
      write: at.decision.write?.kind ?? null,
      local: at.observed,
      authoritative: authSummary(at.authoritative),
      grant: grantSummary(at.authoritative),
    }),
  });
}

/**
 * One attempt: read, decide and (with `execute`) write with its audit row in one SH transaction.
 * A lost race rolls back and is LOCAL_CHANGED, with the row re-read (and its own audit row).
 */
export async function attemptOnce(
  item: RepairItem,
  expected: Triple,
  attempt: number,
  o: RepairRunOptions,
  deps: RepairDeps,
): Promise<Attempt> {
  const fromFc = await readFromFc(deps.fcDb, item, o);
  const authoritative: Authoritative = o.envelope ? envelopeAgainstFc(o.envelope, fromFc) : fromFc;
  const observed = await readLocal(deps.shDb, item.answerUuid, item.schId);
  const decision = decideRepair(authoritative, expected, observed, o.execute ? 'execute' : 'dry-run');
  if (!o.execute) return { decision, observed, authoritative, written: false, raced: false };

  const write = decision.write;
  try {
    await deps.shDb.transaction(async (conn: PoolConnection) => {
      if (write && authoritative.kind === 'ready') {
        const s =
          write.kind === 'update'
            ? projectionSql.update(authoritative.snapshot, write.expected, o.proofId)
            : projectionSql.insert(authoritative.snapshot, o.proofId);
        const [res] = await conn.query(s.sql, s.params);
        if ((res as { affectedRows: number }).affectedRows !== 1) throw new RowMoved();
      }
      const a = auditOf(item, o, expected, { decision, observed, authoritative, raced: false, attempt });
      await conn.query(a.sql, a.params);
    });
    return { decision, observed, authoritative, written: write !== undefined, raced: false };
  } catch (err) {
    const duplicate = (err as { code?: string }).code === 'ER_DUP_ENTRY';
    if (!(err instanceof RowMoved) && !duplicate) throw err;
  }
  // Lost the race: the transaction rolled back (its audit row with it). The expectation no longer
  // holds: LOCAL_CHANGED, with the row as it is now; the caller re-reads and decides again.
  const again = await readLocal(deps.shDb, item.answerUuid, item.schId);
  const now = tripleOf(again);
  const redecided: RepairDecision = {
    result: 'LOCAL_CHANGED',
    code: 'EXPECTED_MISMATCH',
    reason: `EXPECTED_MISMATCH: the local row changed between the read and the write (now ${now.revision === null ? 'missing' : `revision ${now.revision}, hash ${now.hash.slice(0, 12)}…, isDeleted ${now.isDeleted ? 1 : 0}`}); nothing written`,
  };
  const a = auditOf(item, o, expected, { decision: redecided, observed: again, authoritative, raced: true, attempt });
  await deps.shDb.execute(a.sql, a.params);
  return { decision: redecided, observed: again, authoritative, written: false, raced: true };
}
