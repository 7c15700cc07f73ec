/**
 * `fcctl status` against the real services (issue 29 §2), as real `bin/fcctl` processes: a
 * `deliveries send --follow` relay registered in the fleet, then SIGKILLed so its row goes stale; a
 * pause; DEAD and FAILED rows with their reasons; a live claim of a batch run; an `--all` run with a
 * failed pair; a side not configured or unreachable; `--fail-if`; bad input (exit 2, nothing written).
 */
import { describe, expect } from 'vitest';
import { insertCommands } from '../helpers/apply-commands.js';
import { checksumTables } from '../helpers/checksum.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { testAmqpUrl } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { freePort, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const FORM = '0f0e0d0c-0000-4000-8000-000000000001'; // insertDeliveries' form
const test = servicesTest({ prefix: 'status', init: 'all' });
type Doc = Record<string, any>;

async function status(args: string[], env: Record<string, string | undefined>) {
  const r = await runCli(['--json', 'status', ...args], { env });
  return { ...r, doc: r.stdout.trim() === '' ? null : (JSON.parse(r.stdout) as Doc) };
}

describe('fcctl status: the fleet at a glance from real rows and processes', () => {
  test('outbox, apply commands, a stale relay, a pause, a live claim, an --all run with a failed pair; --fail-if', async ({
    dbs,
  }) => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    const fc = `\`${dbs.fcName}\``;
    const sh = `\`${dbs.shName}\``;
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const key = uniqueConsumerKey('st');
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    const queue = await bindQueue(key);

    // an empty fleet: every section read, no condition holds
    let s = await status(['--fail-if', 'dead,paused,stale-workers,failed-pairs'], env);
    expect(s.code).toBe(0);
    expect(Object.keys(s.doc!)).toEqual([
      'takenAt',
      'outbox',
      'applyCommands',
      'fleet',
      'claims',
      'pauses',
      'reconcile',
      'conditions',
      'failing',
      'unjudged',
      'exitCode',
    ]);
    expect(s.doc!['reconcile']).toEqual({ status: 'ok', run: null });

    // a relay as a service: it registers, and delivers what is due
    const relay = startService(
      ['--json', 'deliveries', 'send', '--follow', '--heartbeat-seconds', '1', '--listen', `:${await freePort()}`],
      { env },
    );
    await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 3);
    await waitFor(
      '3 accepted',
      async () => (await status([], env)).doc!['outbox'].states.BROKER_ACCEPTED === 3,
      20_000,
      200,
    );
    s = await status([], env);
    expect(s.doc!['fleet'].fc.workers).toEqual([
      expect.objectContaining({
        command: 'deliveries send',
        pid: relay.child.pid,
        state: expect.any(String),
        stale: false,
      }),
    ]);
    expect(s.doc!['fleet'].sh).toEqual({ status: 'ok', workers: [], stale: 0, gone: 0, live: [] });
    expect(s.doc!['outbox'].accepted).toEqual({ last5m: 3, last1h: 3 });
    // killed: no clean stop removes its row, which goes stale after three beats
    await relay.stop('SIGKILL');
    await queue.close();
    await waitFor(
      'stale',
      async () => (await status([], env)).doc!['fleet'].fc.workers[0]?.stale === true,
      15_000,
      500,
    );
    expect((await status(['--fail-if', 'stale-workers'], env)).code).toBe(1);

    // DEAD and FAILED rows, their reason codes most frequent first
    const dead = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 6, state: 'DEAD' }, 3);
    await dbs.admin.query(
      `UPDATE ${fc}.answer_delivery SET last_error = IF(event_id = ?, 'GRANT_REVOKED: x', 'NO_ROUTE: y') WHERE event_id IN (?)`,
      [dead[0], dead],
    );
    const failed = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 7, state: 'FAILED' }, 2);
    // a batch run's live claim on the FAILED rows (owner host:pid:random), and their retry far ahead
    await dbs.admin.query(
      `UPDATE ${fc}.answer_delivery SET last_error = 'NACK: z', next_retry_at = NOW() + INTERVAL 1 HOUR, claim_owner = 'batch-host:4242:abcd', claim_expires_at = NOW() + INTERVAL 5 MINUTE WHERE event_id IN (?)`,
      [failed],
    );
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: 'st-1', state: 'DEAD' },
      { bizId: 'st-2', state: 'DONE' },
      { bizId: 'st-3', state: 'UNKNOWN' },
    ]);
    await dbs.admin.query(
      `UPDATE ${sh}.flow_apply_command SET last_error = 'OWNERSHIP_MISMATCH: q' WHERE biz_id = 'st-1'`,
    );
    await dbs.admin.query(`UPDATE ${sh}.flow_apply_command SET update_time = NOW() WHERE biz_id = 'st-2'`);

    // a pause in force on FC
    expect((await runCli(['--json', 'pause', 'deliveries', 'send', '--reason', 'status test'], { env })).code).toBe(0);

    // tonight's --all run: one pair done with differences, one failed, one claimed by a live process, one waiting
    const run = '2026-12-02T01-00Z';
    await dbs.admin.query(`INSERT INTO ${sh}.fcctl_reconcile_join (run_id, joined_at) VALUES (?, UTC_TIMESTAMP())`, [
      run,
    ]);
    await dbs.admin.query(
      `INSERT INTO ${sh}.fcctl_reconcile_task (run_id, sch_id, form_uuid, state, claim_owner, claim_expires_at, result_json, create_time, finished_at) VALUES
       (?, 1, ?, 'DONE', NULL, NULL, '{"exitCode":1,"counts":{},"differences":4}', UTC_TIMESTAMP() - INTERVAL 60 SECOND, UTC_TIMESTAMP()),
       (?, 2, ?, 'FAILED', NULL, NULL, '{"exitCode":3,"error":"boom"}', UTC_TIMESTAMP() - INTERVAL 60 SECOND, UTC_TIMESTAMP()),
       (?, 3, ?, 'CLAIMED', 'h9:77:ee:3', UTC_TIMESTAMP() + INTERVAL 1 MINUTE, NULL, UTC_TIMESTAMP() - INTERVAL 60 SECOND, NULL),
       (?, 4, ?, 'PENDING', NULL, NULL, NULL, UTC_TIMESTAMP() - INTERVAL 60 SECOND, NULL)`,
      [run, FORM, run, FORM, run, FORM, run, FORM],
    );

    const before = await checksumTables(dbs.admin, dbs.fcName);
    s = await status(['--fail-if', 'dead,paused,stale-workers,failed-pairs'], env);
    expect(s.code).toBe(1);
    expect(s.stderr).toBe('');
    const d = s.doc!;
    expect(d['outbox']).toMatchObject({
      status: 'ok',
      states: { PENDING: 0, BROKER_ACCEPTED: 3, FAILED: 2, DEAD: 3, GRANT_REVOKED: 0 },
      due: 0,
      held: 0,
      stuck: 0,
      oldestDueAgeSeconds: null,
      reasons: {
        DEAD: [
          { reason: 'NO_ROUTE', n: 2 },
          { reason: 'GRANT_REVOKED', n: 1 },
        ],
        FAILED: [{ reason: 'NACK', n: 2 }],
      },
    });
    expect(d['applyCommands']).toMatchObject({
      status: 'ok',
      states: { DEAD: 1, DONE: 1, UNKNOWN: 1 },
      held: null,
      due: 1,
      reasons: { DEAD: [{ reason: 'OWNERSHIP_MISMATCH', n: 1 }], FAILED: [] },
      accepted: { last5m: 1, last1h: 1 },
    });
    expect(d['applyCommands'].oldestDueAgeSeconds).toBeGreaterThanOrEqual(3600);
    expect(d['claims'].fc.owners).toEqual([
      { owner: 'batch-host:4242:abcd', host: 'batch-host', pid: 4242, rows: 2, expiresAt: expect.any(String) },
    ]);
    expect(d['pauses'].fc.pauses).toEqual([
      expect.objectContaining({ command: 'deliveries send', reason: 'status test', until: null }),
    ]);
    expect(d['pauses'].sh.pauses).toEqual([]);
    expect(d['reconcile'].run).toEqual({
      runId: run,
      startedAt: expect.any(String),
      total: 4,
      done: 1,
      failed: 1,
      pending: 1,
      claimed: 1,
      withDifferences: 1,
      processes: ['h9:77:ee'],
      etaSeconds: expect.any(Number),
    });
    expect(d['reconcile'].run.etaSeconds).toBeGreaterThanOrEqual(55);
    // the UNKNOWN command is due and no resolver runs; no outbox row is due (the FAILED ones retry in an hour)
    expect(d['conditions']).toEqual({
      dead: true,
      paused: true,
      'stale-workers': true,
      'failed-pairs': true,
      outage: false,
      'not-ready': false,
      'no-relay': false,
      'apply-due': true,
    });
    expect(d['failing']).toEqual(['dead', 'paused', 'stale-workers', 'failed-pairs']);
    // each condition alone decides; without --fail-if, exit 0
    for (const c of ['dead', 'paused', 'stale-workers', 'failed-pairs'])
      expect((await status(['--fail-if', c], env)).code).toBe(1);
    expect((await status([], env)).code).toBe(0);
    // read-only
    expect(await checksumTables(dbs.admin, dbs.fcName)).toEqual(before);
  });

  test('a side not configured is said so; a side unreachable is said so, the other shown, exit 3', async ({ dbs }) => {
    let s = await status([], dbs.env({ FCCTL_SH_DATABASE_URL: '' }));
    expect(s.code).toBe(0);
    for (const k of ['applyCommands', 'reconcile']) expect(s.doc![k]).toEqual({ status: 'not configured' });
    for (const k of ['fleet', 'claims', 'pauses']) expect(s.doc![k].sh).toEqual({ status: 'not configured' });
    expect(s.doc!['outbox'].status).toBe('ok');

    const port = await freePort();
    s = await status(['--fail-if', 'dead'], dbs.env({ FCCTL_SH_DATABASE_URL: `mysql://u:p@127.0.0.1:${port}/x` }));
    expect(s.code).toBe(3);
    expect(s.doc!['applyCommands']).toMatchObject({ status: 'unreachable', error: expect.any(String) });
    expect(s.doc!['fleet'].sh.status).toBe('unreachable');
    expect(s.doc!['fleet'].fc.status).toBe('ok');
    expect(s.doc!['outbox'].status).toBe('ok');
  });

  test('a malformed URL of one side: one line without the password, exit 2, and the process exits', async ({ dbs }) => {
    // the other side's pool is still opening when the bad URL is refused: it must be closed too
    for (const side of ['FC', 'SH'] as const) {
      const r = await spawnCli(['--json', 'status'], {
        env: dbs.env({ [`FCCTL_${side}_DATABASE_URL`]: 'mysql://bob:S3cretPW@[bad/x' }),
        timeoutMs: 15_000,
      });
      expect(r.code, side).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toEqual([
        `fcctl: ${side} database URL is not a valid URL: *** (percent-encode % # / ? @ : in its user or password (%25 %23 %2F %3F %40 %3A), or give the password in a file)`,
      ]);
      expect(r.stderr).not.toContain('S3cretPW');
    }
  });

  test('bad input: --watch off a terminal without --json, an unknown --fail-if condition: one line, exit 2', async ({
    dbs,
  }) => {
    const env = dbs.env();
    for (const argv of [
      ['status', '--watch'],
      ['status', '--fail-if', 'dead,bogus'],
      ['--json', 'status', '--fail-if', ''],
    ]) {
      const r = await runCli(argv, { env });
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^fcctl: /);
    }
    // --watch with --json: one snapshot
    const r = await status(['--watch'], env);
    expect(r.code).toBe(0);
    expect(r.doc!['outbox'].status).toBe('ok');
  });
});
