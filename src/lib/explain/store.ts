/**
 * Executes `fcctl explain`'s statements (sql.ts) and maps their rows to the plain facts of
 * types.ts. Reads only, each its own short statement: no transaction is opened, none spans I/O.
 */
import type { AnswerRow } from '../answers/sql.js';
import type { Db } from '../db/connect.js';
import { explainSql } from './sql.js';
import type {
  ApplyCommandFacts,
  AuditRow,
  ClaimHolder,
  GrantFacts,
  OutboxRow,
  ProjectionFacts,
  ReconcileFacts,
} from './types.js';

type Row = Record<string, unknown>;
const str = (v: unknown): string => String(v);
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const bool = (v: unknown): boolean => Number(v) === 1;

export async function readAnswer(db: Db, answerUuid: string): Promise<AnswerRow | null> {
  const s = explainSql.answer(answerUuid);
  return (await db.query<AnswerRow>(s.sql, s.params))[0] ?? null;
}

function outboxRowOf(r: Row): Omit<OutboxRow, 'claimHolder'> {
  return {
    eventId: str(r['event_id']),
    eventType: str(r['event_type']),
    consumerAppKey: str(r['consumer_app_key']),
    schId: str(r['consumer_school_id']),
    grantVersion: str(r['grant_version']),
    formUuid: str(r['form_uuid']),
    revision: str(r['answer_revision']),
    isDeleted: bool(r['is_deleted']),
    contentHash: str(r['content_hash']),
    generation: strOrNull(r['replay_op_digest']),
    state: str(r['state']),
    retryCount: Number(r['retry_count']),
    lastError: strOrNull(r['last_error']),
    nextRetryAt: strOrNull(r['next_retry_at']),
    nextRetryInSeconds: numOrNull(r['next_retry_in']),
    brokerAcceptedAt: strOrNull(r['broker_accepted_at']),
    acceptedAgoSeconds: numOrNull(r['accepted_ago']),
    consumerAppliedAt: strOrNull(r['consumer_applied_at']),
    consumerOutcome: strOrNull(r['consumer_outcome']),
    claimOwner: strOrNull(r['claim_owner']),
    claimExpiresAt: strOrNull(r['claim_expires_at']),
    claimLive: bool(r['claim_live']),
    createTime: str(r['create_time']),
  };
}

/** The outbox rows of an answer, each claim's holder looked up in the fleet registry. */
export async function readOutbox(
  db: Db,
  answerUuid: string,
  only: { consumer?: string; schId?: string },
): Promise<OutboxRow[]> {
  const s = explainSql.outbox(answerUuid, only);
  const rows = (await db.query<Row>(s.sql, s.params)).map(outboxRowOf);
  const holders = new Map<string, ClaimHolder | null>();
  for (const r of rows)
    if (r.claimOwner !== null && !holders.has(r.claimOwner))
      holders.set(r.claimOwner, await readClaimHolder(db, r.claimOwner));
  return rows.map((r) => ({ ...r, claimHolder: r.claimOwner === null ? null : (holders.get(r.claimOwner) ?? null) }));
}

/** Host and pid of a claim owner `host:pid:random` (lib/db/claim-owner.ts), or null for another shape. */
export function ownerProcess(owner: string): { host: string; pid: number } | null {
  const m = /^(.*):(\d{1,9}):[0-9a-f]+$/.exec(owner);
  return m ? { host: m[1]!, pid: Number(m[2]) } : null;
}

async function readClaimHolder(db: Db, owner: string): Promise<ClaimHolder | null> {
  const p = ownerProcess(owner);
  if (p === null) return null;
  const s = explainSql.claimHolders(p.host, p.pid);
  const r = (await db.query<Row>(s.sql, s.params))[0];
  if (r === undefined) return null;
  return {
    workerId: str(r['worker_id']),
    host: str(r['host']),
    pid: Number(r['pid']),
    state: str(r['state']),
    lastBeatAt: str(r['last_beat_at']),
    stale: bool(r['stale']),
    gone: bool(r['gone']),
  };
}

/** The outbox row's answer, consumer and school, by event id; null when there is none. */
export async function readEvent(
  db: Db,
  eventId: string,
): Promise<{ answerUuid: string; consumerAppKey: string; schId: string } | null> {
  const s = explainSql.event(eventId);
  const r = (await db.query<Row>(s.sql, s.params))[0];
  return r === undefined
    ? null
    : {
        answerUuid: str(r['answer_uuid']),
        consumerAppKey: str(r['consumer_app_key']),
        schId: str(r['consumer_school_id']),
      };
}

export async function readGrants(
  db: Db,
  formUuid: string,
  schIds: readonly string[],
  consumer?: string,
): Promise<GrantFacts[]> {
  if (schIds.length === 0) return [];
  const s = explainSql.grants(formUuid, schIds, consumer);
  return (await db.query<Row>(s.sql, s.params)).map((r) => ({
    formUuid,
    consumerAppKey: str(r['consumer_app_key']),
    schId: str(r['consumer_school_id']),
    grantVersion: str(r['grant_version']),
    read: bool(r['read_allowed']),
    subscribe: bool(r['subscribe_allowed']),
    push: bool(r['push_allowed']),
    revoked: bool(r['revoked']),
  }));
}

