/**
 * SQL of `flow_apply_command` (SH side): the claim, the guarded writes and the scan. Builders
 * return `{sql, params}` (tested as text); the executors run them on the real database.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../db/connect.js';
import type { Statement } from '../db/statement.js';
import type { CommandWrite } from './decide.js';
import { type CommandGeneration, type ApplyCommandRow, cutText, type MirrorAtClaim } from './types.js';

/** Columns resolve needs; never `SELECT *`. */
export const ROW_COLUMNS = 'id, biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, attempt, state, retry_count, create_time';

/**
 * What resolve takes, against the database's NOW(): UNKNOWN and FAILED rows whose retry time has
 * come (or is unset), PENDING rows created more than `grace` seconds ago (their own sender had its
 * chance); only rows of the configured app key (fcctl never signs for another app); not under a
 * live lease of someone else — an owner without an expiry counts as expired, so no row can be
 * stuck forever (seed 003 §10.6).
 */
export function claimableWhere(appKey: string, graceSeconds: number): Statement {
  return {
    sql:
      "((state IN ('UNKNOWN', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= NOW())) " +
      "OR (state = 'PENDING' AND create_time <= NOW() - INTERVAL ? SECOND)) " +
      'AND apply_app_key = ? AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < NOW())',
    params: [graceSeconds, appKey],
  };
}

/**
 * The claim's SELECT: oldest id first (no class of rows starves another), locked rows skipped,
 * after `afterId` — the run's cursor, so a claim walks the primary key from where the last one
 * stopped instead of from the table's start through every DONE row (seed 003: claims must not
 * grow with history).
 */
export function claimSelect(appKey: string, graceSeconds: number, afterId: string, limit: number): Statement {
  const w = claimableWhere(appKey, graceSeconds);
  return { sql: `SELECT ${ROW_COLUMNS} FROM flow_apply_command WHERE ${w.sql} AND id > ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`, params: [...w.params, afterId, limit] };
}

/**
 * Where a run's claims start: just before the smallest id in a state resolve can take, read
 * from `idx_apply_command_due` alone (the backlog's entries, never the DONE rows; no lock).
 * `'0'` when there is none.
 */
export function claimStartSelect(): Statement {
  return {
    sql: "SELECT MIN(id) AS id FROM flow_apply_command FORCE INDEX (idx_apply_command_due) WHERE state IN ('UNKNOWN', 'FAILED', 'PENDING')",
    params: [],
  };
}

export async function claimStart(db: Db): Promise<string> {
  const q = claimStartSelect();
  const min = (await db.query<{ id: string | number | null }>(q.sql, q.params))[0]?.id;
  return min === null || min === undefined ? '0' : String(BigInt(min) - 1n);
}

export function claimUpdate(owner: string, leaseSeconds: number, ids: readonly string[]): Statement {
  return { sql: 'UPDATE flow_apply_command SET claim_owner = ?, claim_expires_at = NOW() + INTERVAL ? SECOND WHERE id IN (?)', params: [owner, leaseSeconds, ids] };
}

/**
 * The mirrored status of claimed rows, as the DONE write will compare it. A plain read, apart from
 * the locking claim SELECT: locking service_apply too would make the service's callbacks wait on
 * fcctl, and SKIP LOCKED would then skip commands for a lock on their mirror row.
 */
export function mirrorSelect(ids: readonly string[]): Statement {
  return {
    sql: 'SELECT c.id, s.id AS s_id, s.flow_status FROM flow_apply_command c LEFT JOIN service_apply s ON s.biz_type = c.biz_type AND s.biz_id = c.biz_id WHERE c.id IN (?)',
    params: [ids],
  };
}

/**
 * Claims up to `limit` rows for `owner` with a lease in one short transaction (`FOR UPDATE SKIP
 * LOCKED`: concurrent resolvers never wait on or share a row), with the mirrored status each row
 * is settled against. No HTTP happens inside it.
 */
