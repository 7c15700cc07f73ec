import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import amqp from 'amqplib';
import { afterEach, describe, expect } from 'vitest';
import { jsonLines, runCli, spawnCli } from '../helpers/cli.js';
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
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';
import { readProm } from '../helpers/textfile.js';

// Issue 19 §3: the fleet's pause switch, on the relay.
const FORM = '0f0e0d0c-0000-4000-8000-000000000019';
const test = servicesTest({ prefix: 'pausesend', init: 'fc' });
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;

test.beforeAll(async ({ dbs: d, tmp }) => {
  dbs = d;
  dir = tmp;
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  await insertRegistry(dbs.admin, dbs.fcName);
  await ensureExchange();
});
afterEach(async () => {
  await dbs.admin.query(
    `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', claim_owner = NULL WHERE state IN ('PENDING', 'FAILED')`,
  );
  await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.fcctl_pause`);
});

const BATCH = 50;
const WINDOW = 20;
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const count = async (where: string, key: string) => {
  const [rows] = await dbs.admin.query(
    `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? AND (${where})`,
    [key],
  );
  return Number((rows as Array<{ n: number }>)[0]!.n);
};
async function consumer(prefix: string, rows: number) {
  const key = uniqueConsumerKey(prefix);
  const q = await bindQueue(key);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, formUuid: FORM }, rows);
  return { key, q };
}

/**
 * Messages on `queue` just before the pause of `deliveries send` committed: counts and the pause
 * row read in turn while `pause()` runs; the count read before the last look that found no pause
 * precedes the commit. Every message published after the commit is enqueued after that count.
 */
async function queuedBeforePause(queue: string, pause: () => Promise<void>): Promise<number> {
  const conn = await amqp.connect(testAmqpUrl());
  const ch = await conn.createChannel();
  let stop = false;
  const poll = (async () => {
    let before = 0;
    for (;;) {
      const count = (await ch.checkQueue(queue)).messageCount;
      const [rows] = await dbs.admin.query(
        `SELECT 1 FROM \`${dbs.fcName}\`.fcctl_pause WHERE command = 'deliveries send'`,
      );
      if ((rows as unknown[]).length > 0) return before;
      if (stop) throw new Error('the pause ended without a pause row');
      before = count;
    }
  })();
  try {
    await pause();
  } finally {
    stop = true;
  }
  const before = await poll;
  await conn.close();
  return before;
}

