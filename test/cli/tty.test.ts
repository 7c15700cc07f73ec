import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { FCCTL_BIN, runCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { TmuxSession } from '../helpers/tmux.js';
import { waitFor } from '../helpers/wait.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'tty' });

describe('the live view in a real terminal (tmux)', () => {
  let dbs: TestDatabases;
  let session: TmuxSession | undefined;
  let dir: string;
  test.beforeAll(({ dbs: services, tmp }) => {
    dbs = services;
    dir = tmp;
  });
  afterAll(() => {
    session?.kill();
  });

  test('deliveries send shows done/total and rate while it runs, then a summary table', async () => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    expect((await runCli(['db', 'init', '--side', 'fc', '--dev'], { env })).code).toBe(0);
    await insertRegistry(dbs.admin, dbs.fcName);
    const key = uniqueConsumerKey('tty');
    const q = await bindQueue(key);
    await insertGrant(dbs.admin, dbs.fcName, {
      formUuid: '0f0e0d0c-0000-4000-8000-000000000001',
      schoolId: 5,
      consumerKey: key,
    });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 3000);
    // small batches, one at a time, so the run lasts long enough to be seen mid-way
    session = new TmuxSession(`node ${FCCTL_BIN} deliveries send --batch-size 20 --pipeline 1 --window 4`, env);
    let midRun = '';
    await waitFor(
      'the progress line',
      async () => {
        midRun = session!.screen();
        return /deliveries send \d+\/3000 · [\d.]+\/s/.test(midRun);
      },
      60_000,
      50,
    );
    expect(midRun).toMatch(/deliveries send (\d+)\/3000 · [\d.]+\/s( · ETA \d+[smh])?/);
    await waitFor('the end of the run', async () => session!.screen().includes('[exit 0]'), 120_000, 200);
    const end = session.screen();
    expect(end).toMatch(/deliveries send 3000\/3000/);
    expect(end).toMatch(/^accepted\s+3000$/m);
    expect(end).toMatch(/^failed\s+0$/m);
    // no JSON lines on a terminal
    expect(end).not.toMatch(/\{"(ts|type)":/);
    expect((await q.drain()).length).toBe(3000);
    await q.close();
  }, 240_000);

  test('deliveries send --follow shows its status line (state, rows/s, p99, in flight, due) and, on Ctrl-C, drains to a summary, exit 0', async () => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    expect((await runCli(['db', 'init', '--side', 'fc', '--dev'], { env })).code).toBe(0);
    await insertRegistry(dbs.admin, dbs.fcName);
    const key = uniqueConsumerKey('ttyf');
    const q = await bindQueue(key);
    await insertGrant(dbs.admin, dbs.fcName, {
      formUuid: '0f0e0d0c-0000-4000-8000-000000000001',
      schoolId: 5,
      consumerKey: key,
    });
    const follow = new TmuxSession(`node ${FCCTL_BIN} deliveries send --follow --heartbeat-seconds 1`, env);
    try {
      await waitFor(
        'the status line',
        async () => /state running · rows\/s [\d.]+ · p99 ms \S+ · in flight \d+ · due \S+/.test(follow.screen()),
        60_000,
        100,
      );
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 200);
      await waitFor(
        '200 done on screen, a p99 shown',
        async () => /deliveries send --follow 200 · /.test(follow.screen()) && /p99 ms \d+/.test(follow.screen()),
        60_000,
        100,
      );
      follow.sendKeys('C-c');
      await waitFor('the end', async () => follow.screen().includes('[exit 0]'), 60_000, 200);
      const end = follow.screen();
      expect(end).toMatch(/^accepted\s+200$/m);
      expect(end).not.toMatch(/\{"(ts|type)":/);
      expect((await q.drain()).length).toBe(200);
    } finally {
      follow.kill();
      await q.close();
    }
  }, 240_000);

  test('reconcile run shows each phase live and ends with its summary table', async () => {
    const env = dbs.env({ FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
    expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
    expect((await runCli(['dev', 'seed', '--answers', '300', '--schools', '1', '--replace'], { env })).code).toBe(0);
    const [[pair]] = (await dbs.admin.query(
      `SELECT sch_id AS s, form_uuid AS f FROM \`${dbs.fcName}\`.answer GROUP BY sch_id, form_uuid ORDER BY sch_id, form_uuid LIMIT 1`,
    )) as unknown as [[{ s: string; f: string }]];
    const outDir = join(dir, 'run');
    const run = new TmuxSession(
      `node ${FCCTL_BIN} reconcile run --school ${pair.s} --form ${pair.f} --out-dir ${outDir}`,
      env,
    );
    try {
      await waitFor('the end of the run', async () => run.screen().includes('[exit 0]'), 120_000, 200);
      const end = run.screen();
      expect(end).toMatch(/reconcile run: FC manifest \d+ · [\d.]+\/s/);
      expect(end).toMatch(/reconcile run: SH manifest \d+ · [\d.]+\/s/);
      expect(end).toMatch(/^IN_SYNC\s+\d+$/m);
      expect(end).not.toMatch(/\{"(ts|type)":/);
    } finally {
      run.kill();
    }
  }, 240_000);
});