export async function claimRows(db: Db, owner: string, appKey: string, graceSeconds: number, afterId: string, limit: number, leaseSeconds: number): Promise<ApplyCommandRow[]> {
  return db.transaction(async (conn: PoolConnection) => {
    const sel = claimSelect(appKey, graceSeconds, afterId, limit);
    const [rows] = await conn.query(sel.sql, sel.params);
    const claimed = rows as ApplyCommandRow[];
    if (claimed.length === 0) return claimed;
    const ids = claimed.map((r) => String(r.id));
    const up = claimUpdate(owner, leaseSeconds, ids);
    await conn.query(up.sql, up.params);
    const m = mirrorSelect(ids);
    const [mirrors] = await conn.query(m.sql, m.params);
    const byId = new Map<string, MirrorAtClaim>();
    for (const r of mirrors as Array<{ id: string | number; s_id: string | number | null; flow_status: number | null }>) {
      byId.set(String(r.id), { exists: r.s_id !== null, status: r.flow_status === null ? null : Number(r.flow_status), id: r.s_id === null ? null : String(r.s_id) });
    }
    return claimed.map((r) => ({ ...r, mirror: byId.get(String(r.id)) ?? { exists: false, status: null, id: null } }));
  });
}

/** Claimable rows without claiming them, for `--dry-run` (keyset on id so it pages forward). */
export function peekSelect(appKey: string, graceSeconds: number, afterId: string, limit: number): Statement {
  const w = claimableWhere(appKey, graceSeconds);
  return { sql: `SELECT ${ROW_COLUMNS} FROM flow_apply_command WHERE ${w.sql} AND id > ? ORDER BY id LIMIT ?`, params: [...w.params, afterId, limit] };
}

/** Rows that would be claimable but belong to another apply app key: reported, never touched. */
export function otherAppKeySelect(appKey: string, graceSeconds: number): Statement {
  const w = claimableWhere(appKey, graceSeconds);
  // Same rule with the app key condition turned round.
  return { sql: `SELECT COUNT(*) AS n FROM flow_apply_command WHERE ${w.sql.replace('apply_app_key = ?', 'apply_app_key <> ?')}`, params: w.params };
}

/**
 * The guard of every write after the claim (SPEC §2): still ours, and the same version of the
 * row (state and retry count) as claimed. A stale worker's write matches nothing.
 */
function guard(owner: string, gen: CommandGeneration, alias = ''): Statement {
  const a = alias ? `${alias}.` : '';
  return {
    sql: `${a}id = ? AND ${a}claim_owner = ? AND ${a}state = ? AND ${a}retry_count = ? AND ${a}attempt = ? AND ${a}request_token = ?`,
    params: [gen.id, owner, gen.state, gen.retryCount, gen.attempt, gen.requestToken],
  };
}

const CLEAR_CLAIM = 'claim_owner = NULL, claim_expires_at = NULL';

/**
 * One write as one statement. A `done` updates the command and mirrors the status into
 * `service_apply.flow_status` in a single multi-table UPDATE: atomic (one implicit transaction),
 * and the mirror happens only when the command row passes the guard. The mirror is written only
 * into the service_apply row that existed at claim (by its id when read) and only while its
 * status is still the one read then (`<=>`: NULL too): a status the service's flow callbacks
 * wrote meanwhile is newer than our lookup, and a row the service inserted since is its own. No
 * row at claim: the command alone. A second, read-only join (`s2`) tells a changed row from a
 * deleted one, so last_error says which.
 */
