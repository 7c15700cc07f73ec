import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { insertCommands, SH_TABLES } from '../helpers/apply-commands.js';
import { servicesTest } from '../helpers/services.js';
import { readProm } from '../helpers/textfile.js';

const test = servicesTest({ prefix: 'applyscan', init: 'sh' });
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;

test.beforeAll(async ({ dbs: d, tmp }) => {
  [dbs, env, dir] = [d, d.env(), tmp];
  await insertCommands(dbs.admin, dbs.shName, [
    { bizId: 'u-old', state: 'UNKNOWN', createTime: 'NOW() - INTERVAL 2 HOUR' },
    { bizId: 'u-new', state: 'UNKNOWN', createTime: 'NOW() - INTERVAL 1 MINUTE' },
    { bizId: 'p-old', state: 'PENDING', createTime: 'NOW() - INTERVAL 20 MINUTE' },
    { bizId: 'p-new', state: 'PENDING', createTime: 'NOW() - INTERVAL 2 MINUTE' },
    { bizId: 'f-due', state: 'FAILED', retryCount: 2, nextRetryAt: 'NOW() - INTERVAL 1 MINUTE' },
    { bizId: 'f-later', state: 'FAILED', retryCount: 1, nextRetryAt: 'NOW() + INTERVAL 1 HOUR' },
    { bizId: 'done', state: 'DONE' },
    { bizId: 'd-own-1', state: 'DEAD' },
    { bizId: 'd-own-2', state: 'DEAD' },
    { bizId: 'd-branch', state: 'DEAD' },
    { bizId: 'd-budget', state: 'DEAD', retryCount: 6 },
  ]);
  const set = (bizId: string, sql: string, params: unknown[] = []) =>
    dbs.admin.query(`UPDATE \`${dbs.shName}\`.flow_apply_command SET ${sql} WHERE biz_id = ?`, [...params, bizId]);
  await set('d-own-1', 'last_error = ?', [
    'OWNERSHIP_MISMATCH: lookup found instance FI-1 status 30 whose flowGuid differ',
  ]);
  await set('d-own-2', 'last_error = ?', [
    'OWNERSHIP_MISMATCH: lookup found instance FI-2 status 40 whose submitterId differ',
  ]);
  await set('d-branch', 'last_error = ?, last_branch = ?', [
    'UNEXPECTED_BRANCH: RESTARTED, instance FI-3 status 10',
    'RESTARTED',
  ]);
  await set('d-budget', 'last_error = ?', ['LOOKUP_TIMEOUT: no complete answer within 5000 ms']);
  await set('f-due', 'last_error = ?', ['LOOKUP_HTTP_503: {}']);
  // a claim whose lease ran out
  await set('u-new', 'claim_owner = ?, claim_expires_at = NOW() - INTERVAL 1 MINUTE', ['host:1:abc']);
});
const scan = (args: string[] = []) => runCli(['apply-command', 'scan', ...args], { env });

