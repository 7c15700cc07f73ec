import { randomBytes } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { jsonLines } from './cli.js';
import type { TestDatabases } from './db.js';
import type { FlowCenter, LogEntry, StandInInstance } from './flow-center.js';

/** The app that signs requests in tests; the secret holds non-ASCII so signing is tested on UTF-8 bytes. */
export const APP = { key: '100021', secret: 'tést-secret-流程-0123456789' } as const;

/** The SH tables resolve-unknown reads and writes. */
export const SH_TABLES = ['flow_apply_command', 'service_apply'] as const;

export interface CommandSpec {
  bizId: string;
  bizType?: string;
  applyAppKey?: string;
  submitterId?: string;
  flowGuid?: string;
  requestToken?: string;
  attempt?: number;
  state?: 'PENDING' | 'UNKNOWN' | 'DONE' | 'FAILED' | 'DEAD';
  retryCount?: number;
  /** SQL expression, e.g. `NOW() - INTERVAL 1 HOUR` */
  createTime?: string;
  nextRetryAt?: string | null;
  /** also insert the service_apply row (default true) */
  serviceApply?: boolean;
}

/** A fresh business-id prefix, so tests in one database never see each other's rows. */
export function uniquePrefix(p = 'b'): string {
  return `${p}${randomBytes(4).toString('hex')}`;
}

export const BIZ_TYPE = 'honor_apply';
export const defaults = (bizId: string) => ({
  submitterId: '9007199254740993',
  flowGuid: `guid-${bizId}`,
  requestToken: `tok-${bizId}`,
});

/** Inserts commands (and their service_apply rows) in bulk. */
export async function insertCommands(
  admin: mysql.Connection,
  shName: string,
  specs: readonly CommandSpec[],
): Promise<void> {
  for (let i = 0; i < specs.length; i += 1000) {
    const chunk = specs.slice(i, i + 1000);
    const values: string[] = [];
    const params: unknown[] = [];
    for (const s of chunk) {
      const d = defaults(s.bizId);
      values.push(
        `(?, ?, ?, ?, ?, ?, ?, ?, ?, ${s.nextRetryAt ?? 'NULL'}, ${s.createTime ?? 'NOW() - INTERVAL 1 HOUR'})`,
      );
      params.push(
        s.bizType ?? BIZ_TYPE,
        s.bizId,
        s.applyAppKey ?? '100021',
        s.submitterId ?? d.submitterId,
        s.flowGuid ?? d.flowGuid,
        s.requestToken ?? d.requestToken,
        s.attempt ?? 1,
        s.state ?? 'UNKNOWN',
        s.retryCount ?? 0,
      );
    }
    await admin.query(
      `INSERT INTO \`${shName}\`.flow_apply_command (biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, attempt, state, retry_count, next_retry_at, create_time) VALUES ${values.join(', ')}`,
      params,
    );
    const sa = chunk.filter((s) => s.serviceApply !== false);
    if (sa.length > 0) {
      await admin.query(`INSERT INTO \`${shName}\`.service_apply (biz_type, biz_id, flow_status) VALUES ?`, [
        sa.map((s) => [s.bizType ?? BIZ_TYPE, s.bizId, null]),
      ]);
    }
  }
}

export interface CommandRow {
  biz_id: string;
  state: string;
  retry_count: number;
  remote_status: number | null;
  remote_instance_id: string | null;
  last_branch: string | null;
  last_error: string | null;
  claim_owner: string | null;
  /** seconds from update_time to next_retry_at */
  backoff: number | null;
  flow_status: number | null;
}

/** The commands whose biz id starts with a prefix, with their mirrored flow_status. */
export async function commandsOf(admin: mysql.Connection, shName: string, prefix: string): Promise<CommandRow[]> {
  const [rows] = await admin.query(
    `SELECT c.biz_id, c.state, c.retry_count, c.remote_status, c.remote_instance_id, c.last_branch, c.last_error, c.claim_owner,
            TIMESTAMPDIFF(SECOND, c.update_time, c.next_retry_at) AS backoff, s.flow_status
     FROM \`${shName}\`.flow_apply_command c LEFT JOIN \`${shName}\`.service_apply s ON s.biz_type = c.biz_type AND s.biz_id = c.biz_id
     WHERE c.biz_id LIKE ? ORDER BY c.id`,
    [`${prefix}%`],
  );
  return (rows as CommandRow[]).map((r) => ({
    ...r,
    retry_count: Number(r.retry_count),
    backoff: r.backoff === null ? null : Number(r.backoff),
  }));
}

/** Makes every FAILED row of a prefix due now (as if its backoff had passed). */
export async function makeDue(admin: mysql.Connection, shName: string, prefix: string): Promise<void> {
  await admin.query(
    `UPDATE \`${shName}\`.flow_apply_command SET next_retry_at = NOW() - INTERVAL 1 SECOND WHERE state = 'FAILED' AND biz_id LIKE ?`,
    [`${prefix}%`],
  );
}

/** The stand-in's apps for the apply-command tests: APP, whose secret fcctl signs with. */
export const APP_FLOW: Record<string, string> = { [APP.key]: APP.secret };

export type Env = Record<string, string | undefined>;

/** Before each test: the stand-in's faults and log cleared (its instances stay: each test has its own prefix). */
export async function clearFlowCenter(fc: FlowCenter): Promise<void> {
  await fc.clearFaults();
  await fc.clearLog();
}

/** The environment of an fcctl run against these databases and the stand-in, signing as APP. */
export function flowEnv(dbs: TestDatabases, fc: FlowCenter): Env {
  return dbs.env({ FCCTL_FLOW_URL: fc.url, FCCTL_APP_KEY: APP.key, FCCTL_APP_SECRET: APP.secret });
}

/** An instance the stand-in holds for a command inserted with {@link defaults}: owned by it. */
export function ownedInstance(
  bizId: string,
  status: StandInInstance['status'],
  over: Partial<StandInInstance> = {},
): StandInInstance {
  return {
    bizType: BIZ_TYPE,
    bizId,
    status,
    applyAppKey: APP.key,
    submitterId: defaults(bizId).submitterId,
    flowGuid: defaults(bizId).flowGuid,
    round: 1,
    ...over,
  };
}

/** The summary line of a `--json` run. */
export const summaryOf = (stdout: string): Record<string, unknown> =>
  jsonLines(stdout).find((l) => l['type'] === 'summary')!;
/** The lines of one type of a `--json` run (`row`, `result`). */
export const linesOf = (stdout: string, type: string): Array<Record<string, unknown>> =>
  jsonLines(stdout).filter((l) => l['type'] === type);
/** The stand-in's log entries for the business ids of one prefix. */
export const logOf = (log: readonly LogEntry[], prefix: string): LogEntry[] =>
  log.filter((e) => e.bizId?.startsWith(prefix));

/** The commands of a prefix by the rest of their biz id (`<prefix>-<name>` → `name`). */
export async function commandsByName(
  admin: mysql.Connection,
  shName: string,
  prefix: string,
): Promise<Record<string, CommandRow>> {
  return Object.fromEntries(
    (await commandsOf(admin, shName, prefix)).map((x) => [x.biz_id.slice(prefix.length + 1), x]),
  );
}
