/**
 * `apply-command requeue` against the real MariaDB and the flow-center stand-in (issue 17 item 4):
 * DEAD/FAILED back to UNKNOWN with the budget reset and the same token and attempt, the lookup
 * still first; idempotent per operation id; reports only without --execute; an evidence line and
 * an audit row per command; every other state refused with its reason; guarded writes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect } from 'vitest';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import { freshDatabases, type TestDatabases } from '../helpers/db.js';
import {
  APP,
  APP_FLOW,
  BIZ_TYPE,
  clearFlowCenter,
  commandsByName,
  commandsOf,
  type Env,
  flowEnv,
  insertCommands,
  linesOf,
  ownedInstance as owned,
  summaryOf,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import { servicesTest } from '../helpers/services.js';
import { SCHEMA_VERSION } from '../../src/lib/db/schema.js';

const test = servicesTest({ prefix: 'requeue', init: 'sh', flowApps: APP_FLOW });
let dbs: TestDatabases, fc: FlowCenter, env: Env, dir: string;
test.beforeAll(
  ({ dbs: d, flowCenter, tmp }) => void ([dbs, fc, env, dir] = [d, flowCenter, flowEnv(d, flowCenter), tmp]),
);
beforeEach(() => clearFlowCenter(fc));

const TABLES = ['flow_apply_command', 'service_apply', 'fc_reconcile_audit', 'fcctl_requeue_operation'];
const checksum = () => checksumTables(dbs.admin, dbs.shName, TABLES);
let evidenceSeq = 0;
const evidenceFile = () => join(dir, `evidence-${++evidenceSeq}.jsonl`);
const requeue = (args: string[], options: { evidence?: string; stdin?: string } = {}) =>
  runCli(['--json', 'apply-command', 'requeue', '--evidence', options.evidence ?? evidenceFile(), ...args], {
    env,
    stdin: options.stdin,
  });
const resultsOf = (stdout: string) => linesOf(stdout, 'result');
const evidenceOf = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const byKey = (p: string) => commandsByName(dbs.admin, dbs.shName, p);
const setRow = (bizId: string, sql: string, params: unknown[] = []) =>
  dbs.admin.query(`UPDATE \`${dbs.shName}\`.flow_apply_command SET ${sql} WHERE biz_id = ?`, [...params, bizId]);
const auditOf = async (operationId: string) =>
  (
    await dbs.admin.query(
      `SELECT action, outcome, reason, proof_id, run_id, host, sch_id, answer_uuid, expected_json, observed_json FROM \`${dbs.shName}\`.fc_reconcile_audit WHERE proof_id = ? ORDER BY id`,
      [operationId],
    )
  )[0] as Array<Record<string, unknown>>;
const tokensOf = async (p: string) =>
  (
    await dbs.admin.query(
      `SELECT biz_id, request_token, attempt, next_retry_at FROM \`${dbs.shName}\`.flow_apply_command WHERE biz_id LIKE ? ORDER BY id`,
      [`${p}%`],
    )
  )[0] as Array<{ biz_id: string; request_token: string; attempt: number; next_retry_at: string | null }>;
const key = (bizId: string) => ['--biz-type', BIZ_TYPE, '--biz-id', bizId];

describe('apply-command requeue: DEAD back to UNKNOWN, and the lookup still comes first', () => {
  test('a DEAD UNEXPECTED_BRANCH and a DEAD by budget command: UNKNOWN, budget reset, same token and attempt; resolve-unknown then looks up before any resend', async () => {
    const p = uniquePrefix('rq');
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: `${p}-branch`, state: 'DEAD', attempt: 3 },
      { bizId: `${p}-budget`, state: 'DEAD', retryCount: 6 },
      { bizId: `${p}-failed`, state: 'FAILED', retryCount: 3, nextRetryAt: 'NOW() + INTERVAL 1 HOUR' },
    ]);
    await setRow(`${p}-branch`, 'last_error = ?, last_branch = ?', [
      'UNEXPECTED_BRANCH: "MAYBE_CREATED" (not a branch code of seed 000 §7.4), instance FI-9 status 10',
      'MAYBE_CREATED',
    ]);
    await setRow(`${p}-budget`, 'last_error = ?', ['LOOKUP_TIMEOUT: no complete answer within 5000 ms']);
    const before = await tokensOf(p);
    const file = join(dir, `${p}.csv`);
    writeFileSync(file, `biz_type,biz_id\n${BIZ_TYPE},${p}-branch\n${BIZ_TYPE},${p}-budget\n${BIZ_TYPE},${p}-failed\n`);
    const evidence = evidenceFile();
    const r = await requeue(['--from', file, '--operation-id', `INC-17-${p}`, '--execute'], { evidence });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(summaryOf(r.stdout)).toMatchObject({
      exitCode: 0,
      dryRun: false,
      items: 3,
      answered: 3,
      byCode: { REQUEUED: 3 },
      refused: 0,
      repeated: 0,
      selector: 'file of 3 command(s)',
    });
    expect(resultsOf(r.stdout).map((x) => [x['line'], x['bizId'], x['code']])).toEqual([
      [2, `${p}-branch`, 'REQUEUED'],
      [3, `${p}-budget`, 'REQUEUED'],
      [4, `${p}-failed`, 'REQUEUED'],
    ]);
    const rows = await byKey(p);
    for (const k of ['branch', 'budget', 'failed'])
      expect(rows[k], k).toMatchObject({
        state: 'UNKNOWN',
        retry_count: 0,
        claim_owner: null,
        last_error: expect.stringMatching(/^REQUEUED: was (DEAD|FAILED) after \d retr/),
      });
    expect(rows['branch']!.last_error).toContain('UNEXPECTED_BRANCH: "MAYBE_CREATED"');
    // the same token and attempt, and due now
    const after = await tokensOf(p);
    expect(after.map((t) => [t.request_token, t.attempt])).toEqual(before.map((t) => [t.request_token, t.attempt]));
    expect(after.every((t) => t.next_retry_at === null)).toBe(true);

    // one evidence line and one audit row per command
    const lines = evidenceOf(evidence);
    expect(lines.map((l) => l['type'])).toEqual(['run', 'decision', 'decision', 'decision', 'end']);
    expect(lines.every((l) => l['format'] === 'fcctl.requeue-evidence.v1' && l['operationId'] === `INC-17-${p}`)).toBe(
      true,
    );
    expect(lines.find((l) => l['bizId'] === `${p}-branch`)).toMatchObject({
      type: 'decision',
      code: 'REQUEUED',
      dryRun: false,
      before: { state: 'DEAD', attempt: 3 },
      after: { state: 'UNKNOWN', retryCount: 0, attempt: 3, requestToken: `tok-${p}-branch` },
    });
    expect(lines.at(-1)).toMatchObject({ type: 'end', exitCode: 0, byCode: { REQUEUED: 3 } });
    const audit = await auditOf(`INC-17-${p}`);
    expect(audit).toHaveLength(3);
    expect(
      audit.every(
        (a) =>
          a['action'] === 'APPLY_REQUEUE' &&
          a['outcome'] === 'REQUEUED' &&
          a['sch_id'] === null &&
          a['answer_uuid'] === null &&
          a['run_id'] === lines[0]!['runId'],
      ),
    ).toBe(true);
    const branchAudit = audit.find((a) => JSON.parse(String(a['expected_json'])).bizId === `${p}-branch`)!;
    expect(JSON.parse(String(branchAudit['expected_json']))).toEqual({
      bizType: BIZ_TYPE,
      bizId: `${p}-branch`,
      selector: 'file of 3 command(s)',
      states: ['DEAD', 'FAILED'],
      reason: null,
    });
    expect(JSON.parse(String(branchAudit['observed_json']))).toMatchObject({
      row: { state: 'DEAD', biz_id: `${p}-branch`, retry_count: 0, attempt: 3 },
      written: { state: 'UNKNOWN', retryCount: 0 },
    });

    // resolve-unknown: found → DONE with no POST; not found → one POST with the row's own token and attempt
    await fc.addInstances([owned(`${p}-branch`, 30)]);
    const resolved = await runCli(
      ['--json', 'apply-command', 'resolve-unknown', '--request-timeout', '1', '--lease-seconds', '30'],
      { env },
    );
    expect(resolved.code).toBe(0);
    const log = (await fc.log()).filter((e) => e.bizId?.startsWith(p));
    expect(log.filter((e) => e.bizId === `${p}-branch`).map((e) => e.method)).toEqual(['GET']);
    const budget = log.filter((e) => e.bizId === `${p}-budget`);
    expect(budget.map((e) => e.method)).toEqual(['GET', 'POST']);
    expect(budget[1]).toMatchObject({ requestToken: `tok-${p}-budget`, attempt: 1 });
    expect((await byKey(p))['branch']).toMatchObject({ state: 'DONE', remote_status: 30, flow_status: 30 });
  });

  test('a dry run (no --execute) reports what each would answer and writes nothing but evidence lines marked dryRun', async () => {
    const p = uniquePrefix('rqdry');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'DEAD', retryCount: 6 }]);
    const before = await checksum();
    const evidence = evidenceFile();
    const r = await requeue([...key(`${p}-1`), '--operation-id', `dry-${p}`], { evidence });
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ dryRun: true, byCode: { WOULD_REQUEUE: 1 } });
    expect(summaryOf(r.stdout)['byCode']).not.toHaveProperty('REQUEUED');
    expect(resultsOf(r.stdout)[0]).toMatchObject({
      code: 'WOULD_REQUEUE',
      dryRun: true,
      reason: expect.stringMatching(/^would be UNKNOWN again with its retry budget reset/),
    });
    expect(await checksum()).toBe(before);
    expect(evidenceOf(evidence).filter((l) => l['type'] === 'decision')).toEqual([
      expect.objectContaining({
        dryRun: true,
        code: 'WOULD_REQUEUE',
        after: expect.objectContaining({ state: 'UNKNOWN' }),
      }),
    ]);
    // the operation id was not used up: --execute under it works
    expect((await requeue([...key(`${p}-1`), '--operation-id', `dry-${p}`, '--execute'])).code).toBe(0);
    expect((await byKey(p))['1']).toMatchObject({ state: 'UNKNOWN', retry_count: 0 });
  });

  test('the same operation id again returns the first answers and changes nothing — also after the command went DEAD again', async () => {
    const p = uniquePrefix('rqidem');
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: `${p}-dead`, state: 'DEAD', retryCount: 6 },
      { bizId: `${p}-done`, state: 'DONE' },
    ]);
    const op = `idem-${p}`;
    const file = join(dir, `${p}.jsonl`);
    writeFileSync(
      file,
      `{"bizType":"${BIZ_TYPE}","bizId":"${p}-dead"}\n{"bizType":"${BIZ_TYPE}","bizId":"${p}-done"}\n`,
    );
    const first = await requeue(['--from', file, '--operation-id', op, '--execute']);
    expect(first.code).toBe(1);
    expect(resultsOf(first.stdout).map((x) => [x['code'], x['repeated']])).toEqual([
      ['REQUEUED', false],
      ['NOT_REQUEUABLE', false],
    ]);
    // it dies again; the same operation must not revive it a second time
    await setRow(`${p}-dead`, "state = 'DEAD', retry_count = 6, last_error = 'LOOKUP_TIMEOUT: again'");
    const before = await checksum();
    for (const execute of [['--execute'], []]) {
      const again = await requeue(['--from', file, '--operation-id', op, ...execute]);
      expect(again.code).toBe(1);
      expect(resultsOf(again.stdout).map((x) => [x['code'], x['repeated'], x['reason']])).toEqual(
        resultsOf(first.stdout).map((x) => [x['code'], true, x['reason']]),
      );
      expect(summaryOf(again.stdout)).toMatchObject({ repeated: 2, refused: 1 });
    }
    expect(await checksum()).toBe(before);
    expect(await auditOf(op)).toHaveLength(2);
    // the same id for another selection: refused whole, nothing written or recorded
    const other = await requeue([...key(`${p}-dead`), '--operation-id', op, '--execute']);
    expect(other.code).toBe(1);
    expect(summaryOf(other.stdout)).toMatchObject({ stoppedBy: 'operation-conflict', refused: 1, answered: 0 });
    expect(resultsOf(other.stdout)).toEqual([
      expect.objectContaining({
        code: 'OPERATION_CONFLICT',
        reason: `operation id already used for file of 2 command(s), not for key "${BIZ_TYPE}" "${p}-dead"; use a new operation id`,
      }),
    ]);
    expect(await checksum()).toBe(before);
    // a new operation id revives it
    expect((await requeue([...key(`${p}-dead`), '--operation-id', `${op}-2`, '--execute'])).code).toBe(0);
    expect((await byKey(p))['dead']).toMatchObject({ state: 'UNKNOWN', retry_count: 0 });
  });

  test('--dead takes only DEAD rows (of --reason when given); under the same operation id again, exactly those and none that died since', async () => {
    const p = uniquePrefix('rqdead');
    // the shared database holds DEAD rows of other tests: a --reason no other test uses keeps this one's selection its own
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: `${p}-409a`, state: 'DEAD', retryCount: 6 },
      { bizId: `${p}-409b`, state: 'DEAD', retryCount: 6 },
      { bizId: `${p}-own`, state: 'DEAD' },
      { bizId: `${p}-failed409`, state: 'FAILED', retryCount: 2 },
    ]);
    for (const k of ['409a', '409b', 'failed409'])
      await setRow(`${p}-${k}`, 'last_error = ?', ['APPLY_HTTP_418: teapot']);
    await setRow(`${p}-own`, 'last_error = ?', ['OWNERSHIP_MISMATCH: x']);
    const op = `dead-${p}`;
    const r = await requeue(['--dead', '--reason', 'APPLY_HTTP_418', '--operation-id', op, '--execute']);
    expect(r.code).toBe(0);
    expect(resultsOf(r.stdout).map((x) => x['bizId'])).toEqual([`${p}-409a`, `${p}-409b`]);
    expect(summaryOf(r.stdout)).toMatchObject({ selector: 'dead --reason APPLY_HTTP_418', byCode: { REQUEUED: 2 } });
    let rows = await byKey(p);
    expect([rows['409a']!.state, rows['409b']!.state, rows['own']!.state, rows['failed409']!.state]).toEqual([
      'UNKNOWN',
      'UNKNOWN',
      'DEAD',
      'FAILED',
    ]);
    // another row dies for the same reason; the operation again answers its first two, nothing new
    await setRow(`${p}-failed409`, "state = 'DEAD', retry_count = 6");
    const before = await checksum();
    const again = await requeue(['--dead', '--reason', 'APPLY_HTTP_418', '--operation-id', op, '--execute']);
    expect(resultsOf(again.stdout).map((x) => [x['bizId'], x['repeated']])).toEqual([
      [`${p}-409a`, true],
      [`${p}-409b`, true],
    ]);
    expect(await checksum()).toBe(before);
    rows = await byKey(p);
    expect(rows['failed409']).toMatchObject({ state: 'DEAD' });
  });

  test('every other state is refused with its reason (exit 1), nothing changes; a live claim is CLAIMED', async () => {
    const p = uniquePrefix('rqno');
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: `${p}-pending`, state: 'PENDING' },
      { bizId: `${p}-unknown` },
      { bizId: `${p}-done`, state: 'DONE' },
      { bizId: `${p}-claimed`, state: 'FAILED', retryCount: 1 },
      { bizId: `${p}-expired`, state: 'FAILED', retryCount: 1 },
    ]);
    await setRow(`${p}-claimed`, "claim_owner = 'host:1:live', claim_expires_at = NOW() + INTERVAL 5 MINUTE");
    await setRow(`${p}-expired`, "claim_owner = 'host:1:gone', claim_expires_at = NOW() - INTERVAL 5 MINUTE");
    const file = join(dir, `${p}.csv`);
    writeFileSync(
      file,
      `biz_type,biz_id\n${['pending', 'unknown', 'done', 'claimed', 'missing', 'expired'].map((k) => `${BIZ_TYPE},${p}-${k}`).join('\n')}\n`,
    );
    const op = `no-${p}`;
    const r = await requeue(['--from', file, '--operation-id', op, '--execute']);
    expect(r.code).toBe(1);
    expect(resultsOf(r.stdout).map((x) => [x['code'], x['reason']])).toEqual([
      ['NOT_REQUEUABLE', 'PENDING: not sent yet by its service; resolve-unknown takes it after --pending-grace'],
      ['NOT_REQUEUABLE', 'UNKNOWN: already waiting for resolve-unknown, which looks it up first'],
      ['NOT_REQUEUABLE', 'DONE: settled; a settled command is never resent'],
      [
        'CLAIMED',
        expect.stringMatching(
          /^claimed by host:1:live until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d; requeue it once that lease is over$/,
        ),
      ],
      ['NO_COMMAND', `no flow_apply_command for biz type "${BIZ_TYPE}", biz id "${p}-missing"`],
      ['REQUEUED', expect.stringContaining('was FAILED after 1 retry')],
    ]);
    expect(summaryOf(r.stdout)).toMatchObject({
      exitCode: 1,
      refused: 5,
      byCode: { NOT_REQUEUABLE: 3, CLAIMED: 1, NO_COMMAND: 1, REQUEUED: 1 },
    });
    const rows = await byKey(p);
    expect([
      rows['pending']!.state,
      rows['unknown']!.state,
      rows['done']!.state,
      rows['claimed']!.state,
      rows['expired']!.state,
    ]).toEqual(['PENDING', 'UNKNOWN', 'DONE', 'FAILED', 'UNKNOWN']);
    expect(rows['claimed']).toMatchObject({ retry_count: 1, claim_owner: 'host:1:live' });
    // refusals are audited too, one row per command
    expect((await auditOf(op)).map((a) => a['outcome']).sort()).toEqual([
      'CLAIMED',
      'NOT_REQUEUABLE',
      'NOT_REQUEUABLE',
      'NOT_REQUEUABLE',
      'NO_COMMAND',
      'REQUEUED',
    ]);
  });

  test('a resolver holding the old generation changes nothing after a requeue (its guard no longer matches)', async () => {
    const { openDb } = await import('../../src/lib/db/connect.js');
    const { applyWrite, claimRows } = await import('../../src/lib/apply-command/resolve-unknown/store.js');
    const { generationOf } = await import('../../src/lib/apply-command/types.js');
    const p = uniquePrefix('rqstale');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'FAILED', retryCount: 2 }]);
    const db = await openDb('SH database', dbs.shUrl);
    try {
      const [mine] = (await claimRows(db, 'owner-old', APP.key, 600, '0', 10_000, 30)).filter((r) =>
        r.biz_id.startsWith(p),
      );
      expect(mine).toBeDefined();
      // its lease runs out while the flow center is slow; a person requeues the command
      await setRow(`${p}-1`, 'claim_expires_at = NOW() - INTERVAL 1 SECOND');
      expect((await requeue([...key(`${p}-1`), '--operation-id', `stale-${p}`, '--execute'])).code).toBe(0);
      const gen = generationOf(mine!);
      const late = await applyWrite(db, 'owner-old', {
        kind: 'fail',
        gen,
        state: 'DEAD',
        retryCount: 6,
        backoffSeconds: null,
        lastError: 'LOOKUP_TIMEOUT: late',
      });
      expect(late).toEqual({ kind: 'stale' });
      expect((await byKey(p))['1']).toMatchObject({ state: 'UNKNOWN', retry_count: 0, claim_owner: null });
    } finally {
      await db.close();
    }
  });

  test('two processes with the same operation id at once: each command requeued and audited once', {
    timeout: 60_000,
  }, async () => {
    const p = uniquePrefix('rqrace');
    const n = 60;
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: n }, (_, i) => ({ bizId: `${p}-${i}`, state: 'DEAD' as const, retryCount: 6 })),
    );
    const file = join(dir, `${p}.csv`);
    writeFileSync(
      file,
      `biz_type,biz_id\n${Array.from({ length: n }, (_, i) => `${BIZ_TYPE},${p}-${i}`).join('\n')}\n`,
    );
    const op = `race-${p}`;
    const args = [
      '--json',
      'apply-command',
      'requeue',
      '--from',
      file,
      '--operation-id',
      op,
      '--execute',
      '--concurrency',
      '8',
    ];
    const [a, b] = await Promise.all([
      spawnCli([...args, '--evidence', evidenceFile()], { env }),
      spawnCli([...args, '--evidence', evidenceFile()], { env }),
    ]);
    expect([a.code, b.code, a.stderr, b.stderr]).toEqual([0, 0, '', '']);
    const fresh = [a, b].map((x) => resultsOf(x.stdout).filter((r) => !r['repeated']).length);
    expect(fresh[0]! + fresh[1]!).toBe(n);
    expect(
      (await commandsOf(dbs.admin, dbs.shName, p)).every((x) => x.state === 'UNKNOWN' && x.retry_count === 0),
    ).toBe(true);
    expect(await auditOf(op)).toHaveLength(n);
    const [ops] = await dbs.admin.query(
      `SELECT COUNT(*) AS n FROM \`${dbs.shName}\`.fcctl_requeue_operation WHERE biz_id LIKE ?`,
      [`${p}%`],
    );
    expect(Number((ops as Array<{ n: string }>)[0]!.n)).toBe(n);
  });

  test('environment: an unreachable database is exit 3; a version-1 SH schema without the requeue table is exit 3 naming the fix, until db init adds it', async () => {
    const down = await runCli(
      ['apply-command', 'requeue', '--dead', '--operation-id', 'env-1', '--evidence', evidenceFile()],
      { env: { ...env, FCCTL_SH_DATABASE_URL: 'mysql://fcctl:pw-x@127.0.0.1:1/none' } },
    );
    expect(down.code).toBe(3);
    expect(down.stderr).toMatch(/^fcctl: cannot connect to SH database/);
    const old = await freshDatabases('requeuev1');
    try {
      const oldEnv = old.env();
      expect((await runCli(['db', 'init', '--side', 'sh'], { env: oldEnv })).code).toBe(0);
      await old.admin.query(`DROP TABLE \`${old.shName}\`.fcctl_requeue_operation`);
      await old.admin.query(`UPDATE \`${old.shName}\`.fcctl_schema_version SET version = 1`);
      const r = await runCli(
        ['apply-command', 'requeue', '--dead', '--operation-id', 'env-2', '--evidence', evidenceFile()],
        { env: oldEnv },
      );
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(
        /^fcctl: SH schema missing a table .*fcctl_requeue_operation.*: run `fcctl db init --side sh`\n$/,
      );
      const check = await runCli(['db', 'check', '--side', 'sh'], { env: oldEnv });
      expect(check.code).toBe(3);
      expect(check.stderr).toContain('sh: missing table fcctl_requeue_operation');
      const init = await runCli(['--json', 'db', 'init', '--side', 'sh'], { env: oldEnv });
      expect(init.code).toBe(0);
      const [v] = await old.admin.query(`SELECT version FROM \`${old.shName}\`.fcctl_schema_version WHERE side = 'sh'`);
      // the current version (2 brought the requeue table; later versions add others)
      expect((v as Array<{ version: number }>)[0]!.version).toBe(SCHEMA_VERSION);
      expect((await runCli(['db', 'check', '--side', 'sh'], { env: oldEnv })).code).toBe(0);
      expect(
        (
          await runCli(
            ['apply-command', 'requeue', '--dead', '--operation-id', 'env-3', '--evidence', evidenceFile()],
            { env: oldEnv },
          )
        ).code,
      ).toBe(0);
    } finally {
      await old.drop();
    }
  });

  test('the output of apply-command scan --format json, summary line included, feeds --from', async () => {
    const p = uniquePrefix('rqscan');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'DEAD', retryCount: 6 }]);
    const scan = await runCli(['apply-command', 'scan', '--format', 'json', '--limit', '10000'], { env });
    expect(scan.code).toBe(0);
    const lines = jsonLines(scan.stdout);
    expect(lines.some((l) => l['type'] === 'summary')).toBe(true);
    const file = join(dir, `${p}-scan.jsonl`);
    writeFileSync(file, scan.stdout);
    const r = await requeue(['--from', file, '--operation-id', `scan-${p}`]);
    expect(r.stderr).toBe('');
    const rows = lines.filter((l) => l['type'] === 'row');
    expect(summaryOf(r.stdout)).toMatchObject({ dryRun: true, items: rows.length });
    expect(resultsOf(r.stdout).find((x) => x['bizId'] === `${p}-1`)).toMatchObject({ code: 'WOULD_REQUEUE' });
  });

  test('a table on a terminal, and the dry-run note', async () => {
    const p = uniquePrefix('rqtty');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'DEAD' }]);
    const r = await runCli(
      ['apply-command', 'requeue', ...key(`${p}-1`), '--operation-id', `tty-${p}`, '--evidence', evidenceFile()],
      { env, tty: true },
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/would answer \(dry run\)/);
    expect(r.stdout).toMatch(new RegExp(`${p}-1 +WOULD_REQUEUE +would be UNKNOWN again`));
    expect(r.stdout + r.stderr).not.toMatch(/\bREQUEUED\b/);
    expect(r.stdout + r.stderr).toMatch(/dry run: nothing was written or recorded; pass --execute to requeue/);
  });
});
