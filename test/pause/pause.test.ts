import { databaseIdentity } from '../../src/lib/db/identity.js';
import { SCHEMA_VERSION } from '../../src/lib/db/schema.js';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import {
  APP_FLOW,
  commandsOf,
  flowEnv,
  insertCommands,
  ownedInstance,
  summaryOf,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import { expectRefused } from '../helpers/bad-input.js';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { answerHash, insertAnswers, insertProjections, type TestAnswer, testUuid } from '../helpers/manifest.js';
import { servicesTest } from '../helpers/services.js';
import { openDb } from '../../src/lib/db/connect.js';
import { pauseCheck } from '../../src/lib/pause/run.js';
import { runReconcile } from '../../src/lib/reconcile/run/run.js';
import { readProm } from '../helpers/textfile.js';

// Issue 19 §3: fcctl pause / resume / pause --list, and the SH commands that obey the switch.
const test = servicesTest({ prefix: 'pause', init: 'all', flowApps: APP_FLOW });
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;

const FORM = testUuid('pause', 'form');
const answers: TestAnswer[] = Array.from({ length: 60 }, (_, i) => ({
  answerUuid: testUuid('pause', i),
  formUuid: FORM,
}));
const pauseTables = async () =>
  `${await checksumTables(dbs.admin, dbs.fcName, ['fcctl_pause', 'fcctl_pause_event'])} ${await checksumTables(dbs.admin, dbs.shName, ['fcctl_pause', 'fcctl_pause_event'])}`;
const events = async (db: string) => {
  const [rows] = await dbs.admin.query(
    `SELECT command, action, reason, until_at, actor, host, create_time FROM \`${db}\`.fcctl_pause_event ORDER BY id`,
  );
  return rows as Array<Record<string, unknown>>;
};
const cli = (args: string[], e = env) => runCli(['--json', ...args], { env: e });
const rowsOf = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'row');

test.beforeAll(async ({ dbs: d, tmp, flowCenter }) => {
  dbs = d;
  dir = tmp;
  env = flowEnv(dbs, flowCenter);
  await insertAnswers(dbs.admin, dbs.fcName, answers);
  await insertProjections(
    dbs.admin,
    dbs.shName,
    answers.map((a) => ({
      answerUuid: a.answerUuid,
      formUuid: FORM,
      revision: 1,
      contentHash: answerHash(a),
      createTime: '2026-10-01 08:00:05',
    })),
  );
});

describe('db init on an older database', () => {
  test('creates the pause tables on a version-2 database and records the current version; db check then passes', async () => {
    await dbs.admin.query(`DROP TABLE \`${dbs.shName}\`.fcctl_pause, \`${dbs.shName}\`.fcctl_pause_event`);
    await dbs.admin.query(`UPDATE \`${dbs.shName}\`.fcctl_schema_version SET version = 2`);
    const check = await cli(['db', 'check', '--side', 'sh']);
    expect(check.code).not.toBe(0);
    expect(check.stdout + check.stderr).toMatch(/fcctl_pause/);
    // Before db init, nobody can have paused: the commands run as not paused.
    const list = await cli(['pause', '--list']);
    expect(list.code).toBe(0);
    const init = await cli(['db', 'init', '--side', 'sh']);
    expect(init.code).toBe(0);
    const [rows] = await dbs.admin.query(`SELECT version FROM \`${dbs.shName}\`.fcctl_schema_version`);
    expect((rows as Array<{ version: number }>)[0]!.version).toBe(SCHEMA_VERSION);
    expect((await cli(['db', 'check', '--side', 'all'])).code).toBe(0);
  });
});

