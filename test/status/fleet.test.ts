/**
 * What `fcctl status` says of the `--follow` fleet (issue 36 §8, §10), as real `bin/fcctl`
 * processes: a relay killed with SIGKILL leaves a stale row (an alarm), gone after an hour without
 * a beat (planted: the row's last beat set back) it no longer counts and a live relay deletes it;
 * rows due with no live relay, apply commands due with no live resolver, a service in outage (the
 * flow-center stand-in's fault switch) or not ready each hold their `--fail-if` condition; a
 * condition whose side is not read is not judged (exit 3); bad combinations exit 2 with one line.
 */
import { afterEach, describe, expect } from 'vitest';
import { APP, APP_FLOW, clearFlowCenter, flowEnv, insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { testAmqpUrl } from '../helpers/db.js';
import {
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { freePort, httpGet, type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'statusfleet', init: 'all', flowApps: APP_FLOW });
const FORM = '0f0e0d0c-0000-4000-8000-000000000001'; // insertDeliveries' form
type Doc = Record<string, any>;

const running: RunningService[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop('SIGKILL')));
});

async function status(args: string[], env: Record<string, string | undefined>) {
  const r = await spawnCli(['--json', 'status', ...args], { env, timeoutMs: 30_000 });
  return { ...r, doc: r.stdout.trim() === '' ? null : (JSON.parse(r.stdout) as Doc) };
}
const isState = (state: string) => (l: Record<string, unknown>) => l['type'] === 'state' && l['state'] === state;

function relay(env: Record<string, string | undefined>): RunningService {
  const s = startService(['--json', 'deliveries', 'send', '--follow', '--heartbeat-seconds', '1'], { env });
  running.push(s);
  return s;
}