describe('apply-command scan', () => {
  test('JSON: counts by state, due, oldest UNKNOWN, stuck claims, DEAD rows with reasons — and changes nothing', async () => {
    const before = await checksumTables(dbs.admin, dbs.shName, SH_TABLES);
    const r = await scan(['--format', 'json']);
    expect(r.code).toBe(0);
    const lines = jsonLines(r.stdout);
    const summary = lines.find((l) => l['type'] === 'summary')!;
    expect(summary).toMatchObject({
      command: 'apply-command scan',
      exitCode: 0,
      states: { PENDING: 2, UNKNOWN: 2, DONE: 1, FAILED: 2, DEAD: 4 },
      // u-old, u-new (lease expired), p-old, f-due
      due: 4,
      stuckClaims: 1,
      dead: 4,
      listed: 4,
    });
    expect(Number(summary['oldestUnknownAgeSeconds'])).toBeGreaterThanOrEqual(7200);
    expect(Number(summary['oldestUnknownAgeSeconds'])).toBeLessThan(7300);
    expect(summary['reasons']).toEqual([
      { state: 'DEAD', reason: 'OWNERSHIP_MISMATCH', lastBranch: null, count: 2 },
      { state: 'DEAD', reason: 'LOOKUP_TIMEOUT', lastBranch: null, count: 1 },
      { state: 'DEAD', reason: 'UNEXPECTED_BRANCH', lastBranch: 'RESTARTED', count: 1 },
      { state: 'FAILED', reason: null, lastBranch: null, count: 1 },
      { state: 'FAILED', reason: 'LOOKUP_HTTP_503', lastBranch: null, count: 1 },
    ]);
    const rows = lines.filter((l) => l['type'] === 'row');
    expect(rows.map((x) => x['bizId']).sort()).toEqual(['d-branch', 'd-budget', 'd-own-1', 'd-own-2']);
    expect(rows.find((x) => x['bizId'] === 'd-branch')).toMatchObject({
      reason: 'UNEXPECTED_BRANCH',
      lastBranch: 'RESTARTED',
      retryCount: 0,
    });
    expect(await checksumTables(dbs.admin, dbs.shName, SH_TABLES)).toBe(before);
  });

  test('--pending-grace widens what counts as due', async () => {
    const r = await scan(['--format', 'json', '--pending-grace', '1m']);
    expect(jsonLines(r.stdout).find((l) => l['type'] === 'summary')).toMatchObject({ due: 5 });
  });

  test('CSV: only the DEAD rows, with a header', async () => {
    const r = await scan(['--format', 'csv', '--limit', '2']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe('id,biz type,biz id,app key,attempt,retries,reason,branch,last error,created,updated');
    expect(lines).toHaveLength(3);
  });

  test('table on a terminal', async () => {
    const r = await runCli(['apply-command', 'scan'], { env, tty: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('flow_apply_command by state');
    expect(r.stdout).toContain('OWNERSHIP_MISMATCH');
    expect(r.stdout).toContain('newest DEAD rows');
  });

  test('--fail-if-dead exits 1; --metrics-file writes the gauges', async () => {
    const file = join(dir, 'scan.prom');
    const r = await scan(['--json', '--fail-if-dead', '--metrics-file', file]);
    expect(r.code).toBe(1);
    const prom = readProm(file);
    expect(prom).toContain('fcctl_apply_commands_rows{state="UNKNOWN"} 2');
    expect(prom).toContain('fcctl_apply_commands_dead 4');
    expect(prom).toContain('fcctl_apply_commands_stuck_claims 1');
    expect(prom).toMatch(/fcctl_apply_commands_oldest_unknown_age_seconds 7\d\d\d/);
  });

  test('bad input is exit 2 with one line', async () => {
    for (const args of [
      ['--pending-grace', 'abc'],
      ['--limit', '0'],
      ['--format', 'xml'],
    ]) {
      const r = await scan(args);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

// Review of issue 35 §4: the reasons are grouped by an alias; GROUP BY takes a table column of that
// name first. A flow_apply_command with a `reason` column of its own (the SH service's table may
// carry more columns than fcctl reads) grouped by that column: error 1055 under MySQL 8's
// ONLY_FULL_GROUP_BY, wrong counts under MariaDB's mode. Last in the file: it changes the table.
test("a table with a 'reason' column of its own: scan and status still count by the reason code", async () => {
  await dbs.admin.query(`ALTER TABLE \`${dbs.shName}\`.flow_apply_command ADD COLUMN reason VARCHAR(64) NULL`);
  try {
    await dbs.admin.query(`UPDATE \`${dbs.shName}\`.flow_apply_command SET reason = CONCAT('other-', biz_id)`);
    const r = await scan(['--format', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const summary = jsonLines(r.stdout).find((l) => l['type'] === 'summary')!;
    expect(summary['reasons']).toEqual([
      { state: 'DEAD', reason: 'OWNERSHIP_MISMATCH', lastBranch: null, count: 2 },
      { state: 'DEAD', reason: 'LOOKUP_TIMEOUT', lastBranch: null, count: 1 },
      { state: 'DEAD', reason: 'UNEXPECTED_BRANCH', lastBranch: 'RESTARTED', count: 1 },
      { state: 'FAILED', reason: null, lastBranch: null, count: 1 },
      { state: 'FAILED', reason: 'LOOKUP_HTTP_503', lastBranch: null, count: 1 },
    ]);
    const status = await runCli(['status', '--json'], { env: { ...env, FCCTL_FC_DATABASE_URL: undefined } });
    const doc = JSON.parse(status.stdout) as { applyCommands: { status: string; reasons?: unknown } };
    expect(doc.applyCommands.status, status.stdout).not.toBe('unreachable');
    expect(doc.applyCommands.reasons).toMatchObject({
      DEAD: [
        { reason: 'OWNERSHIP_MISMATCH', n: 2 },
        { reason: 'LOOKUP_TIMEOUT', n: 1 },
        { reason: 'UNEXPECTED_BRANCH', n: 1 },
      ],
    });
  } finally {
    await dbs.admin.query(`ALTER TABLE \`${dbs.shName}\`.flow_apply_command DROP COLUMN reason`);
  }
});