describe('pause, resume, pause --list', () => {
  test('pause and resume write at once (no --execute), each recorded with who, host and time; a second pause replaces the first', async () => {
    const first = await cli(['pause', 'reconcile', 'run', '--reason', 'SH failover']);
    expect(first.code).toBe(0);
    expect(summaryOf(first.stdout)).toMatchObject({
      command: 'pause',
      paused: 'reconcile run',
      database: 'SH',
      reason: 'SH failover',
      until: null,
      replaced: null,
    });
    const second = await cli([
      'pause',
      'reconcile run',
      '--reason',
      'SH failover, part 2',
      '--until',
      '2026-12-31T23:00:00+08:00',
    ]);
    expect(summaryOf(second.stdout)).toMatchObject({
      reason: 'SH failover, part 2',
      until: '2026-12-31T15:00:00Z',
      replaced: { reason: 'SH failover', until: null },
    });
    const list = await cli(['pause', '--list', '--format', 'json']);
    expect(rowsOf(list.stdout)).toEqual([
      expect.objectContaining({
        command: 'reconcile run',
        database: 'SH',
        state: 'paused',
        reason: 'SH failover, part 2',
        until: '2026-12-31T15:00:00Z',
      }),
    ]);
    expect(summaryOf(list.stdout)).toMatchObject({
      command: 'pause --list',
      databases: ['FC', 'SH'],
      paused: 1,
      expired: 0,
    });
    const resumed = await cli(['resume', 'reconcile', 'run', '--reason', 'failover done']);
    expect(summaryOf(resumed.stdout)).toMatchObject({
      resumed: 'reconcile run',
      wasPaused: true,
      ended: { reason: 'SH failover, part 2', expired: false },
    });
    // Resuming again changes nothing and records nothing.
    const again = await cli(['resume', 'reconcile', 'run']);
    expect(again.code).toBe(0);
    expect(summaryOf(again.stdout)).toMatchObject({ wasPaused: false, ended: null });
    const history = await events(dbs.shName);
    expect(history.map((e) => [e['command'], e['action'], e['reason'], e['until_at']])).toEqual([
      ['reconcile run', 'pause', 'SH failover', null],
      ['reconcile run', 'pause', 'SH failover, part 2', '2026-12-31 15:00:00'],
      ['reconcile run', 'resume', 'failover done', null],
    ]);
    expect(
      history.every(
        (e) =>
          /^.+@.+$/.test(String(e['actor'])) &&
          String(e['host']).length > 0 &&
          /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(String(e['create_time'])),
      ),
    ).toBe(true);
    expect(rowsOf((await cli(['pause', '--list'])).stdout)).toEqual([]);
  });

  test('pause --list as a table on a terminal, and as CSV', async () => {
    await cli(['pause', 'deliveries', 'send', '--reason', 'relay upgrade']);
    try {
      const table = await runCli(['pause', '--list'], { env, tty: true });
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/command\s+database\s+state\s+reason/);
      expect(table.stdout).toMatch(/deliveries send\s+FC\s+paused\s+relay upgrade/);
      const csv = await runCli(['pause', '--list', '--format', 'csv'], { env });
      expect(csv.stdout.split('\n')[0]).toBe('command,database,state,reason,paused by,paused at (UTC),until (UTC)');
      expect(csv.stdout).toContain('deliveries send,FC,paused,relay upgrade,');
    } finally {
      await cli(['resume', 'deliveries', 'send']);
    }
  });

  const bad: Array<{ name: string; argv: string[]; says: RegExp }> = [
    {
      name: 'a command that cannot be paused',
      argv: ['pause', 'deliveries', 'scan', '--reason', 'x'],
      says: /"deliveries scan" cannot be paused: the pausable commands are 'deliveries send'/,
    },
    {
      name: 'an unknown command to resume',
      argv: ['resume', 'retire-absent'],
      says: /"retire-absent" cannot be paused/,
    },
    { name: 'no command', argv: ['pause', '--reason', 'x'], says: /name the command/ },
    { name: 'no --reason', argv: ['pause', 'deliveries', 'send'], says: /needs --reason/ },
    { name: 'an empty --reason', argv: ['pause', 'deliveries', 'send', '--reason', '  '], says: /must not be empty/ },
    { name: 'a --reason of two lines', argv: ['pause', 'deliveries', 'send', '--reason', 'a\nb'], says: /one line/ },
    {
      name: 'an --until that is no time',
      argv: ['pause', 'deliveries', 'send', '--reason', 'x', '--until', 'soon'],
      says: /--until "soon": expected a duration/,
    },
    {
      name: 'an --until without offset',
      argv: ['pause', 'deliveries', 'send', '--reason', 'x', '--until', '2030-01-01T00:00:00'],
      says: /with its offset/,
    },
    {
      name: 'an --until in the past',
      argv: ['pause', 'deliveries', 'send', '--reason', 'x', '--until', '2020-01-01T00:00:00Z'],
      says: /in the past/,
    },
    { name: '--list with a command', argv: ['pause', '--list', 'deliveries', 'send'], says: /--list takes no command/ },
    { name: 'an unknown --format', argv: ['pause', '--list', '--format', 'xml'], says: /--format/ },
  ];
  for (const c of bad) {
    test(`refused with one line, exit 2, nothing written: ${c.name}`, async () => {
      const before = await pauseTables();
      await expectRefused(dbs, { name: `pause: ${c.name}`, argv: c.argv, says: c.says });
      expect(await pauseTables()).toBe(before);
    });
  }
  test('pause --list with no database configured: exit 2', async () => {
    const r = await runCli(['pause', '--list'], { env: {} });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^fcctl: pause --list reads the FC and SH databases/);
  });
});

