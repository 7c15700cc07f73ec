/**
 * SQL of `deliveries send`, as `{sql, params}` builders (tested as text; `run.ts` executes them).
 * Every write after the claim is guarded by claim owner and generation (SPEC §2).
 */
import type { Statement } from '../../db/statement.js';
import { type DeliveryRow, type Generation, grantKey } from '../types.js';
import type { Write } from './types.js';

/**
 * Columns the relay needs; never `SELECT *` (consumer receipt columns are not ours). The snapshot
 * comes as bytes (binary: mysql2 gives a Buffer), hashed and embedded without a decode: its UTF-8
 * bytes, converted by the server first (a utf8mb4 column, the schema's, converts to itself; a
 * latin1 or utf16 one FC may have would otherwise hand over bytes that are not UTF-8).
 */
const ROW_COLUMNS =
  'id, event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
  'answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, CAST(CONVERT(snapshot_json USING utf8mb4) AS BINARY) AS snapshot_json, state, retry_count, replay_op_digest, ' +
  // the row's age when read, on the server's own clock (create_time has whole seconds), on its first
  // attempt only (never retried, held or replayed; else NULL): the follow relay's created-to-confirm histogram
  'CASE WHEN retry_count = 0 AND next_retry_at IS NULL AND replay_op_digest IS NULL ' +
  'THEN CAST(TIMESTAMPDIFF(MICROSECOND, create_time, NOW(6)) DIV 1000 AS SIGNED) END AS age_ms';

/**
 * Due: PENDING or FAILED whose time has come, and not under someone else's live lease. An owner
 * without an expiry (written by hand or by another tool) counts as expired, so no row is stuck
 * forever (seed 003 §10.6; `deliveries scan` counts such rows as stuck claims). One rule for the
 * claim and for `deliveries scan`'s due count: `t` is a table alias prefix (`d.`), `now` the SQL
 * of the current time (`NOW()`, or `?` for a report's one `now`).
 */
export function dueRule(t = '', now = 'NOW()'): string {
  return (
    `${t}state IN ('PENDING', 'FAILED') AND (${t}next_retry_at IS NULL OR ${t}next_retry_at <= ${now}) ` +
    `AND (${t}claim_owner IS NULL OR ${t}claim_expires_at IS NULL OR ${t}claim_expires_at < ${now})`
  );
}
const DUE = dueRule();

/**
 * When a due row became due (issue 36 §2), not when it was made: its retry or hold's recheck time;
 * without one, its last write (a replay; a release writes none) or else its creation; and a lease that ran
 * out after that, the lease's end. The oldest due age of `/metrics` and of `fcctl status` both
 * count from it, so a 45-day-old row replayed, or held rows up for their recheck, read as due for
 * seconds, not 45 days. `t` is a table alias prefix (`d.`).
 */
export function dueSince(t = ''): string {
  return `GREATEST(COALESCE(${t}next_retry_at, ${t}update_time, ${t}create_time), COALESCE(${t}claim_expires_at, ${t}create_time))`;
}

// Held mirrors send's order of checks (SPEC §5 step 2): a revoked, missing or advanced grant is
// GRANT_REVOKED first, so only an otherwise valid grant with push_allowed = 0 holds a row.
// Over `answer_delivery d` joined to its grant `g` (`deliveries scan`, `status`, the relay's backlog).
export const HELD =
  '(g.id IS NOT NULL AND g.revoked = 0 AND g.read_allowed = 1 AND g.subscribe_allowed = 1 ' +
  'AND g.grant_version = d.grant_version AND g.push_allowed = 0)';

