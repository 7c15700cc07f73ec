import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { APP, insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { runCli } from '../helpers/cli.js';
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
import { answerHash, insertAnswers, insertProjections, testUuid } from '../helpers/manifest.js';
import { promtool } from '../helpers/promtool.js';
import { servicesTest } from '../helpers/services.js';
import { collectedValue, collectTextfiles } from '../helpers/textfile.js';

const test = servicesTest({ prefix: 'promfiles', init: 'all', flowApps: { [APP.key]: APP.secret } });

// Issue 19 §5: the metrics of two pairs in one textfile directory, beside the other cron
// commands' files, hold no series twice (parsed as node_exporter would), and counters grow.
const FORM_A = testUuid('prom-files', 'form a');
const FORM_B = testUuid('prom-files', 'form b');
const DELIVERY_FORM = '0f0e0d0c-0000-4000-8000-000000000001';
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let prom: string;
let runs: string;

test.beforeAll(async ({ dbs: services, flowCenter, tmp }) => {
  dbs = services;
  env = dbs.env({
    FCCTL_AMQP_URL: testAmqpUrl(),
    FCCTL_APP_KEY: PUBLISHER.appKey,
    FCCTL_APP_CODE: PUBLISHER.appCode,
    FCCTL_FLOW_URL: flowCenter.url,
    FCCTL_APP_SECRET: APP.secret,
  });
  prom = join(tmp, 'textfile_collector');
  runs = join(tmp, 'runs');
  mkdirSync(prom);
  await insertRegistry(dbs.admin, dbs.fcName);
  await ensureExchange();
  const a = Array.from({ length: 5 }, (_, i) => ({ answerUuid: testUuid('prom-files', `a${i}`), formUuid: FORM_A }));
  const b = Array.from({ length: 3 }, (_, i) => ({ answerUuid: testUuid('prom-files', `b${i}`), formUuid: FORM_B }));
  await insertAnswers(dbs.admin, dbs.fcName, [...a, ...b]);
  // pair A in sync; pair B: one answer missing locally (a difference)
  await insertProjections(
    dbs.admin,
    dbs.shName,
    [...a, ...b.slice(1)].map((x) => ({ ...x, contentHash: answerHash(x) })),
  );
}, 60_000);

const cli = async (argv: readonly string[], code = 0) => {
  const r = await runCli(['--json', ...argv], { env });
  expect(r.code, r.stderr).toBe(code);
  return r;
};

describe("a textfile directory holding every cron command's file", () => {
  test('two single-pair reconcile runs, send, scan and apply: no series twice; counters grow across runs; promtool check metrics passes', {
    timeout: 120_000,
  }, async () => {
    const consumerKey = uniqueConsumerKey('prom');
    await bindQueue(consumerKey);
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: DELIVERY_FORM, schoolId: 5, consumerKey });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey }, 3);
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${uniquePrefix('pf')}-1` }]);
    const pairRun = (form: string, file: string, night: number) =>
      cli([
        'reconcile',
        'run',
        '--school',
        '5',
        '--form',
        form,
        '--out-dir',
        join(runs, `${night}`, form),
        '--metrics-file',
        join(prom, file),
      ]);
    for (const night of [1, 2]) {
      await pairRun(FORM_A, `fcctl_reconcile_5_a.prom`, night);
      await pairRun(FORM_B, `fcctl_reconcile_5_b.prom`, night);
    }
    await cli(['deliveries', 'send', '--metrics-file', join(prom, 'fcctl_send.prom')]);
    await cli(['deliveries', 'send', '--metrics-file', join(prom, 'fcctl_send.prom')]);
    await cli(['deliveries', 'scan', '--metrics-file', join(prom, 'fcctl_scan.prom')]);
    await cli(['apply-command', 'resolve-unknown', '--metrics-file', join(prom, 'fcctl_apply.prom')]);
    await cli(['apply-command', 'scan', '--metrics-file', join(prom, 'fcctl_apply_scan.prom')]);

    const c = collectTextfiles(prom);
    expect(c.errors).toEqual([]);
    // every series names its file too (issue 26 §5)
    const a = { school: '5', form: FORM_A, metrics_file: 'fcctl_reconcile_5_a.prom' };
    const b = { school: '5', form: FORM_B, metrics_file: 'fcctl_reconcile_5_b.prom' };
    const send = { command: 'deliveries send', metrics_file: 'fcctl_send.prom' };
    expect(collectedValue(c, 'fcctl_reconcile_differences', a)).toBe(0);
    expect(collectedValue(c, 'fcctl_reconcile_differences', b)).toBe(1);
    expect(collectedValue(c, 'fcctl_reconcile_rows', { ...b, category: 'MISSING_LOCAL' })).toBe(1);
    // two nights: the counters are the sum, the gauges the last night's
    expect(collectedValue(c, 'fcctl_reconcile_rows_total', { ...a, category: 'IN_SYNC' })).toBe(10);
    expect(collectedValue(c, 'fcctl_reconcile_rows', { ...a, category: 'IN_SYNC' })).toBe(5);
    expect(collectedValue(c, 'fcctl_runs_total', { command: 'reconcile run', ...b, exit_code: '0' })).toBe(2);
    expect(collectedValue(c, 'fcctl_runs_total', { ...send, exit_code: '0' })).toBe(2);
    expect(collectedValue(c, 'fcctl_rows_total', { ...send, result: 'done' })).toBe(3);
    expect(collectedValue(c, 'fcctl_rows', { ...send, result: 'done' })).toBe(0);
    expect(
      collectedValue(c, 'fcctl_last_success_timestamp_seconds', { command: 'reconcile run', ...a }),
    ).toBeGreaterThan(0);
    expect(collectedValue(c, 'fcctl_reconcile_last_success_timestamp_seconds', b)).toBeGreaterThan(0);
    expect(
      collectedValue(c, 'fcctl_runs_total', {
        command: 'apply-command resolve-unknown',
        exit_code: '0',
        metrics_file: 'fcctl_apply.prom',
      }),
    ).toBe(1);
    for (const name of ['fcctl_runs_total', 'fcctl_rows_total', 'fcctl_reconcile_rows_total'])
      expect(c.families.get(name)?.type).toBe('counter');
    // reconcile's files: every series names its pair
    for (const f of c.families.values())
      for (const s of f.samples)
        if (s.file.startsWith('fcctl_reconcile_')) expect(s.labels).toMatchObject({ school: '5' });
    for (const f of c.families.values()) for (const s of f.samples) expect(s.labels['metrics_file']).toBe(s.file);

    // promtool's lint (the exposition checks node_exporter's parser makes, and the naming rules)
    const files = readdirSync(prom).filter((f) => f.endsWith('.prom'));
    expect(files).toHaveLength(6);
    for (const f of files) {
      const r = promtool(['check', 'metrics'], readFileSync(join(prom, f), 'utf8'));
      expect({ file: f, code: r.code, out: r.stdout + r.stderr }).toEqual({ file: f, code: 0, out: '' });
    }
  });
});