describe('apply-command resolve-unknown obeys the switch', () => {
  test('paused at start: exit 0, stoppedBy paused with the reason, no lookup, no claim; resumed: the next run settles the rows', async ({
    flowCenter,
  }) => {
    const p = uniquePrefix('pz');
    const ids = Array.from({ length: 30 }, (_, i) => `${p}-${i}`);
    await insertCommands(
      dbs.admin,
      dbs.shName,
      ids.map((bizId) => ({ bizId, state: 'UNKNOWN' })),
    );
    await flowCenter.addInstances(ids.map((bizId) => owned(bizId)));
    await cli(['pause', 'apply-command', 'resolve-unknown', '--reason', 'flow center incident']);
    const metrics = join(dir, 'resolve.prom');
    const r = await cli(['apply-command', 'resolve-unknown', '--metrics-file', metrics]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 0,
      lookups: 0,
      posts: 0,
      stoppedBy: 'paused',
      paused: { reason: 'flow center incident', source: 'database' },
    });
    expect(
      (await commandsOf(dbs.admin, dbs.shName, p)).every((c) => c.state === 'UNKNOWN' && c.claim_owner === null),
    ).toBe(true);
    expect(readProm(metrics)).toContain('fcctl_paused{command="apply-command resolve-unknown"} 1\n');
    // --pause-file pauses it as well, whatever the table says
    await cli(['resume', 'apply-command', 'resolve-unknown']);
    const file = join(dir, 'pause-resolve');
    writeFileSync(file, 'local brake\n');
    const f = await cli(['apply-command', 'resolve-unknown', '--pause-file', file]);
    expect(summaryOf(f.stdout)).toMatchObject({
      claimed: 0,
      stoppedBy: 'paused',
      paused: { reason: 'local brake', source: 'file' },
    });
    const go = await cli([
      'apply-command',
      'resolve-unknown',
      '--metrics-file',
      metrics,
      '--pause-file',
      join(dir, 'no-such-file'),
    ]);
    expect(go.code).toBe(0);
    expect(summaryOf(go.stdout)).toMatchObject({ claimed: 30, done: 30, stoppedBy: 'drained' });
    expect(readProm(metrics)).toContain('fcctl_paused{command="apply-command resolve-unknown"} 0\n');
  });
});
const owned = (bizId: string) => ownedInstance(bizId, 20, { instanceId: `FI-${bizId}` });