describe('status and the fleet registry', () => {
  test('a relay killed with SIGKILL: stale (exit 1); gone after an hour without a beat: not counted, shown apart, deleted by a live relay', async ({
    dbs,
  }) => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const fc = `\`${dbs.fcName}\``;
    const killed = relay(env);
    await killed.waitForLine('running', isState('running'));
    await killed.stop('SIGKILL');
    await waitFor('stale', async () => (await status([], env)).doc!['fleet'].fc.stale === 1, 15_000, 500);
    expect((await status(['--fail-if', 'stale-workers'], env)).code).toBe(1);

    // an hour and more without a beat (20 beats of 1 s are less: the hour is the floor)
    await dbs.admin.query(
      `UPDATE ${fc}.fcctl_worker SET last_beat_at = UTC_TIMESTAMP() - INTERVAL 59 MINUTE WHERE pid = ?`,
      [killed.child.pid],
    );
    expect((await status(['--fail-if', 'stale-workers'], env)).code).toBe(1);
    await dbs.admin.query(
      `UPDATE ${fc}.fcctl_worker SET last_beat_at = UTC_TIMESTAMP() - INTERVAL 61 MINUTE WHERE pid = ?`,
      [killed.child.pid],
    );
    const gone = await status(['--fail-if', 'stale-workers'], env);
    expect(gone.code, gone.stderr).toBe(0);
    expect(gone.doc!['fleet'].fc).toMatchObject({ stale: 0, gone: 1 });
    // its last beat stays visible until it is deleted
    expect(gone.doc!['fleet'].fc.workers).toEqual([
      expect.objectContaining({ pid: killed.child.pid, stale: false, gone: true }),
    ]);

    // a live relay deletes it at its next beat (guarded: a row that beat meanwhile is kept)
    const live = relay(env);
    await live.waitForLine('running', isState('running'));
    await waitFor(
      'the gone row deleted',
      async () => {
        const [rows] = await dbs.admin.query(`SELECT pid FROM ${fc}.fcctl_worker`);
        return JSON.stringify((rows as Array<{ pid: number }>).map((r) => r.pid)) === JSON.stringify([live.child.pid]);
      },
      10_000,
      200,
    );
    const after = await status(['--fail-if', 'stale-workers'], env);
    expect(after.code, after.stderr).toBe(0);
    expect(after.doc!['fleet'].fc).toMatchObject({ stale: 0, gone: 0 });
    expect((await live.stop('SIGTERM')).code).toBe(0);
  }, 90_000);

  test('a relay frozen (SIGSTOP) past the gone mark is pruned by a live one; thawed (SIGCONT), it registers again with its own start time', async ({
    dbs,
  }) => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const fc = `\`${dbs.fcName}\``;
    const row = async (pid: number) => {
      const [r] = await dbs.admin.query(
        `SELECT CAST(started_at AS CHAR) AS started_at FROM ${fc}.fcctl_worker WHERE pid = ?`,
        [pid],
      );
      return (r as Array<{ started_at: string }>)[0] ?? null;
    };
    const frozen = relay(env);
    await frozen.waitForLine('running', isState('running'));
    const pid = frozen.child.pid!;
    await waitFor('registered', async () => (await row(pid)) !== null, 10_000, 200);
    const started = (await row(pid))!.started_at;
    let live: RunningService | undefined;
    await new Promise((r) => setTimeout(r, 2000)); // its start time now differs from a new one
    process.kill(pid, 'SIGSTOP');
    try {
      await dbs.admin.query(
        `UPDATE ${fc}.fcctl_worker SET last_beat_at = UTC_TIMESTAMP() - INTERVAL 61 MINUTE WHERE pid = ?`,
        [pid],
      );
      live = relay(env);
      await live.waitForLine('running', isState('running'));
      await waitFor('the frozen row pruned', async () => (await row(pid)) === null, 10_000, 200);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitFor('registered again', async () => (await row(pid)) !== null, 10_000, 200);
    // the row made again says when the process started (± the second its uptime is rounded to), not when it was thawed
    const seconds = (t: string) => Date.parse(`${t.replace(' ', 'T')}Z`) / 1000;
    expect(Math.abs(seconds((await row(pid))!.started_at) - seconds(started))).toBeLessThanOrEqual(1);
    const after = await status(['--fail-if', 'stale-workers,no-relay'], env);
    expect(after.code, after.stderr).toBe(0);
    expect(after.doc!['fleet'].fc).toMatchObject({ stale: 0, gone: 0 });
    // stopped cleanly: their rows go with them (a killed one would stay live for three beats)
    expect((await frozen.stop('SIGTERM')).code).toBe(0);
    expect((await live!.stop('SIGTERM')).code).toBe(0);
  }, 60_000);

  test('rows due with no live relay: no-relay; a paused relay is live but not ready', async ({ dbs }) => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: uniqueConsumerKey('nr'), schoolId: 5 }, 2);
    const none = await status(['--fail-if', 'no-relay'], env);
    expect(none.code, none.stderr).toBe(1);
    expect(none.doc!['failing']).toEqual(['no-relay']);
    expect(none.doc!['outbox'].due).toBe(2);
    expect((await status(['--fail-if', 'outage,not-ready,apply-due'], env)).code).toBe(0);

    expect((await runCli(['pause', 'deliveries send', '--reason', 'test'], { env })).code).toBe(0);
    const paused = relay(env);
    await paused.waitForLine('paused', isState('paused'));
    await waitFor(
      'registered paused',
      async () => (await status([], env)).doc!['fleet'].fc.live.some((l: Doc) => l['state'] === 'paused'),
      10_000,
      200,
    );
    expect((await status(['--fail-if', 'no-relay'], env)).code).toBe(0);
    const notReady = await status(['--fail-if', 'not-ready,outage'], env);
    expect(notReady.code).toBe(1);
    expect(notReady.doc!['failing']).toEqual(['not-ready']);
    expect((await paused.stop('SIGTERM')).code).toBe(0);
    expect((await runCli(['resume', 'deliveries send'], { env })).code).toBe(0);
  }, 60_000);

  test('oldest due: status says what the relay /metrics says at the same time, held rows left out by both (issue 36 §2)', async ({
    dbs,
  }) => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    // push not allowed: the relay holds the rows, and each recheck (2 s) brings them back due
    const key = uniqueConsumerKey('od');
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key, push: 0 });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 3);
    const port = await freePort();
    const s = startService(
      [
        '--json',
        'deliveries',
        'send',
        '--follow',
        '--listen',
        `:${port}`,
        '--heartbeat-seconds',
        '1',
        '--hold-recheck',
        '2',
      ],
      { env },
    );
    running.push(s);
    await s.waitForLine('running', isState('running'));
    const fc = `\`${dbs.fcName}\``;
    await waitFor('held', async () => {
      const [r] = await dbs.admin.query(
        `SELECT COUNT(*) AS n FROM ${fc}.answer_delivery WHERE next_retry_at IS NOT NULL`,
      );
      return Number((r as Array<{ n: number }>)[0]!.n) === 3;
    });
    // paused: the held rows come up for their recheck and stay due; a row to send made after them
    expect((await runCli(['pause', 'deliveries send', '--reason', 'test'], { env })).code).toBe(0);
    await s.waitForLine('paused', isState('paused'));
    await new Promise((r) => setTimeout(r, 8000)); // well past the 2 s recheck
    const [sent] = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: uniqueConsumerKey('os'), schoolId: 5 });
    await dbs.admin.query(
      `UPDATE ${fc}.answer_delivery SET create_time = NOW(), update_time = NULL WHERE event_id = ?`,
      [sent],
    );
    await new Promise((r) => setTimeout(r, 2000)); // the held rows due 8 s and more, the row to send 2 s; beats meanwhile
    const metric = async () =>
      Number(/^fcctl_relay_oldest_due_age_seconds (\S+)$/m.exec((await httpGet(port, '/metrics')).body)?.[1]);
    const before = await metric();
    const doc = (await status([], env)).doc!;
    const after = await metric();
    // the gauge is set at each 1 s beat: the status read lies between two of its values, ± a beat
    const age = doc['outbox'].oldestDueAgeSeconds as number | null;
    expect(age, JSON.stringify(doc['outbox'])).not.toBeNull();
    expect(doc['outbox']).toMatchObject({ due: 1, held: 3 });
    // bracketed by the gauge read before and after it (a held row counted would be 8 s and more)
    expect(age!, `metric ${before} then ${after}, status ${age}`).toBeGreaterThanOrEqual(before - 1);
    expect(age!, `metric ${before} then ${after}, status ${age}`).toBeLessThanOrEqual(after + 1);
    expect((await s.stop('SIGTERM')).code).toBe(0);
    expect((await runCli(['resume', 'deliveries send'], { env })).code).toBe(0);
  }, 60_000);

  test('oldest due past 10,000 due rows: a PENDING row due an hour behind 10,001 FAILED ones reads an hour on the relay /metrics and in status alike', async ({
    dbs,
  }) => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const port = await freePort();
    const s = startService(
      ['--json', 'deliveries', 'send', '--follow', '--listen', `:${port}`, '--heartbeat-seconds', '1'],
      {
        env,
      },
    );
    running.push(s);
    await s.waitForLine('running', isState('running'));
    // paused: the rows stay due while the gauge is read at each beat
    expect((await runCli(['pause', 'deliveries send', '--reason', 'test'], { env })).code).toBe(0);
    await s.waitForLine('paused', isState('paused'));
    const fc = `\`${dbs.fcName}\``;
    // 10,001 FAILED rows due a minute (first in idx_delivery_due: FAILED sorts before PENDING), then
    // one PENDING row made an hour ago and never written; no grant, so none is held
    const columns =
      'event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
      'answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, retry_count, next_retry_at, create_time, update_time';
    const values = (state: string) =>
      `UUID(), 'created', '${PUBLISHER.appKey}', 'od-cap', 5, 1, '${FORM}', 3, UUID(), 1, REPEAT('0', 64), NOW(), '{}', '${state}', `;
    await dbs.admin.query(
      `INSERT INTO ${fc}.answer_delivery (${columns}) SELECT ${values('FAILED')}1, NOW() - INTERVAL 1 MINUTE, ` +
        `NOW() - INTERVAL 2 MINUTE, NOW() - INTERVAL 2 MINUTE FROM ${fc}.seq_1_to_10001`,
    );
    await dbs.admin.query(
      `INSERT INTO ${fc}.answer_delivery (${columns}) SELECT ${values('PENDING')}0, NULL, NOW() - INTERVAL 3600 SECOND, NULL`,
    );
    const metric = async () =>
      Number(/^fcctl_relay_oldest_due_age_seconds (\S+)$/m.exec((await httpGet(port, '/metrics')).body)?.[1]);
    await waitFor('the gauge read after the rows', async () => (await metric()) > 0, 15_000, 500);
    await new Promise((r) => setTimeout(r, 1500)); // a beat more: the gauge read whole after the inserts
    const before = await metric();
    const doc = (await status([], env)).doc!;
    const after = await metric();
    const age = doc['outbox'].oldestDueAgeSeconds as number;
    const said = `metric ${before} then ${after}, status ${age}`;
    expect(age, said).toBeGreaterThanOrEqual(3600);
    expect(age, said).toBeLessThan(3600 + 30);
    // the gauge (set at each 1 s beat) brackets status's read, ± a beat; on the capped read: 60 s
    expect(before, said).toBeGreaterThanOrEqual(3600);
    expect(age, said).toBeGreaterThanOrEqual(before - 1);
    expect(age, said).toBeLessThanOrEqual(after + 1);
    // the count stays capped
    expect(Number(/^fcctl_relay_due_rows (\S+)$/m.exec((await httpGet(port, '/metrics')).body)?.[1])).toBe(10_000);
    expect((await s.stop('SIGTERM')).code).toBe(0);
    expect((await runCli(['resume', 'deliveries send'], { env })).code).toBe(0);
  }, 90_000);

  test('a resolver in a flow-center outage: outage and not-ready hold, with its reason; apply commands due with no resolver: apply-due', async ({
    dbs,
    flowCenter,
  }) => {
    await clearFlowCenter(flowCenter);
    const env = flowEnv(dbs, flowCenter);
    const p = uniquePrefix('so');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'UNKNOWN' }]);
    const due = await status(['--fail-if', 'apply-due'], env);
    expect(due.code, due.stderr).toBe(1);
    expect(due.doc!['applyCommands'].due).toBe(1);

    await flowCenter.faults([{ path: '*', kind: 'status', status: 503 }]);
    const resolver = startService(
      ['--json', 'apply-command', 'resolve-unknown', '--follow', '--heartbeat-seconds', '1', '--request-timeout', '1'],
      { env },
    );
    running.push(resolver);
    await resolver.waitForLine('outage', isState('outage'));
    await waitFor(
      'registered in outage',
      async () => (await status([], env)).doc!['fleet'].sh.live.some((l: Doc) => l['state'] === 'outage'),
      10_000,
      200,
    );
    const outage = await status(['--fail-if', 'outage,not-ready,apply-due'], env);
    expect(outage.code).toBe(1);
    expect(outage.doc!['failing']).toEqual(['outage', 'not-ready']);
    // with its reason, as the resolver said it: the flow center and its status
    expect(outage.doc!['fleet'].sh.workers).toEqual([
      expect.objectContaining({
        command: 'apply-command resolve-unknown 100021', // its app key named: it settles only that key's
        state: 'outage',
        detail: expect.stringMatching(/^flow center lookup: .*503/),
      }),
    ]);

    await flowCenter.clearFaults();
    await waitFor(
      'running again',
      async () => (await status(['--fail-if', 'outage,not-ready,apply-due'], env)).code === 0,
      40_000,
      500,
    );
    expect((await resolver.stop('SIGTERM')).code).toBe(0);
  }, 90_000);

  test('apply-due per app key: a live resolver of another app key is none for these commands; one of their app key is', async ({
    dbs,
    flowCenter,
  }) => {
    await clearFlowCenter(flowCenter);
    const env = flowEnv(dbs, flowCenter);
    const p = uniquePrefix('sk');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'UNKNOWN', applyAppKey: APP.key }]);
    // paused: each resolver registers and settles nothing, so the commands stay due
    expect((await runCli(['pause', 'apply-command resolve-unknown', '--reason', 'test'], { env })).code).toBe(0);
    const resolverOf = (appKey: string) => {
      const r = startService(['--json', 'apply-command', 'resolve-unknown', '--follow', '--heartbeat-seconds', '1'], {
        env: { ...env, FCCTL_APP_KEY: appKey },
      });
      running.push(r);
      return r;
    };
    const registered = (command: string) =>
      waitFor(
        `${command} registered`,
        async () => (await status([], env)).doc!['fleet'].sh.live.some((l: Doc) => l['command'] === command),
        15_000,
        200,
      );
    const other = resolverOf('900009');
    await other.waitForLine('paused', isState('paused'));
    await registered('apply-command resolve-unknown 900009');
    const without = await status(['--fail-if', 'apply-due'], env);
    expect(without.code, without.stderr).toBe(1);
    expect(without.doc!['failing']).toEqual(['apply-due']);
    expect(without.doc!['applyCommands']).toMatchObject({ due: 1, dueAppKeys: [APP.key] });

    const own = resolverOf(APP.key);
    await own.waitForLine('paused', isState('paused'));
    await registered(`apply-command resolve-unknown ${APP.key}`);
    const with_ = await status(['--fail-if', 'apply-due'], env);
    expect(with_.code, with_.stderr).toBe(0);
    expect(with_.doc!['applyCommands']).toMatchObject({ due: 1, dueAppKeys: [APP.key] });
    expect((await other.stop('SIGTERM')).code).toBe(0);
    expect((await own.stop('SIGTERM')).code).toBe(0);
    expect((await runCli(['resume', 'apply-command resolve-unknown'], { env })).code).toBe(0);
  }, 90_000);

  test('a condition whose side is not read is not judged (exit 3, the line says which); bad combinations: one line, exit 2', async ({
    dbs,
  }) => {
    const noFc = await status(['--fail-if', 'no-relay'], dbs.env({ FCCTL_FC_DATABASE_URL: '' }));
    expect(noFc.code).toBe(3);
    expect(noFc.stderr).toBe(
      'fcctl: --fail-if no-relay cannot be judged: outbox not read (FC database not configured: FCCTL_FC_DATABASE_URL), ' +
        'fleet.fc not read (FC database not configured: FCCTL_FC_DATABASE_URL)\n',
    );
    const noSh = await status(['--fail-if', 'apply-due,outage'], dbs.env({ FCCTL_SH_DATABASE_URL: '' }));
    expect(noSh.code).toBe(3);
    expect(noSh.doc!['unjudged']).toEqual([
      { condition: 'apply-due', sections: ['applyCommands', 'fleet.sh'] },
      { condition: 'outage', sections: ['fleet.sh'] },
    ]);
    for (const [argv, message] of [
      [
        ['--json', 'status', '--format', 'line'],
        /^fcctl: --format line and --json are two formats: pass one of them\n$/,
      ],
      [['status', '--format', 'line', '--watch'], /^fcctl: --format line prints one snapshot: without --watch/],
      [['status', '--format', 'table'], /^fcctl: .*--format.*table/],
      [['status', '--fail-if', 'outage,nope'], /^fcctl: .*unknown condition "nope"/],
    ] as const) {
      const r = await spawnCli(argv, { env: dbs.env() });
      expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stdout).toBe('');
    }
  }, 60_000);

  test('--format line: one line of at most 80 columns, the verdict first, the exit code of --fail-if', async ({
    dbs,
  }) => {
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: uniqueConsumerKey('ln'), schoolId: 5 }, 1);
    const r = await spawnCli(['status', '--format', 'line', '--fail-if', 'no-relay'], { env: dbs.env() });
    expect(r.code, r.stderr).toBe(1);
    const lines = r.stdout.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('');
    expect([...lines[0]!].length).toBeLessThanOrEqual(80);
    expect(lines[0]).toMatch(/^FAILING no-relay .*· outbox due \d+ .*dead 0/);
  }, 60_000);
});
