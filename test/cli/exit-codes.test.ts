import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect } from 'vitest';
import { APP, insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { SH_TABLES_FOR_CHECKSUM } from '../helpers/bad-input.js';
import { checksumTables, FC_TABLES } from '../helpers/checksum.js';
import { type CliResult, jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import { answerHash, insertAnswers, insertProjections, testUuid } from '../helpers/manifest.js';
import { lockTable, startCli } from '../helpers/table-lock.js';
import { servicesTest } from '../helpers/services.js';
import { readProm } from '../helpers/textfile.js';

const test = servicesTest({ prefix: 'exitcodes', init: 'all', flowApps: { [APP.key]: APP.secret } });

// Issue 17, item 12: the summary's exitCode is the process's, in every cron command (docs/cron),
// and a metrics file that cannot be written is found before any work.
const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const RECONCILE_FORM = testUuid('exit-codes', 'form');
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let flow: FlowCenter;
let dir: string;

const summariesOf = (r: CliResult) => jsonLines(r.stdout).filter((l) => l['type'] === 'summary');
const checksums = async () =>
  `${await checksumTables(dbs.admin, dbs.fcName, FC_TABLES)} ${await checksumTables(dbs.admin, dbs.shName, SH_TABLES_FOR_CHECKSUM)}`;
/** Rows a case leaves due would be relayed by a later case: they are buried after each. */
const buryDue = () =>
  dbs.admin.query(
    `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', claim_owner = NULL WHERE state IN ('PENDING', 'FAILED')`,
  );

test.beforeAll(async ({ dbs: services, flowCenter, tmp }) => {
  dbs = services;
  flow = flowCenter;
  dir = tmp;
  env = dbs.env({
    FCCTL_AMQP_URL: testAmqpUrl(),
    FCCTL_APP_KEY: PUBLISHER.appKey,
    FCCTL_APP_CODE: PUBLISHER.appCode,
    FCCTL_FLOW_URL: flow.url,
    FCCTL_APP_SECRET: APP.secret,
  });
  await insertRegistry(dbs.admin, dbs.fcName);
  await ensureExchange();
  const answers = Array.from({ length: 4 }, (_, i) => ({
    answerUuid: testUuid('exit-codes', i),
    formUuid: RECONCILE_FORM,
  }));
  await insertAnswers(dbs.admin, dbs.fcName, answers);
  await insertProjections(
    dbs.admin,
    dbs.shName,
    answers.map((a) => ({ ...a, contentHash: answerHash(a) })),
  );
}, 60_000);
afterEach(buryDue);

interface CronCase {
  readonly name: string;
  readonly argv: readonly string[];
  readonly code: 0 | 1;
  readonly before?: () => Promise<void>;
}

/** Due outbox rows of a fresh consumer key, with its grant and a queue that receives them. */
async function dueRows(n: number, consumerKey = uniqueConsumerKey('x')) {
  const queue = await bindQueue(consumerKey);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey });
  const ids = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey }, n);
  return { consumerKey, queue, ids };
}

let caseNo = 0;
const outDir = () => join(dir, `run-${++caseNo}`);
const CRON: CronCase[] = [
  {
    name: 'deliveries send: every row accepted',
    argv: ['deliveries', 'send'],
    code: 0,
    before: async () => void (await dueRows(5)),
  },
  // a key holding `.` can never be routed (SPEC §4): FAILED, the run exit 1
  {
    name: 'deliveries send: a row fails its checks',
    argv: ['deliveries', 'send'],
    code: 1,
    before: async () => void (await dueRows(2, 'bad.key')),
  },
  {
    name: 'deliveries send --dry-run',
    argv: ['deliveries', 'send', '--dry-run'],
    code: 0,
    before: async () => void (await dueRows(3)),
  },
  { name: 'deliveries scan', argv: ['deliveries', 'scan'], code: 0 },
  {
    name: 'deliveries scan --fail-if-dead with DEAD rows',
    argv: ['deliveries', 'scan', '--fail-if-dead'],
    code: 1,
    before: async () =>
      void (await insertDeliveries(dbs.admin, dbs.fcName, {
        consumerKey: uniqueConsumerKey('d'),
        state: 'DEAD',
        retryCount: 8,
      })),
  },
  {
    name: 'deliveries scan --format json',
    argv: ['deliveries', 'scan', '--format', 'json', '--fail-if-dead'],
    code: 1,
  },
  { name: 'apply-command scan', argv: ['apply-command', 'scan'], code: 0 },
  { name: 'apply-command scan --format json', argv: ['apply-command', 'scan', '--format', 'json'], code: 0 },
  {
    name: 'apply-command resolve-unknown: every command settled',
    argv: ['apply-command', 'resolve-unknown'],
    code: 0,
    before: () =>
      insertCommands(dbs.admin, dbs.shName, [
        { bizId: `${uniquePrefix('ec')}-1` },
        { bizId: `${uniquePrefix('ec')}-2` },
      ]),
  },
  { name: 'reconcile run', argv: ['reconcile', 'run', '--school', '5', '--form', RECONCILE_FORM], code: 0 },
  {
    name: 'reconcile run of a pair with no rows (a warning)',
    argv: ['reconcile', 'run', '--school', '5', '--form', testUuid('exit-codes', 'empty')],
    code: 1,
  },
];
const needsOutDir = (argv: readonly string[]) => (argv[0] === 'reconcile' ? ['--out-dir', outDir()] : []);