export function compileWrite(owner: string, w: CommandWrite): Statement {
  const g = guard(owner, w.gen);
  switch (w.kind) {
    case 'done': {
      const c = guard(owner, w.gen, 'c');
      const { claimed } = w.mirror;
      // last_branch is the branch that settled it; a DONE by lookup clears one left from before
      // (a requeued row's old answer would otherwise read as the reason it is DONE).
      const settle = "c.state = 'DONE', c.remote_status = ?, c.remote_instance_id = ?, c.last_branch = ?, ";
      const settleParams = [w.status, w.instanceId, w.branch];
      const rest = 'c.next_retry_at = NULL, c.claim_owner = NULL, c.claim_expires_at = NULL, c.update_time = NOW()';
      if (!claimed.exists) {
        return { sql: `UPDATE flow_apply_command c SET ${settle}c.last_error = ?, ${rest} WHERE ${c.sql}`, params: [...settleParams, w.note, ...c.params] };
      }
      const byId = claimed.id === undefined || claimed.id === null ? '' : 's.id = ? AND ';
      const byId2 = claimed.id === undefined || claimed.id === null ? 's2.biz_type = c.biz_type AND s2.biz_id = c.biz_id' : 's2.id = ?';
      const idParams = claimed.id === undefined || claimed.id === null ? [] : [claimed.id];
      return {
        sql:
          `UPDATE flow_apply_command c LEFT JOIN service_apply s ON ${byId}s.biz_type = c.biz_type AND s.biz_id = c.biz_id AND s.flow_status <=> ? ` +
          `LEFT JOIN service_apply s2 ON ${byId2} ` +
          `SET ${settle}c.last_error = CASE WHEN s.id IS NOT NULL THEN ? WHEN s2.id IS NULL THEN ? ELSE ? END, ${rest}, s.flow_status = ?, s.update_time = NOW() ` +
          `WHERE ${c.sql}`,
        params: [...idParams, claimed.status, ...idParams, ...settleParams, w.note, w.mirror.deletedNote, w.mirror.changedNote, w.mirror.status, ...c.params],
      };
    }
    case 'fail':
      return {
        sql:
          `UPDATE flow_apply_command SET state = ?, retry_count = ?, next_retry_at = ${w.backoffSeconds === null ? 'NULL' : 'NOW() + INTERVAL ? SECOND'}, ` +
          `last_error = ?, ${CLEAR_CLAIM}, update_time = NOW() WHERE ${g.sql}`,
        params: [w.state, w.retryCount, ...(w.backoffSeconds === null ? [] : [w.backoffSeconds]), w.lastError, ...g.params],
      };
    case 'dead':
      return {
        sql: `UPDATE flow_apply_command SET state = 'DEAD', last_branch = ?, last_error = ?, next_retry_at = NULL, ${CLEAR_CLAIM}, update_time = NOW() WHERE ${g.sql}`,
        params: [w.branch, w.lastError, ...g.params],
      };
    case 'release':
      return { sql: `UPDATE flow_apply_command SET ${CLEAR_CLAIM} WHERE ${g.sql}`, params: g.params };
  }
}

/**
 * What the mirror of a DONE write did: `written`; `missing` (no service_apply row at claim:
 * nothing written, whatever was inserted since); `changed` (the row's status is no longer the
 * one read at claim); `deleted` (the row read at claim is gone).
 */
export type MirrorOutcome = 'written' | 'missing' | 'changed' | 'deleted';

/** What a write did: `stale` when the guard matched nothing (the row moved on without us). */
export type WriteOutcome = { readonly kind: 'written'; readonly mirror: MirrorOutcome | null } | { readonly kind: 'stale' };

/** The note a DONE write left, read back to tell a changed mirror row from a deleted one. */
export function lastErrorSelect(id: string): Statement {
  return { sql: 'SELECT last_error FROM flow_apply_command WHERE id = ?', params: [id] };
}

/**
 * Executes one write (one statement). A `done` matches the command row and, when it still holds
 * the status read at claim, the service_apply row (the connection counts matched rows,
 * FOUND_ROWS): 0 stale, 1 not mirrored, 2 mirrored. Not mirrored over a row that existed at
 * claim: the statement chose the changed or the deleted note; `reader` reads which back (rare:
 * only then), without one it is reported as changed.
 */
export async function applyWrite(
  db: { execute(sql: string, params: unknown[]): Promise<{ affectedRows: number }> },
  owner: string,
  w: CommandWrite,
  reader?: { query<T>(sql: string, params?: readonly unknown[]): Promise<T[]> },
): Promise<WriteOutcome> {
  const { sql, params } = compileWrite(owner, w);
  const { affectedRows } = await db.execute(sql, params);
  if (affectedRows === 0) return { kind: 'stale' };
  if (w.kind !== 'done') return { kind: 'written', mirror: null };
  if (!w.mirror.claimed.exists) return { kind: 'written', mirror: 'missing' };
  if (affectedRows >= 2) return { kind: 'written', mirror: 'written' };
  if (reader === undefined) return { kind: 'written', mirror: 'changed' };
  const q = lastErrorSelect(w.gen.id);
  const note = (await reader.query<{ last_error: string | null }>(q.sql, q.params))[0]?.last_error;
  return { kind: 'written', mirror: note === w.mirror.deletedNote ? 'deleted' : 'changed' };
}