export async function appKeyKnown(db: Db, appKey: string): Promise<boolean> {
  const s = explainSql.appKey(appKey);
  return (await db.query<Row>(s.sql, s.params)).length > 0;
}

export async function readProjections(sh: Db, answerUuid: string, schId?: string): Promise<ProjectionFacts[]> {
  const s = explainSql.projections(answerUuid, schId);
  return (await sh.query<Row>(s.sql, s.params)).map((r) => ({
    schId: str(r['sch_id']),
    formUuid: str(r['form_uuid']),
    revision: str(r['answer_revision']),
    contentHash: str(r['content_hash']),
    isDeleted: bool(r['is_deleted']),
    linkState: str(r['link_state']),
    applyId: strOrNull(r['apply_id']),
    flowGuid: strOrNull(r['flow_guid']),
    conflictFlag: bool(r['conflict_flag']),
    projectionVersion: str(r['projection_version']),
    createTime: strOrNull(r['create_time']),
    updateTime: strOrNull(r['update_time']),
    retiredAt: strOrNull(r['retired_at']),
    retireProofId: strOrNull(r['retire_proof_id']),
    lastRepairProofId: strOrNull(r['last_repair_proof_id']),
    lastRepairedAt: strOrNull(r['last_repaired_at']),
  }));
}

export async function readAudit(sh: Db, answerUuid: string): Promise<AuditRow[]> {
  const s = explainSql.audit(answerUuid);
  return (await sh.query<Row>(s.sql, s.params)).map((r) => ({
    action: str(r['action']),
    outcome: str(r['outcome']),
    reason: strOrNull(r['reason']),
    proofId: strOrNull(r['proof_id']),
    runId: str(r['run_id']),
    host: str(r['host']),
    schId: strOrNull(r['sch_id']),
    createTime: str(r['create_time']),
  }));
}

/** The pair's counts from a finished task's result_json, null when it has none. */
function countsOf(resultJson: unknown): Record<string, number> | null {
  if (typeof resultJson !== 'string') return null;
  try {
    const counts = (JSON.parse(resultJson) as { counts?: unknown }).counts;
    return counts && typeof counts === 'object' ? (counts as Record<string, number>) : null;
  } catch {
    return null;
  }
}

/** The newest run that registered the pair (or the run named), without the answer's category. */
export async function readReconcileTask(
  sh: Db,
  schId: string,
  formUuid: string,
  runId: string | null,
): Promise<Omit<ReconcileFacts, 'category' | 'categorySource'> | null> {
  const s =
    runId === null ? explainSql.lastReconcile(schId, formUuid) : explainSql.reconcileTask(runId, schId, formUuid);
  const r = (await sh.query<Row>(s.sql, s.params))[0];
  if (r === undefined) return null;
  return {
    runId: str(r['run_id']),
    schId: str(r['sch_id']),
    formUuid: str(r['form_uuid']),
    state: str(r['state']),
    finishedAt: strOrNull(r['finished_at']),
    counts: countsOf(r['result_json']),
  };
}

/** The apply command of a business key and the service_apply mirror of its status. */
export async function readApplyByKey(sh: Db, bizType: string, bizId: string): Promise<ApplyCommandFacts | null> {
  const a = explainSql.serviceApplyByKey(bizType, bizId);
  const c = explainSql.applyCommand(bizType, bizId);
  const apply = (await sh.query<Row>(a.sql, a.params))[0];
  const cmd = (await sh.query<Row>(c.sql, c.params))[0];
  if (cmd === undefined && apply === undefined) return null;
  return {
    id: strOrNull(cmd?.['id']),
    bizType,
    bizId,
    state: cmd === undefined ? 'NO_COMMAND' : str(cmd['state']),
    lastBranch: strOrNull(cmd?.['last_branch']),
    remoteStatus: numOrNull(cmd?.['remote_status']),
    remoteInstanceId: strOrNull(cmd?.['remote_instance_id']),
    retryCount: Number(cmd?.['retry_count'] ?? 0),
    nextRetryAt: strOrNull(cmd?.['next_retry_at']),
    nextRetryInSeconds: numOrNull(cmd?.['next_retry_in']),
    lastError: strOrNull(cmd?.['last_error']),
    updateTime: strOrNull(cmd?.['update_time']),
    flowStatus: numOrNull(apply?.['flow_status']),
  };
}

/** The business key of a projection's apply id (service_apply by id), null when there is none. */
export async function readApplyKey(sh: Db, applyId: string): Promise<{ bizType: string; bizId: string } | null> {
  const s = explainSql.serviceApplyById(applyId);
  const r = (await sh.query<Row>(s.sql, s.params))[0];
  return r === undefined ? null : { bizType: str(r['biz_type']), bizId: str(r['biz_id']) };
}