describe("every cron command: the summary's exitCode is the process's exit code (and the metrics')", () => {
  test.each(CRON.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    await c.before?.();
    const metrics = join(dir, `metrics-${++caseNo}.prom`);
    const r = await spawnCli(['--json', ...c.argv, ...needsOutDir(c.argv), '--metrics-file', metrics], { env });
    expect(r.code, r.stderr).toBe(c.code);
    const summaries = summariesOf(r);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!['exitCode']).toBe(r.code);
    // reconcile run's series name their pair too (school, form after command)
    expect(readProm(metrics)).toMatch(
      new RegExp(
        `^fcctl_run_exit_code\\{command="${c.argv.slice(0, 2).join(' ')}"(,[a-z]+="[^"]*")*\\} ${r.code}$`,
        'm',
      ),
    );
  });
});

describe('--metrics-file that cannot be written: exit 3 before any work, nothing done', () => {
  const missing = () => join(dir, 'no-such-dir', `m-${++caseNo}.prom`);
  const aFile = () => {
    const f = join(dir, `plain-file-${++caseNo}`);
    writeFileSync(f, '');
    return join(f, 'm.prom');
  };
  const aDirectory = () => {
    const d = join(dir, `dir-${++caseNo}.prom`);
    mkdirSync(d);
    return d;
  };
  const cases = [
    ['a directory that does not exist', missing, /directory .*no-such-dir does not exist/],
    ['a directory that is a file', aFile, /plain-file-\d+ is not a directory/],
    ['a path that is a directory', aDirectory, /: it is a directory/],
  ] as const;
  const commands = CRON.filter(
    (c, i) => CRON.findIndex((d) => d.argv.slice(0, 2).join(' ') === c.argv.slice(0, 2).join(' ')) === i,
  );

  test.each(
    commands.flatMap((c) =>
      cases.map(([what, path, says]) => [`${c.argv.slice(0, 2).join(' ')}: ${what}`, c, path, says] as const),
    ),
  )('%s', async (_name, c, path, says) => {
    // rows every command would act on
    const { queue } = await dueRows(20);
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${uniquePrefix('mf')}-1` }]);
    const sums = await checksums();
    const run = needsOutDir(c.argv);
    const metrics = path();
    const r = await spawnCli(['--json', ...c.argv, ...run, '--metrics-file', metrics], { env });
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 3, stdout: '' });
    expect(r.stderr).toMatch(
      new RegExp(
        `^fcctl: cannot write --metrics-file ${metrics.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: [^\n]+; nothing was done\n$`,
      ),
    );
    expect(r.stderr).toMatch(says);
    expect(await checksums()).toBe(sums);
    expect(await queue.drain()).toEqual([]);
    if (run.length > 0) expect(existsSync(run[1]!)).toBe(false);
    await queue.close();
  });

  test('deliveries send with 500 due rows and --metrics-file in a missing directory publishes nothing (was: 500 published, "exitCode":0, exit 3)', async () => {
    const { queue, consumerKey } = await dueRows(500);
    const r = await spawnCli(['--json', 'deliveries', 'send', '--metrics-file', '/missing/dir/x.prom'], { env });
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(
      'fcctl: cannot write --metrics-file /missing/dir/x.prom: directory /missing/dir does not exist; nothing was done\n',
    );
    expect(summariesOf(r)).toEqual([]);
    expect(await queue.drain()).toEqual([]);
    const [rows] = await dbs.admin.query(
      `SELECT state, COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? GROUP BY state`,
      [consumerKey],
    );
    expect(rows).toEqual([{ state: 'PENDING', n: '500' }]);
    await queue.close();
  });
});

describe('a metrics file that becomes unwritable while the run is under way', () => {
  test('exit 3, and the summary printed says 3 too', { timeout: 60_000 }, async () => {
    const metricsDir = join(dir, 'vanishing');
    mkdirSync(metricsDir);
    const metrics = join(metricsDir, 'm.prom');
    // The run waits on its first FC query; meanwhile the metrics path becomes a directory.
    const lock = await lockTable(dbs.fcName, 'answer');
    try {
      const run = startCli(
        [
          '--json',
          'reconcile',
          'run',
          '--school',
          '5',
          '--form',
          RECONCILE_FORM,
          '--out-dir',
          outDir(),
          '--metrics-file',
          metrics,
        ],
        { env },
      );
      await lock.waitForBlocked();
      mkdirSync(metrics);
      writeFileSync(join(metrics, 'keep'), 'x');
      await lock.unlock();
      const r = await run.done;
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(/^fcctl: cannot write --metrics-file .*m\.prom: E[A-Z]+\n$/);
      const summaries = summariesOf(r);
      expect(summaries).toHaveLength(1);
      expect(summaries[0]).toMatchObject({ command: 'reconcile run', exitCode: 3, fcRows: 4 });
    } finally {
      await lock.unlock();
    }
  });
});

describe('a scan that fails records its exit code in the metrics', () => {
  test.each([
    ['deliveries scan', ['deliveries', 'scan']],
    ['apply-command scan', ['apply-command', 'scan']],
  ] as const)(
    '%s with the database unreachable: exit 3, metrics 3, last success kept (deliveries scan: was 0)',
    async (command, argv) => {
      const metrics = join(dir, `unreachable-${++caseNo}.prom`);
      writeFileSync(
        metrics,
        `fcctl_run_exit_code{command="${command}"} 0\nfcctl_last_success_timestamp_seconds{command="${command}"} 1000\n`,
      );
      // port 1: nothing listens, the connection is refused at once
      const r = await runCli(['--json', ...argv, '--metrics-file', metrics], {
        env: {
          ...env,
          FCCTL_FC_DATABASE_URL: 'mysql://u:p@127.0.0.1:1/fc',
          FCCTL_SH_DATABASE_URL: 'mysql://u:p@127.0.0.1:1/sh',
        },
      });
      expect(r.code).toBe(3);
      const prom = readProm(metrics);
      expect(prom).toContain(`fcctl_run_exit_code{command="${command}"} 3\n`);
      expect(prom).toContain(`fcctl_last_success_timestamp_seconds{command="${command}"} 1000\n`);
    },
  );

  test('deliveries scan that succeeds still writes its report gauges beside the run gauges', async () => {
    const metrics = join(dir, `ok-${++caseNo}.prom`);
    const r = await runCli(['--json', 'deliveries', 'scan', '--metrics-file', metrics], { env });
    expect(r.code).toBe(0);
    const prom = readProm(metrics);
    for (const name of [
      'fcctl_deliveries_rows',
      'fcctl_deliveries_due',
      'fcctl_deliveries_held',
      'fcctl_deliveries_oldest_pending_age_seconds',
      'fcctl_deliveries_stuck_claims',
      'fcctl_deliveries_dead',
      'fcctl_run_exit_code',
      'fcctl_last_success_timestamp_seconds',
    ]) {
      expect(prom).toContain(`# TYPE ${name} gauge\n`);
    }
    expect(prom).toContain('fcctl_run_exit_code{command="deliveries scan"} 0\n');
  });
});

describe('a vhost the broker refuses', () => {
  test('deliveries send: exit 3, one line naming the vhost and user, the password masked', async () => {
    const url = new URL(testAmqpUrl());
    url.pathname = '/fcctl-no-such-vhost';
    const r = await runCli(['--json', 'deliveries', 'send'], { env: { ...env, FCCTL_AMQP_URL: url.toString() } });
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(
      `fcctl: cannot connect to RabbitMQ at amqp://${url.username}:***@${url.host}/fcctl-no-such-vhost: vhost "fcctl-no-such-vhost" not found or not permitted for user "${decodeURIComponent(url.username)}"\n`,
    );
  });
});