describe('fcctl pause deliveries send: two running relays stop within one batch each', () => {
  test('20,000 rows, two relays → pause → both exit 0 paused, at most one batch each published after it, nothing left claimed; resume → the next run finishes', async () => {
    const { key, q } = await consumer('pz', 20_000);
    // A slow broker link (each chunk held 25 ms) and a window smaller than a batch: with
    // --pipeline 4 each relay holds batches claimed and not yet publishing when the pause comes.
    const amqpUrl = new URL(testAmqpUrl());
    const proxy = new TcpProxy(amqpUrl.hostname, Number(amqpUrl.port || 5672));
    proxy.delayMs = 25;
    const port = await proxy.start();
    try {
      const slow = { ...env, FCCTL_AMQP_URL: viaProxy(testAmqpUrl(), port) };
      const relay = (n: number) =>
        spawnCli(
          [
            '--json',
            'deliveries',
            'send',
            '--batch-size',
            String(BATCH),
            '--pipeline',
            '4',
            '--window',
            String(WINDOW),
            '--lease-seconds',
            '60',
            '--metrics-file',
            join(dir, `relay${n}.prom`),
          ],
          {
            env: slow,
            timeoutMs: 120_000,
          },
        );
      const relays = [relay(1), relay(2)];
      await waitFor(
        'both relays sending',
        async () => (await count("state = 'BROKER_ACCEPTED'", key)) >= 1000,
        60_000,
        20,
      );

      let paused!: Awaited<ReturnType<typeof runCli>>;
      const queuedBefore = await queuedBeforePause(q.queue, async () => {
        paused = await runCli(['--json', 'pause', 'deliveries', 'send', '--reason', 'test'], { env });
      });
      expect(paused.stderr).toBe('');
      expect(paused.code).toBe(0);
      expect(summaryOf(paused.stdout)).toMatchObject({
        command: 'pause',
        paused: 'deliveries send',
        database: 'FC',
        reason: 'test',
        until: null,
        replaced: null,
      });
      // Everything claimed or accepted when the pause was set; each relay may claim one batch more
      // (its check ran just before the pause committed), never more.
      const atPause = await count("state = 'BROKER_ACCEPTED' OR claim_owner IS NOT NULL", key);

      const results = await Promise.all(relays);
      const accepted = await count("state = 'BROKER_ACCEPTED'", key);
      // Published after the pause: at most the batch each relay was publishing (or had just checked
      // the switch for). Measured as messages enqueued after the count taken before the commit,
      // which also counts the messages published before it still on their way (a window's worth
      // at most): the claimed batches a relay held beyond those (up to 4 × 50 each) are not sent.
      const firstRun = (await q.drain()).map((m) => String(m.properties.messageId));
      const queuedAfter = firstRun.length;
      expect(new Set(firstRun).size).toBe(accepted);
      expect(queuedAfter - queuedBefore).toBeLessThanOrEqual(2 * (BATCH + WINDOW));
      for (const [i, r] of results.entries()) {
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        const s = summaryOf(r.stdout);
        expect(s).toMatchObject({
          exitCode: 0,
          stoppedBy: 'paused',
          failed: 0,
          dead: 0,
          paused: { reason: 'test', source: 'database' },
        });
        expect((s['paused'] as Record<string, unknown>)['pausedBy']).toMatch(/^.+@.+$/);
        expect(s['claimed']).toBeGreaterThan(0);
        // what was claimed and not published went back: counted, not logged row by row
        expect(s['claimed']).toBe(Number(s['accepted']) + Number(s['released']));
        expect(s['releasedByReason']).toEqual(Number(s['released']) > 0 ? { PAUSED: s['released'] } : {});
        expect(jsonLines(r.stdout).filter((l) => l['type'] === 'row')).toEqual([]);
        const prom = readProm(join(dir, `relay${i + 1}.prom`));
        expect(prom).toContain('fcctl_paused{command="deliveries send"} 1\n');
        expect(prom).toContain('fcctl_run_exit_code{command="deliveries send"} 0\n');
        // a paused run did not do its work: no last success recorded
        expect(prom).not.toContain('fcctl_last_success_timestamp_seconds');
      }
      expect(accepted - atPause).toBeLessThanOrEqual(2 * BATCH);
      expect(results.reduce((n, r) => n + Number(summaryOf(r.stdout)['released']), 0)).toBeGreaterThan(0);
      expect(accepted).toBeLessThan(20_000);
      expect(accepted).toBe(results.reduce((n, r) => n + Number(summaryOf(r.stdout)['accepted']), 0));
      // nothing left claimed: rows not adjudicated are PENDING with no owner
      expect(await count('claim_owner IS NOT NULL', key)).toBe(0);
      expect(await count("state = 'PENDING'", key)).toBe(20_000 - accepted);

      // Still paused: a new run (in-process, no proxy) claims nothing.
      const still = await runCli(['--json', 'deliveries', 'send'], { env });
      expect(still.code).toBe(0);
      expect(summaryOf(still.stdout)).toMatchObject({ claimed: 0, stoppedBy: 'paused' });

      const resumed = await runCli(['--json', 'resume', 'deliveries', 'send'], { env });
      expect(resumed.code).toBe(0);
      expect(summaryOf(resumed.stdout)).toMatchObject({
        command: 'resume',
        resumed: 'deliveries send',
        wasPaused: true,
        ended: { reason: 'test' },
      });
      const next = await runCli(['--json', 'deliveries', 'send', '--metrics-file', join(dir, 'relay1.prom')], { env });
      expect(next.stderr).toBe('');
      expect(next.code).toBe(0);
      expect(summaryOf(next.stdout)).toMatchObject({ stoppedBy: 'drained', accepted: 20_000 - accepted, failed: 0 });
      expect(summaryOf(next.stdout)['paused']).toBeUndefined();
      expect(await count("state = 'BROKER_ACCEPTED'", key)).toBe(20_000);
      const prom = readProm(join(dir, 'relay1.prom'));
      expect(prom).toContain('fcctl_paused{command="deliveries send"} 0\n');
      expect(prom).toContain('fcctl_last_success_timestamp_seconds{command="deliveries send"}');
      // every row arrived; a duplicate is allowed (at-least-once), a loss is not
      const ids = new Set([...firstRun, ...(await q.drain()).map((m) => String(m.properties.messageId))]);
      expect(ids.size).toBe(20_000);
    } finally {
      await proxy.stop();
      await q.close();
    }
  }, 180_000);

  test('--pause-file: while the file exists the relay behaves as paused, its first line the reason; nothing claimed', async () => {
    const { key, q } = await consumer('pf', 50);
    const file = join(dir, 'pause-send');
    writeFileSync(file, 'broker disk alarm on mq-2\nsecond line\n');
    try {
      const r = await runCli(
        ['--json', 'deliveries', 'send', '--pause-file', file, '--metrics-file', join(dir, 'file.prom')],
        { env },
      );
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(summaryOf(r.stdout)).toMatchObject({
        claimed: 0,
        published: 0,
        stoppedBy: 'paused',
        paused: { reason: 'broker disk alarm on mq-2', pausedBy: `pause file ${file}`, source: 'file' },
      });
      expect(await count("state = 'PENDING' AND claim_owner IS NULL", key)).toBe(50);
      expect(readProm(join(dir, 'file.prom'))).toContain('fcctl_paused{command="deliveries send"} 1\n');
      // the dry run obeys it too
      const dry = await runCli(['--json', 'deliveries', 'send', '--dry-run', '--pause-file', file], { env });
      expect(summaryOf(dry.stdout)).toMatchObject({ claimed: 0, stoppedBy: 'paused' });
      // The file gone, the same command goes.
      rmSync(file);
      expect(existsSync(file)).toBe(false);
      const again = await runCli(['--json', 'deliveries', 'send', '--pause-file', file], { env });
      expect(again.code).toBe(0);
      expect(summaryOf(again.stdout)).toMatchObject({ accepted: 50, stoppedBy: 'drained' });
    } finally {
      await q.close();
    }
  });

  test('paused with the broker down (why one pauses): exit 0 stoppedBy paused, fcctl_paused 1, the broker never dialled', async () => {
    const file = join(dir, 'pause-send-broker-down');
    writeFileSync(file, 'broker down: INC-7\n');
    // a port nothing listens on: a run that dialled the broker would exit 3 ("cannot connect")
    const down = { ...env, FCCTL_AMQP_URL: 'amqp://fcctl:pw@127.0.0.1:9/fcctl' };
    const r = await runCli(
      ['--json', 'deliveries', 'send', '--declare', '--pause-file', file, '--metrics-file', join(dir, 'down.prom')],
      { env: down },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 0,
      published: 0,
      stoppedBy: 'paused',
      paused: { reason: 'broker down: INC-7', source: 'file' },
    });
    expect(readProm(join(dir, 'down.prom'))).toContain('fcctl_paused{command="deliveries send"} 1\n');
    rmSync(file);
    // not paused, the same run dials the broker and says it cannot
    const unpaused = await runCli(['--json', 'deliveries', 'send', '--pause-file', file], { env: down });
    expect(unpaused.code).toBe(3);
    expect(unpaused.stderr).toMatch(/^fcctl: cannot connect to RabbitMQ/);
  });

  test('a run that fails (exit 3) still writes fcctl_paused: what it read of the switch, else the last known value', async () => {
    const prom = join(dir, 'failing.prom');
    const gaugeOf = () => /^fcctl_paused\{command="deliveries send"\} (\d)$/m.exec(readProm(prom))?.[1];
    const exitOf = () => /^fcctl_run_exit_code\{command="deliveries send"\} (\d)$/m.exec(readProm(prom))?.[1];
    expect((await runCli(['--json', 'pause', 'deliveries', 'send', '--reason', 'INC-9'], { env })).code).toBe(0);
    expect((await runCli(['--json', 'deliveries', 'send', '--metrics-file', prom], { env })).code).toBe(0);
    expect([gaugeOf(), exitOf()]).toEqual(['1', '0']);
    // The FC database unreachable: the switch cannot be read; the last known value stays.
    const dbDown = { ...env, FCCTL_FC_DATABASE_URL: 'mysql://fcctl:pw@127.0.0.1:9/fc' };
    const failed = await runCli(['--json', 'deliveries', 'send', '--metrics-file', prom], { env: dbDown });
    expect(failed.code).toBe(3);
    expect([gaugeOf(), exitOf()]).toEqual(['1', '3']);
    // Resumed, the broker unreachable: the run read the switch (not paused) before it failed.
    expect((await runCli(['--json', 'resume', 'deliveries', 'send'], { env })).code).toBe(0);
    const brokerDown = await runCli(['--json', 'deliveries', 'send', '--metrics-file', prom], {
      env: { ...env, FCCTL_AMQP_URL: 'amqp://fcctl:pw@127.0.0.1:9/fcctl' },
    });
    expect(brokerDown.code).toBe(3);
    expect([gaugeOf(), exitOf()]).toEqual(['0', '3']);
    // No previous file and nothing read: no gauge rather than a guess.
    const fresh = join(dir, 'fresh.prom');
    expect((await runCli(['--json', 'deliveries', 'send', '--metrics-file', fresh], { env: dbDown })).code).toBe(3);
    expect(readProm(fresh)).not.toContain('fcctl_paused');
    expect(readProm(fresh)).toContain('fcctl_run_exit_code{command="deliveries send"} 3\n');
  });

  test('an expired --until counts as not paused', async () => {
    const { key, q } = await consumer('pu', 20);
    try {
      const p = await runCli(
        ['--json', 'pause', 'deliveries', 'send', '--reason', 'maintenance window', '--until', '1h'],
        { env },
      );
      expect(p.code).toBe(0);
      const s = summaryOf(p.stdout);
      expect(Date.parse(String(s['until'])) - Date.parse(String(s['pausedAt']))).toBe(3600_000);
      const during = await runCli(['--json', 'deliveries', 'send'], { env });
      expect(summaryOf(during.stdout)).toMatchObject({
        claimed: 0,
        stoppedBy: 'paused',
        paused: { reason: 'maintenance window', until: s['until'] },
      });
      // The window passes (the database's clock decides).
      await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.fcctl_pause SET until_at = UTC_TIMESTAMP() - INTERVAL 1 SECOND`);
      const list = await runCli(['--json', 'pause', '--list'], { env });
      expect(jsonLines(list.stdout).filter((l) => l['type'] === 'row')).toEqual([
        expect.objectContaining({ command: 'deliveries send', state: 'expired', reason: 'maintenance window' }),
      ]);
      // the SH database of this file has no pause table (not initialised): it lists nothing
      expect(summaryOf(list.stdout)).toMatchObject({ paused: 0, expired: 1, databases: ['FC', 'SH'] });
      const after = await runCli(['--json', 'deliveries', 'send'], { env });
      expect(after.code).toBe(0);
      expect(summaryOf(after.stdout)).toMatchObject({ accepted: 20, stoppedBy: 'drained' });
      expect(await count("state = 'BROKER_ACCEPTED'", key)).toBe(20);
    } finally {
      await q.close();
    }
  });
});