/** @example const { sql, params } = sendSql.claim(500) */
export const sendSql = {
  /**
   * Up to `limit` due rows, locked: `FOR UPDATE SKIP LOCKED` so concurrent relays never wait on or
   * share a row. Run in one short transaction with {@link sendSql.lease}.
   */
  claim: (limit: number): Statement => ({
    sql: `SELECT ${ROW_COLUMNS} FROM answer_delivery WHERE ${DUE} LIMIT ? FOR UPDATE SKIP LOCKED`,
    params: [limit],
  }),
  /**
   * A write that changes nothing (an impossible WHERE: no row read or locked), refused as a claim
   * would be by a server that is read-only (1290, a failover's demoted writer): a follow session is
   * `running` only once this succeeds, not when its reads do (issue 35 §5).
   */
  writable: (): Statement => ({
    sql: 'UPDATE answer_delivery SET claim_owner = claim_owner WHERE 1 = 0',
    params: [],
  }),
  /** The lease on the rows just claimed. */
  lease: (owner: string, ids: readonly string[], leaseSeconds: number): Statement => ({
    sql: 'UPDATE answer_delivery SET claim_owner = ?, claim_expires_at = NOW() + INTERVAL ? SECOND WHERE id IN (?)',
    params: [owner, leaseSeconds, ids],
  }),
  /**
   * How many rows are due now, counting no further than `cap` (for a progress total; a later claim
   * may find fewer or more). Capped, so a backlog of millions is not read whole to draw a bar.
   */
  countDue: (cap: number): Statement => ({
    sql: `SELECT COUNT(*) AS n FROM (SELECT 1 FROM answer_delivery WHERE ${DUE} LIMIT ?) due`,
    params: [cap],
  }),
  /**
   * How many rows are due for a follow relay's gauge, read every few seconds at most (counted no
   * further than `cap`): held rows (push not allowed) up for their recheck are not due to be sent,
   * left out as `deliveries scan` and `fcctl status` count them (each with its grant: uk_grant, eq_ref).
   */
  backlog: (cap: number): Statement => ({
    sql:
      'SELECT COUNT(*) AS n FROM (SELECT 1 FROM answer_delivery d LEFT JOIN form_consumer_grant g ON g.form_uuid = d.form_uuid ' +
      'AND g.consumer_school_id = d.consumer_school_id AND g.consumer_app_key = d.consumer_app_key ' +
      `WHERE ${dueRule('d.')} AND NOT ${HELD} LIMIT ?) due`,
    params: [cap],
  }),
  /**
   * How long the oldest due row has been due ({@link dueSince}), held rows left out: the relay's
   * gauge and `fcctl status` run this one statement, so they say the same. Every due row is read,
   * never a capped few (a capped read in index order takes FAILED rows first and missed a PENDING
   * one due for an hour behind 10,000 of them): the PENDING/FAILED range of idx_delivery_due, the
   * open rows, never the history: forced, since past a tenth of the table the optimizer reads the whole
   * table instead (2,000,000 accepted rows and 200,000 due: 4.1 s; the range, 0.3 s). NULL when none is due. `nowValue`: the time to count to (status's one
   * `now`), or null for the server's `NOW()`.
   */
  oldestDue: (nowValue: string | null): Statement => {
    const now = nowValue === null ? 'NOW()' : '?';
    const due = dueRule('d.', now);
    // the one time, at each `?`: TIMESTAMPDIFF's and the due rule's
    const nows = nowValue === null ? [] : Array<string>(1 + due.split('?').length - 1).fill(nowValue);
    return {
      sql:
        `SELECT TIMESTAMPDIFF(SECOND, MIN(${dueSince('d.')}), ${now}) AS age FROM answer_delivery d FORCE INDEX (idx_delivery_due) ` +
        'LEFT JOIN form_consumer_grant g ON g.form_uuid = d.form_uuid AND g.consumer_school_id = d.consumer_school_id ' +
        `AND g.consumer_app_key = d.consumer_app_key WHERE NOT ${HELD} AND ${due}`,
      params: nows,
    };
  },
  /** Due rows without claiming them, for `--dry-run` (keyset on id so a dry run pages forward). */
  peekDue: (afterId: string, limit: number): Statement => ({
    sql: `SELECT ${ROW_COLUMNS} FROM answer_delivery WHERE ${DUE} AND id > ? ORDER BY id LIMIT ?`,
    params: [afterId, limit],
  }),
  /** The registry row of the configured app code (seed 004 `getAppByCode`). */
  registryByCode: (appCode: string): Statement => ({
    sql: 'SELECT id, app_code, app_key FROM application_info WHERE app_code = ?',
    params: [appCode],
  }),
  /** The grants of a batch's rows, read fresh (no cache across batches); null for no rows. */
  grants: (rows: readonly DeliveryRow[]): Statement | null => {
    const triples = new Map<string, [string, string, string]>();
    for (const r of rows)
      triples.set(grantKey(r.form_uuid, r.consumer_school_id, r.consumer_app_key), [
        r.form_uuid,
        String(r.consumer_school_id),
        r.consumer_app_key,
      ]);
    if (triples.size === 0) return null;
    const list = [...triples.values()];
    return {
      sql:
        'SELECT form_uuid, consumer_school_id, consumer_app_key, grant_version, read_allowed, subscribe_allowed, push_allowed, revoked ' +
        `FROM form_consumer_grant WHERE (form_uuid, consumer_school_id, consumer_app_key) IN (${list.map(() => '(?, ?, ?)').join(', ')})`,
      params: list.flat(),
    };
  },
  /** The states of rows a guarded write matched fewer of than it named. */
  states: (ids: readonly string[]): Statement => ({
    sql: 'SELECT id, state, retry_count FROM answer_delivery WHERE id IN (?)',
    params: [ids],
  }),
};