/** The audit action of every requeue decision (`fc_reconcile_audit.action`). */
export const REQUEUE_AUDIT_ACTION = 'APPLY_REQUEUE';

/** One `fc_reconcile_audit` row of a requeue decision (no school or answer: a command has neither). */
export interface RequeueAuditRow {
  readonly outcome: string;
  /** `fc_reconcile_audit.reason` is VARCHAR(255): cut to fit */
  readonly reason: string;
  /** the operation id: what authorised the change, as a proof id does for a repair */
  readonly operationId: string;
  readonly runId: string;
  readonly host: string;
  readonly expected: unknown;
  readonly observed: unknown;
}

const REQUEUE_ROW_COLUMNS =
  'id, biz_type, biz_id, state, retry_count, attempt, request_token, last_error, last_branch, remote_status, remote_instance_id, claim_owner, ' +
  'CAST(claim_expires_at AS CHAR) AS claim_expires_at, (claim_owner IS NOT NULL AND claim_expires_at IS NOT NULL AND claim_expires_at >= NOW()) AS claim_live';

/**
 * SQL of `apply-command requeue`. The write is conditional on the generation read (state, retry
 * count, attempt, request token) and on no live claim, inside a transaction that holds the row.
 * @example const { sql, params } = requeueSql.command({ bizType: 'honor_apply', bizId: 'A-1' }, true)
 */
