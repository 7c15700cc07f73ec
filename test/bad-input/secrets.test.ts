import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { testAmqpUrl, testMysqlUrl, type TestDatabases } from '../helpers/db.js';
import { PUBLISHER } from '../helpers/deliveries.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'secret' });

/**
 * Every command, run with a known app secret and a database password nobody else uses, must
 * never print, log or write either — in successes, refusals and failures (with --debug too).
 */
describe('secrets never leave fcctl', () => {
  const APP_SECRET = 'AppSecret-7f3a9c-never-print';
  const DB_PASSWORD = 'DbPw-c41e-never-print';
  const user = `fcctl_secret_${process.pid}`;
  let dbs: TestDatabases;
  let env: Record<string, string | undefined>;
  // named at collection time: the table of runs below holds paths in it
  const dir = mkdtempSync(join(tmpdir(), 'fcctl-secrets-'));

  test.beforeAll(async ({ dbs: services }) => {
    dbs = services;
    await dbs.admin.query(`CREATE USER IF NOT EXISTS '${user}'@'127.0.0.1' IDENTIFIED BY '${DB_PASSWORD}'`);
    await dbs.admin.query(`GRANT ALL PRIVILEGES ON \`${dbs.fcName}\`.* TO '${user}'@'127.0.0.1'`);
    await dbs.admin.query(`GRANT ALL PRIVILEGES ON \`${dbs.shName}\`.* TO '${user}'@'127.0.0.1'`);
    const base = new URL(testMysqlUrl());
    base.username = user;
    base.password = DB_PASSWORD;
    const url = (db: string) => `${base.toString().replace(/\/$/, '')}/${db}`;
    env = dbs.env({
      FCCTL_FC_DATABASE_URL: url(dbs.fcName),
      FCCTL_SH_DATABASE_URL: url(dbs.shName),
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
      FCCTL_APP_SECRET: APP_SECRET,
      FCCTL_FLOW_URL: 'http://127.0.0.1:1/',
    });
    expect((await runCli(['db', 'init', '--side', 'all'], { env })).code).toBe(0);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await dbs.admin.query(`DROP USER IF EXISTS '${user}'@'127.0.0.1'`);
  });

  const runs: Array<[string, string[], Record<string, string | undefined>?]> = [
    ['config show', ['config', 'show']],
    ['config show --json', ['--json', 'config', 'show']],
    ['db check', ['db', 'check']],
    ['doctor', ['--json', 'doctor']],
    ['deliveries scan', ['deliveries', 'scan', '--metrics-file', join(dir, 'scan.prom')]],
    ['deliveries send', ['deliveries', 'send', '--declare', '--metrics-file', join(dir, 'send.prom')]],
    ['deliveries failed', ['deliveries', 'failed', '--consumer', 'k1', '--school', '5']],
    [
      'deliveries replay',
      [
        'deliveries',
        'replay',
        '--consumer',
        'k1',
        '--school',
        '5',
        '--answer',
        '0f0e0d0c-0000-4000-8000-000000000001',
        '--expected-revision',
        '1',
        '--operation-id',
        'op-1',
        '--execute',
      ],
    ],
    ['apply-command scan', ['apply-command', 'scan']],
    [
      'apply-command resolve-unknown (flow center down)',
      ['--debug', 'apply-command', 'resolve-unknown', '--metrics-file', join(dir, 'apply.prom')],
    ],
    ['dev seed refused (not a dev database)', ['dev', 'seed']],
    [
      'wrong database port, --debug',
      ['--debug', 'db', 'check'],
      { FCCTL_FC_DATABASE_URL: `mysql://${user}:${DB_PASSWORD}@127.0.0.1:1/x` },
    ],
    [
      'wrong broker port, --debug',
      ['--debug', 'deliveries', 'send'],
      { FCCTL_AMQP_URL: `amqp://u:${DB_PASSWORD}@127.0.0.1:1/x` },
    ],
    ['bad config file, --debug', ['--debug', '--config', join(dir, 'missing.json'), 'config', 'show']],
  ];

  for (const [name, args, extra] of runs) {
    test(name, async () => {
      const r = await runCli(args, { env: { ...env, ...extra } });
      const out = r.stdout + r.stderr;
      expect(out).not.toContain(APP_SECRET);
      expect(out).not.toContain(DB_PASSWORD);
      // it did run: either output or a defined exit code
      expect([0, 1, 2, 3, 4]).toContain(r.code);
    });
  }

  test('no file written by these runs holds a secret', () => {
    const files = readdirSync(dir)
      .map((f) => join(dir, f))
      .filter((f) => statSync(f).isFile());
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      expect(text).not.toContain(APP_SECRET);
      expect(text).not.toContain(DB_PASSWORD);
    }
  });
});
