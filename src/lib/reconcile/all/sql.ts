/**
 * SQL of `reconcile run --all`: finding the (school, form) pairs on each side, and the SH task
 * table `fcctl_reconcile_task` (sql/sh.sql) through which the processes of one run share them.
 * Lease times are the SH database's UTC clock, so hosts with different clocks or zones agree. A
 * claimed task is written by its id, under its claim token and generation.
 */
import type { Statement } from '../../db/statement.js';
import type { PairFilter } from './types.js';

function filterSql(schoolColumn: string, formColumn: string, f: PairFilter): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (f.schools.length > 0) {
    parts.push(`${schoolColumn} IN (${f.schools.map(() => '?').join(', ')})`);
    params.push(...f.schools.map((s) => BigInt(s)));
  }
  if (f.forms.length > 0) {
    parts.push(`${formColumn} IN (${f.forms.map(() => '?').join(', ')})`);
    params.push(...f.forms);
  }
  return { sql: parts.map((p) => ` AND ${p}`).join(''), params };
}

/** The task columns a process reads back. */
const TASK_COLUMNS =
  'id, CAST(sch_id AS CHAR) AS sch_id, form_uuid, state, claim_owner, claim_generation, attempts, host, result_json';

/** A task a process may claim: waiting, leased by a process whose lease ran out, or failed before this process began. */
const CLAIMABLE =
  "(state = 'PENDING' OR (state = 'CLAIMED' AND (claim_expires_at IS NULL OR claim_expires_at < UTC_TIMESTAMP())) OR (state = 'FAILED' AND finished_at < ?))";

/** A default run id: a UTC time to the minute (./decide.ts `defaultRunId`); the older date-only ids are never joined. */
const DEFAULT_RUN_ID = "'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}Z(-[0-9]+)?$'";

/** Serialises the choice of a default run id and its first registration: processes started together agree on one run. */
const DEFAULT_RUN_LOCK = 'fcctl_reconcile_default_run';