describe('reconcile run obeys the switch', () => {
  test('paused at start: exit 0, stoppedBy paused, nothing scanned; paused mid-scan: stops at a commit and the next run resumes from the checkpoint', async () => {
    const out = join(dir, 'run');
    await cli(['pause', 'reconcile', 'run', '--reason', 'nightly off tonight']);
    const metrics = join(dir, 'reconcile.prom');
    const base = ['reconcile', 'run', '--school', '5', '--form', FORM, '--out-dir', out, '--size', '10'];
    const r = await cli([...base, '--metrics-file', metrics]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({
      command: 'reconcile run',
      exitCode: 0,
      stoppedBy: 'paused',
      paused: { reason: 'nightly off tonight' },
      phase: 'task-start',
    });
    expect(existsSync(join(out, 'run.json'))).toBe(false);
    const { readFileSync } = await import('node:fs');
    const prom = readProm(metrics);
    expect(prom).toContain(`fcctl_paused{command="reconcile run",school="5",form="${FORM}"} 1\n`);
    expect(prom).not.toContain('fcctl_last_success_timestamp_seconds');
    await cli(['resume', 'reconcile', 'run']);

    // Mid-scan: the pause is set after the FC scan's second page; the scan stops at its next commit.
    const fcDb = await openDb('FC database', dbs.fcUrl);
    const shDb = await openDb('SH database', dbs.shUrl);
    try {
      const stopped = await runReconcile(
        {
          schId: '5',
          formUuid: FORM,
          outDir: out,
          size: 10,
          restart: false,
          fcDatabase: databaseIdentity(dbs.fcUrl),
          shDatabase: databaseIdentity(dbs.shUrl),
        },
        {
          fcDb: async () => fcDb,
          shDb: async () => shDb,
          signal: new AbortController().signal,
          paused: pauseCheck('reconcile run', async () => shDb),
          onPage: async (side, p) => {
            if (side === 'fc' && p.page === 2) await cli(['pause', 'reconcile', 'run', '--reason', 'stop mid-scan']);
          },
        },
      );
      expect(stopped).toMatchObject({
        kind: 'stopped',
        phase: 'scan-fc',
        reason: 'paused',
        paused: { reason: 'stop mid-scan' },
      });
      const checkpoint = JSON.parse(readFileSync(join(out, 'fc-manifest.checkpoint.json'), 'utf8')) as {
        rows: number;
        completed: boolean;
      };
      expect(checkpoint.completed).toBe(false);
      expect(checkpoint.rows).toBeGreaterThanOrEqual(20);
      expect(checkpoint.rows).toBeLessThan(60);
    } finally {
      await fcDb.close();
      await shDb.close();
    }
    // Still paused: the next run stops at start and keeps the run in the directory.
    expect(summaryOf((await cli(base)).stdout)).toMatchObject({
      stoppedBy: 'paused',
      paused: { reason: 'stop mid-scan' },
    });
    await cli(['resume', 'reconcile', 'run']);
    const done = await cli([...base, '--metrics-file', metrics]);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(summaryOf(done.stdout)).toMatchObject({ exitCode: 0, resumed: true });
    expect(summaryOf(done.stdout)['stoppedBy']).toBeUndefined();
    expect(readProm(metrics)).toContain(`fcctl_paused{command="reconcile run",school="5",form="${FORM}"} 0\n`);
    // --pause-file on reconcile run
    const file = join(dir, 'pause-reconcile');
    writeFileSync(file, '');
    const f = await cli([...base, '--pause-file', file]);
    expect(f.code).toBe(0);
    expect(summaryOf(f.stdout)).toMatchObject({
      stoppedBy: 'paused',
      paused: { reason: `pause file ${file} exists`, source: 'file' },
    });
  });
});

describe('resolve-unknown paused mid-run (the runner, the check swapped for one that flips)', () => {
  test('the check runs before each claim: after the pause no row is claimed, rows claimed are settled or released, none stays claimed', async ({
    flowCenter,
  }) => {
    const { FlowClient } = await import('../../src/lib/flow/client.js');
    const { runResolve } = await import('../../src/lib/apply-command/resolve-unknown/run.js');
    const p = uniquePrefix('pm');
    const ids = Array.from({ length: 30 }, (_, i) => `${p}-${i}`);
    await insertCommands(
      dbs.admin,
      dbs.shName,
      ids.map((bizId) => ({ bizId, state: 'UNKNOWN' })),
    );
    await flowCenter.addInstances(ids.map((bizId) => owned(bizId)));
    const shDb = await openDb('SH database', dbs.shUrl);
    const flow = new FlowClient({
      baseUrl: flowCenter.url,
      appKey: '100021',
      secret: APP_FLOW['100021']!,
      timeoutMs: 2000,
    });
    let checks = 0;
    try {
      const summary = await runResolve(
        {
          batchSize: 10,
          concurrency: 2,
          maxRows: Number.MAX_SAFE_INTEGER,
          maxSeconds: 60,
          leaseSeconds: 30,
          pendingGraceSeconds: 600,
          retry: { baseSeconds: 20, capSeconds: 3600, maxRetries: 6 },
          dryRun: false,
          requestTimeoutMs: 2000,
          maxConsecutiveErrors: 20,
        },
        {
          db: shDb,
          flow,
          appKey: '100021',
          signal: new AbortController().signal,
          clock: () => performance.now(),
          paused: async () =>
            ++checks === 1
              ? null
              : {
                  command: 'apply-command resolve-unknown',
                  reason: 'mid-run',
                  pausedBy: 'ops@h',
                  pausedAt: null,
                  until: null,
                  source: 'database',
                },
        },
      );
      expect(summary).toMatchObject({ claimed: 10, stoppedBy: 'paused', paused: { reason: 'mid-run' } });
      expect(summary.done + summary.released).toBe(10);
      expect(summary.releasedByReason['PAUSED'] ?? 0).toBe(summary.released);
      const rows = await commandsOf(dbs.admin, dbs.shName, p);
      expect(rows.filter((r) => r.claim_owner !== null)).toEqual([]);
      expect(rows.filter((r) => r.state === 'UNKNOWN')).toHaveLength(30 - summary.done);
    } finally {
      await flow.close();
      await shDb.close();
    }
  });
});