/**
 * The guard every write after the claim carries (SPEC §2): still ours, still open, and the same
 * generation (retry count and replay operation) as when it was claimed.
 */
function guard(owner: string, gens: readonly Generation[]): Statement {
  // Rows of one batch nearly all share a generation: one `id IN (…)` per generation keeps the
  // statement a primary-key lookup instead of hundreds of OR-ed conditions.
  const byGeneration = new Map<string, { retryCount: number; replayOpDigest: string | null; ids: string[] }>();
  for (const g of gens) {
    // a NULL digest and an empty one are two generations (`<=>` tells them apart)
    const key = `${g.retryCount}|${g.replayOpDigest === null ? 'N' : `S${g.replayOpDigest}`}`;
    const group = byGeneration.get(key) ?? { retryCount: g.retryCount, replayOpDigest: g.replayOpDigest, ids: [] };
    group.ids.push(g.id);
    byGeneration.set(key, group);
  }
  // The top-level `id IN` makes the primary key drive the statement (and its locks), whatever
  // the generation groups look like.
  const params: unknown[] = [gens.map((g) => g.id), owner];
  const groups = [...byGeneration.values()];
  if (groups.length === 1) {
    // The usual batch, one generation: its ids are the top-level list already (a second list of
    // the same ids cost MariaDB as much to read again as the first).
    params.push(groups[0]!.retryCount, groups[0]!.replayOpDigest);
    return {
      sql: `id IN (?) AND claim_owner = ? AND state IN ('PENDING', 'FAILED') AND retry_count = ? AND replay_op_digest <=> ?`,
      params,
    };
  }
  const parts = groups.map((group) => {
    params.push(group.retryCount, group.replayOpDigest, group.ids);
    return '(retry_count = ? AND replay_op_digest <=> ? AND id IN (?))';
  });
  return {
    sql: `id IN (?) AND claim_owner = ? AND state IN ('PENDING', 'FAILED') AND (${parts.join(' OR ')})`,
    params,
  };
}

/** Compiles a write to `{sql, params}`; tested as text, executed on the real database. */
export function compileWrite(owner: string, w: Write): Statement {
  const g = guard(owner, w.gens);
  const clearClaim = 'claim_owner = NULL, claim_expires_at = NULL';
  switch (w.kind) {
    case 'accept':
      // Only a confirm writes broker_accepted_at, and only once.
      return {
        sql: `UPDATE answer_delivery SET state = 'BROKER_ACCEPTED', broker_accepted_at = COALESCE(broker_accepted_at, NOW()), next_retry_at = NULL, ${clearClaim}, update_time = NOW() WHERE ${g.sql}`,
        params: g.params,
      };
    case 'fail':
      return {
        sql:
          `UPDATE answer_delivery SET state = ?, retry_count = ?, next_retry_at = ${w.backoffSeconds === null ? 'NULL' : 'NOW() + INTERVAL ? SECOND'}, ` +
          `last_error = ?, broker_accepted_at = NULL, ${clearClaim}, update_time = NOW() WHERE ${g.sql}`,
        params: [
          w.state,
          w.retryCount,
          ...(w.backoffSeconds === null ? [] : [w.backoffSeconds]),
          w.lastError.slice(0, 512),
          ...g.params,
        ],
      };
    case 'revoke':
      return {
        sql: `UPDATE answer_delivery SET state = 'GRANT_REVOKED', last_error = ?, next_retry_at = NULL, ${clearClaim}, update_time = NOW() WHERE ${g.sql}`,
        params: [w.lastError, ...g.params],
      };
    case 'hold':
      // Held is neither sent nor failed: the retry budget stays; look again after a while.
      return {
        sql: `UPDATE answer_delivery SET next_retry_at = NOW() + INTERVAL ? SECOND, ${clearClaim} WHERE ${g.sql}`,
        params: [w.recheckSeconds, ...g.params],
      };
    case 'release':
      return { sql: `UPDATE answer_delivery SET ${clearClaim} WHERE ${g.sql}`, params: g.params };
    case 'bury':
      return {
        sql: `UPDATE answer_delivery SET state = 'DEAD', next_retry_at = NULL, ${clearClaim}, update_time = NOW() WHERE ${g.sql}`,
        params: g.params,
      };
  }
}