export const requeueSql = {
  /** The command of a business key; `lock` adds `FOR UPDATE` (no resolver can claim it meanwhile). */
  command: (key: { bizType: string; bizId: string }, lock: boolean): Statement => ({
    sql: `SELECT ${REQUEUE_ROW_COLUMNS} FROM flow_apply_command WHERE biz_type = ? AND biz_id = ?${lock ? ' FOR UPDATE' : ''}`,
    params: [key.bizType, key.bizId],
  }),

  /** One page of DEAD commands (of one reason code when given), by id. No lock: each is re-read locked. */
  deadKeys: (reason: string | null, afterId: string, limit: number): Statement => ({
    sql:
      "SELECT id, biz_type, biz_id FROM flow_apply_command WHERE state = 'DEAD'" +
      `${reason === null ? '' : " AND SUBSTRING_INDEX(last_error, ':', 1) = ?"} AND id > ? ORDER BY id LIMIT ?`,
    params: [...(reason === null ? [] : [reason]), afterId, limit],
  }),

  /**
   * Every answer recorded for an operation, by command id (as `--dead` selects them; answers of
   * concurrent transactions are recorded in the order they finished), keys without a command last.
   */
  recorded: (opDigest: string): Statement => ({
    sql: "SELECT biz_type, biz_id, selector, selector_sha256, code, reason, command_id FROM fcctl_requeue_operation WHERE op_digest = ? AND biz_type <> '' ORDER BY command_id IS NULL, command_id, id",
    params: [opDigest],
  }),

  /**
   * Binds the operation id to its selection before any command is touched: the header row (empty
   * key, which no command has) in its own autocommitted statement. A duplicate key means the id
   * is bound already; {@link requeueSql.header} says to which selection.
   */
  bindOperation: (opDigest: string, selector: { text: string; sha256: string }): Statement => ({
    sql:
      'INSERT INTO fcctl_requeue_operation (op_digest, biz_type, biz_id, selector, selector_sha256, code, reason, command_id, create_time) ' +
      "VALUES (?, '', '', ?, ?, 'OPERATION', '', NULL, NOW())",
    params: [opDigest, cutText(selector.text, 255), selector.sha256],
  }),

  /** The operation's header: its selection and whether it completed (null: not yet). */
  header: (opDigest: string): Statement => ({
    sql: "SELECT selector, selector_sha256, CAST(completed_at AS CHAR) AS completed_at FROM fcctl_requeue_operation WHERE op_digest = ? AND biz_type = '' AND biz_id = ''",
    params: [opDigest],
  }),

  /** Every command of the operation has a final answer: a re-run only repeats them. */
  completeOperation: (opDigest: string): Statement => ({
    sql: "UPDATE fcctl_requeue_operation SET completed_at = NOW() WHERE op_digest = ? AND biz_type = '' AND biz_id = '' AND completed_at IS NULL",
    params: [opDigest],
  }),

  /** A temporary answer (CLAIMED) is not kept: the same operation tries that command again. */
  forgetAnswer: (opDigest: string, key: { bizType: string; bizId: string }): Statement => ({
    sql: 'DELETE FROM fcctl_requeue_operation WHERE op_digest = ? AND biz_type = ? AND biz_id = ?',
    params: [opDigest, key.bizType, key.bizId],
  }),

  /** The answer recorded for one key, read after a duplicate key: the latest committed version. */
  recordedOne: (opDigest: string, key: { bizType: string; bizId: string }): Statement => ({
    sql: 'SELECT biz_type, biz_id, selector, selector_sha256, code, reason, command_id FROM fcctl_requeue_operation WHERE op_digest = ? AND biz_type = ? AND biz_id = ? LOCK IN SHARE MODE',
    params: [opDigest, key.bizType, key.bizId],
  }),

  /**
   * Claims the operation for one key: the unique key makes a second call (or a concurrent one,
   * which waits on this row's lock) fail with a duplicate key; the answer is filled in by
   * {@link requeueSql.recordAnswer} in the same transaction, so no one ever sees it empty.
   */
  claimOperation: (opDigest: string, key: { bizType: string; bizId: string }, selector: { text: string; sha256: string }): Statement => ({
    sql:
      'INSERT INTO fcctl_requeue_operation (op_digest, biz_type, biz_id, selector, selector_sha256, code, reason, command_id, create_time) ' +
      "VALUES (?, ?, ?, ?, ?, '', '', NULL, NOW())",
    params: [opDigest, key.bizType, key.bizId, cutText(selector.text, 255), selector.sha256],
  }),

  recordAnswer: (opDigest: string, key: { bizType: string; bizId: string }, code: string, reason: string, commandId: string | null): Statement => ({
    sql: 'UPDATE fcctl_requeue_operation SET code = ?, reason = ?, command_id = ? WHERE op_digest = ? AND biz_type = ? AND biz_id = ?',
    params: [code, reason, commandId, opDigest, key.bizType, key.bizId],
  }),

  /**
   * Back to UNKNOWN: retry budget reset, due now, claim cleared; token and attempt untouched (the
   * lookup still comes first). A resolver still holding the old generation in flight has its
   * write turned away by its own guard (state and retry count moved on).
   */
  requeue: (w: { from: CommandGeneration; lastError: string }): Statement => ({
    sql:
      "UPDATE flow_apply_command SET state = 'UNKNOWN', retry_count = 0, next_retry_at = NULL, last_error = ?, claim_owner = NULL, claim_expires_at = NULL, update_time = NOW() " +
      'WHERE id = ? AND state = ? AND retry_count = ? AND attempt = ? AND request_token = ? AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < NOW())',
    params: [w.lastError, w.from.id, w.from.state, w.from.retryCount, w.from.attempt, w.from.requestToken],
  }),

  /** One audit row (action `APPLY_REQUEUE`), time from the SH database's clock. */
  audit: (a: RequeueAuditRow): Statement => ({
    sql:
      'INSERT INTO fc_reconcile_audit (action, outcome, reason, proof_id, run_id, host, sch_id, answer_uuid, expected_json, observed_json, create_time) ' +
      'VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, NOW())',
    params: [REQUEUE_AUDIT_ACTION, a.outcome, cutText(a.reason, 255), a.operationId, a.runId, cutText(a.host, 255), JSON.stringify(a.expected), JSON.stringify(a.observed)],
  }),
};