/** @example const { sql, params } = allSql.fcPairs('svc-hall', { schools: [], forms: [] }) */
export const allSql = {
  /**
   * FC: the pairs whose form is granted to this consumer at that school — a grant not revoked that
   * allows reads and subscription (what the relay needs to deliver) — and that hold at least one
   * answer: one `idx_answer_manifest` lookup per grant (a scalar LIMIT 1, never a semi-join scan).
   */
  fcPairs: (consumerAppKey: string, f: PairFilter): Statement => {
    const w = filterSql('g.consumer_school_id', 'g.form_uuid', f);
    return {
      sql:
        'SELECT DISTINCT CAST(g.consumer_school_id AS CHAR) AS sch_id, g.form_uuid FROM form_consumer_grant g ' +
        `WHERE g.consumer_app_key = ? AND g.revoked = 0 AND g.read_allowed = 1 AND g.subscribe_allowed = 1${w.sql} ` +
        'AND (SELECT 1 FROM answer a FORCE INDEX (idx_answer_manifest) WHERE a.sch_id = g.consumer_school_id AND a.form_uuid = g.form_uuid LIMIT 1) IS NOT NULL',
      params: [consumerAppKey, ...w.params],
    };
  },
  /** SH: every pair the projection holds a row of (retired rows too): a loose index scan of `idx_projection_manifest`. */
  shPairs: (f: PairFilter): Statement => {
    const w = filterSql('sch_id', 'form_uuid', f);
    return {
      sql: `SELECT CAST(p.sch_id AS CHAR) AS sch_id, p.form_uuid FROM (SELECT DISTINCT sch_id, form_uuid FROM fc_answer_projection FORCE INDEX (idx_projection_manifest) WHERE 1 = 1${w.sql}) p`,
      params: w.params,
    };
  },
  /** The SH database's UTC date and time: a new default run id is named after it, so every host agrees whatever its own clock. */
  utcNow: (): Statement => ({ sql: 'SELECT CAST(UTC_TIMESTAMP() AS CHAR) AS u', params: [] }),
  /**
   * The newest run with a default id whose last activity — a pair registered, finished, a lease
   * still running (its expiry ahead), or a process choosing it ({@link joined}) — is within the last
   * `joinMinutes`: processes of one night started minutes apart, or restarted, join it; one started
   * long after the run went quiet (the next night after a daytime run) begins another. Only runs
   * begun within `maxHours` are looked at (`idx_reconcile_task_open`, a range per state).
   */
  joinableRun: (joinMinutes: number, maxHours: number): Statement => ({
    sql:
      'SELECT t.run_id FROM fcctl_reconcile_task t LEFT JOIN fcctl_reconcile_join j ON j.run_id = t.run_id ' +
      "WHERE t.state IN ('PENDING', 'CLAIMED', 'DONE', 'FAILED') AND t.create_time > UTC_TIMESTAMP() - INTERVAL ? HOUR " +
      `AND t.run_id REGEXP ${DEFAULT_RUN_ID} GROUP BY t.run_id ` +
      'HAVING GREATEST(MAX(GREATEST(t.create_time, COALESCE(t.finished_at, t.create_time), COALESCE(t.claim_expires_at, t.create_time))), ' +
      "COALESCE(MAX(j.joined_at), '1000-01-01')) > UTC_TIMESTAMP() - INTERVAL ? MINUTE " +
      'ORDER BY MIN(t.create_time) DESC LIMIT 1',
    params: [maxHours, joinMinutes],
  }),
  /** A process without --run-id chose `runId` (began or joined it), now: activity of that run. */
  joined: (runId: string): Statement => ({
    sql: 'INSERT INTO fcctl_reconcile_join (run_id, joined_at) VALUES (?, UTC_TIMESTAMP()) ON DUPLICATE KEY UPDATE joined_at = UTC_TIMESTAMP()',
    params: [runId],
  }),
  /** The ids among `ids` some run already has (a new default id is never one of them). */
  runIdsTaken: (ids: readonly string[]): Statement => ({
    sql: `SELECT DISTINCT run_id FROM fcctl_reconcile_task WHERE run_id IN (${ids.map(() => '?').join(', ')})`,
    params: [...ids],
  }),
  /** Takes the default-run lock on one connection (1: taken; waits at most `seconds`). */
  lockDefaultRun: (seconds: number): Statement => ({
    sql: 'SELECT GET_LOCK(?, ?) AS got',
    params: [DEFAULT_RUN_LOCK, seconds],
  }),
  unlockDefaultRun: (): Statement => ({ sql: 'SELECT RELEASE_LOCK(?) AS released', params: [DEFAULT_RUN_LOCK] }),
  /** Registers pairs of a run; a pair another process registered already stays as it is. */
  register: (runId: string, pairs: readonly { schId: string; formUuid: string }[]): Statement => ({
    sql: `INSERT IGNORE INTO fcctl_reconcile_task (run_id, sch_id, form_uuid, create_time) VALUES ${pairs.map(() => '(?, ?, ?, UTC_TIMESTAMP())').join(', ')}`,
    params: pairs.flatMap((p) => [runId, BigInt(p.schId), p.formUuid]),
  }),
  /**
   * The next task this process may claim, within its filters, locked: read in pair order along
   * `uk_reconcile_task_pair` with `SKIP LOCKED`, so concurrent claimers take different pairs and
   * never wait on each other (`startedUtc`: see {@link CLAIMABLE}).
   */
  nextClaimable: (runId: string, f: PairFilter, startedUtc: string): Statement => {
    const w = filterSql('sch_id', 'form_uuid', f);
    return {
      sql: `SELECT ${TASK_COLUMNS} FROM fcctl_reconcile_task FORCE INDEX (uk_reconcile_task_pair) WHERE run_id = ? AND ${CLAIMABLE}${w.sql} ORDER BY sch_id, form_uuid LIMIT 1 FOR UPDATE SKIP LOCKED`,
      params: [runId, startedUtc, ...w.params],
    };
  },
  /**
   * The task a claim token already holds, locked: a claim retried after its COMMIT's reply was lost
   * had taken it, and takes it again rather than a second pair (the first left CLAIMED, orphaned).
   */
  claimedBy: (runId: string, token: string): Statement => ({
    sql: `SELECT ${TASK_COLUMNS} FROM fcctl_reconcile_task WHERE run_id = ? AND claim_owner = ? AND state = 'CLAIMED' LIMIT 1 FOR UPDATE`,
    params: [runId, token],
  }),
  /** A task's state and claim as they are: whether a write whose reply was lost had been made. */
  taskClaim: (id: string): Statement => ({
    sql: 'SELECT state, claim_owner, claim_generation FROM fcctl_reconcile_task WHERE id = ?',
    params: [id],
  }),
  /** Takes the task read by {@link nextClaimable}, in the same transaction. */
  claim: (id: string, token: string, host: string, leaseSeconds: number): Statement => ({
    sql:
      "UPDATE fcctl_reconcile_task SET state = 'CLAIMED', claim_owner = ?, claim_generation = claim_generation + 1, " +
      'claim_expires_at = UTC_TIMESTAMP() + INTERVAL ? SECOND, attempts = attempts + 1, host = ? WHERE id = ?',
    params: [token, leaseSeconds, host, id],
  }),
  /** Renews a lease; 0 rows: the lease was lost (expired and taken by another process). */
  renew: (id: string, token: string, generation: string, leaseSeconds: number): Statement => ({
    sql: "UPDATE fcctl_reconcile_task SET claim_expires_at = UTC_TIMESTAMP() + INTERVAL ? SECOND WHERE id = ? AND claim_owner = ? AND claim_generation = ? AND state = 'CLAIMED'",
    params: [leaseSeconds, id, token, generation],
  }),
  /** Records a pair's end (DONE or FAILED) under its claim; 0 rows: the claim was lost. */
  finish: (id: string, token: string, generation: string, state: 'DONE' | 'FAILED', resultJson: string): Statement => ({
    sql:
      'UPDATE fcctl_reconcile_task SET state = ?, result_json = ?, finished_at = UTC_TIMESTAMP(), claim_owner = NULL, claim_expires_at = NULL ' +
      "WHERE id = ? AND claim_owner = ? AND claim_generation = ? AND state = 'CLAIMED'",
    params: [state, resultJson, id, token, generation],
  }),
  /** Gives a pair back unfinished (paused, stopped, an outage): PENDING again, for the next process of the run. */
  release: (id: string, token: string, generation: string): Statement => ({
    sql: "UPDATE fcctl_reconcile_task SET state = 'PENDING', claim_owner = NULL, claim_expires_at = NULL WHERE id = ? AND claim_owner = ? AND claim_generation = ? AND state = 'CLAIMED'",
    params: [id, token, generation],
  }),
  /**
   * The run's pairs within the filters as committed, by a plain read (it waits on no lock and skips
   * none): those a claim may take ({@link CLAIMABLE}) and those other processes hold under a lease
   * (claim tokens not starting with this process's owner). A claim that found nothing while some
   * are claimable had skipped rows another transaction held for a moment (a process registering the
   * same pairs: INSERT IGNORE's shared locks; another claim), not a run with nothing left.
   */
  openPairs: (runId: string, owner: string, f: PairFilter, startedUtc: string): Statement => {
    const w = filterSql('sch_id', 'form_uuid', f);
    return {
      sql:
        `SELECT COALESCE(SUM(${CLAIMABLE}), 0) AS claimable, ` +
        "COALESCE(SUM(state = 'CLAIMED' AND LEFT(claim_owner, ?) <> ?), 0) AS held " +
        `FROM fcctl_reconcile_task FORCE INDEX (uk_reconcile_task_pair) WHERE run_id = ?${w.sql}`,
      params: [startedUtc, owner.length + 1, `${owner}:`, runId, ...w.params],
    };
  },
  /** Every pair of a run, for summary.json (small rows: the result is a short JSON object). */
  runTasks: (runId: string): Statement => ({
    sql: `SELECT ${TASK_COLUMNS} FROM fcctl_reconcile_task WHERE run_id = ? ORDER BY sch_id, form_uuid`,
    params: [runId],
  }),
};
