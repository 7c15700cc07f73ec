/**
 * `fcctl explain` against the real services (issue 29 §1): each verdict built from real rows — sent
 * with no queue bound (NO_ROUTE), held by push_allowed = 0, revoked, DEAD and replayed, accepted,
 * applied with a stale projection and repaired, absent at FC, retired, reconciled, an apply command
 * resolved at the flow-center stand-in — and the suggested replay and repair commands run as printed.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { APP_FLOW, BIZ_TYPE, flowEnv, insertCommands, ownedInstance } from '../helpers/apply-commands.js';
import { runCli } from '../helpers/cli.js';
import { testAmqpUrl } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { insertFcAnswer, insertProjection } from '../helpers/projection.js';
import { servicesTest } from '../helpers/services.js';
import { checksumTables } from '../helpers/checksum.js';

const test = servicesTest({ prefix: 'explain', init: 'all', flowApps: APP_FLOW });
type Doc = Record<string, any>;

let appId = 1000;
/** An FC answer, its consumer (registered, granted) and its outbox row for revision 4, PENDING. */
async function arrange(
  dbs: { admin: any; fcName: string },
  o: { push?: number; revoked?: number; formUuid?: string } = {},
) {
  const key = uniqueConsumerKey('ex');
  const formUuid = o.formUuid ?? randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`,
    [++appId, `code-${key}`, key],
  );
  await insertGrant(dbs.admin, dbs.fcName, {
    formUuid,
    schoolId: 5,
    consumerKey: key,
    push: o.push ?? 1,
    revoked: o.revoked ?? 0,
  });
  const a = await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 });
  const eventId = randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, create_time) VALUES (?, 'created', ?, ?, 5, 1, ?, 4, ?, 4, 0, ?, NOW(), ?, 'PENDING', 0, NOW())`,
    [eventId, PUBLISHER.appKey, key, formUuid, a.answerUuid, a.contentHash, a.snapshotJson],
  );
  return { key, eventId, formUuid, ...a };
}

async function explain(argv: string[], env: Record<string, string | undefined>) {
  const r = await runCli(['--json', 'explain', ...argv], { env });
  return { ...r, doc: r.stdout.trim() === '' ? null : (JSON.parse(r.stdout) as Doc) };
}
/** A printed command, run as a person would paste it (the suggested ones quote nothing here). */
const asArgv = (command: string) => {
  expect(command).not.toMatch(/['"\\]/);
  return command.split(' ').slice(1);
};

describe('fcctl explain answer: verdicts from real rows', () => {
  test('NO_ROUTE, then DEAD with a replay that works as printed; held; revoked; accepted', async ({ dbs }) => {
    const env = dbs.env({
      FCCTL_AMQP_URL: testAmqpUrl(),
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const routeless = await arrange(dbs);
    const held = await arrange(dbs, { push: 0 });
    const revoked = await arrange(dbs, { revoked: 1 });
    // no queue bound for any of these keys: the broker returns the message (mandatory)
    expect((await runCli(['deliveries', 'send'], { env })).code).toBe(1);

    const w = await explain(['answer', routeless.answerUuid], env);
    expect(w.code).toBe(0);
    expect(w.doc!['verdicts']).toEqual([
      {
        consumerAppKey: routeless.key,
        schId: '5',
        kind: 'WAITING',
        // the backoff is 20 s from the failed publish; a second may tick before explain reads the clock
        text: expect.stringMatching(
          /^waiting: next retry in (19|20)s after NO_ROUTE ×1 — it fails again until this is set right: the consumer \(its team\) must bind a queue/,
        ),
        command: null,
        execute: null,
      },
    ]);
    const row = w.doc!['outbox'].rows[0];
    expect(row).toMatchObject({
      eventId: routeless.eventId,
      state: 'FAILED',
      retryCount: 1,
      nextRetry: expect.stringMatching(/^in (19|20)s$/),
      claimOwner: null,
    });
    expect(w.doc!['fc']).toMatchObject({
      status: 'ok',
      answer: { revision: '4', contentHash: routeless.contentHash, hashMatches: true },
    });
    expect(w.doc!['grants']).toMatchObject({
      status: 'ok',
      rows: [{ consumerAppKey: routeless.key, push: true, revoked: false }],
    });

    const h = await explain(['answer', held.answerUuid], env);
    expect(h.doc!['verdicts'][0]).toMatchObject({
      kind: 'HELD',
      text: 'held: push_allowed = 0 (PENDING)',
      command: null,
      execute: null,
    });
    const g = await explain(['answer', revoked.answerUuid], env);
    expect(g.doc!['verdicts'][0]).toMatchObject({ kind: 'GRANT_REVOKED', command: null, execute: null });
    expect(g.doc!['outbox'].rows[0].state).toBe('GRANT_REVOKED');

    // due again, and the budget spent: DEAD
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET next_retry_at = NOW() - INTERVAL 1 SECOND WHERE event_id = ?`,
      [routeless.eventId],
    );
    expect((await runCli(['deliveries', 'send', '--max-retries', '2'], { env })).code).toBe(1);
    const d = await explain(['answer', routeless.answerUuid, '--consumer', routeless.key, '--school', '5'], env);
    const replay = `fcctl deliveries replay --consumer ${routeless.key} --school 5 --answer ${routeless.answerUuid} --expected-revision 4 --operation-id explain:${routeless.eventId}:g0`;
    expect(d.doc!['verdicts']).toEqual([
      {
        consumerAppKey: routeless.key,
        schId: '5',
        kind: 'DEAD',
        text: expect.stringMatching(
          /^DEAD \(NO_ROUTE ×2\): a replay fails again until this is set right: the consumer/,
        ),
        command: replay,
        execute: `${replay} --execute`,
      },
    ]);
    // the event verb names the same row and verdict
    // on a terminal the command is one line, to paste as it is (never hard-wrapped at 80 columns)
    const tty = await runCli(['explain', 'answer', routeless.answerUuid], { env, tty: true });
    expect(tty.stdout).toContain(`  dry run, then the write:\n  $ ${replay}\n  $ ${replay} --execute\n`);
    const e = await explain(['event', routeless.eventId], env);
    expect(e.doc!['subject']).toMatchObject({ eventId: routeless.eventId, answerUuid: routeless.answerUuid });
    expect(e.doc!['verdicts'][0].command).toBe(replay);

    const q = await bindQueue(routeless.key);
    try {
      const dry = await runCli(asArgv(replay), { env });
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain('QUEUED');
      expect((await explain(['answer', routeless.answerUuid], env)).doc!['outbox'].rows[0].state).toBe('DEAD');
      const r = await runCli(asArgv(`${replay} --execute`), { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('QUEUED');
      expect((await runCli(['deliveries', 'send'], { env })).code).toBe(0);
    } finally {
      await q.close();
    }
    const a = await explain(['answer', routeless.answerUuid], env);
    expect(a.doc!['verdicts'][0]).toMatchObject({ kind: 'ACCEPTED_NOT_APPLIED', command: null, execute: null });
    expect(a.doc!['verdicts'][0].text).toMatch(/^accepted by the broker, not yet applied by the consumer \(\d+s\)$/);
    expect(a.doc!['outbox'].rows[0].generation).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);

  test("a claim whose process's registry row missed three beats: stale; silent 20 intervals and an hour: gone, as fcctl status says (issue 36 §8)", async ({
    dbs,
  }) => {
    const env = dbs.env({ FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
    await insertRegistry(dbs.admin, dbs.fcName);
    const a = await arrange(dbs);
    const fc = `\`${dbs.fcName}\``;
    await dbs.admin.query(
      `UPDATE ${fc}.answer_delivery SET claim_owner = 'hx:4242:abc', claim_expires_at = NOW() + INTERVAL 2 HOUR WHERE event_id = ?`,
      [a.eventId],
    );
    const beatAgo = async (seconds: number) => {
      await dbs.admin.query(`DELETE FROM ${fc}.fcctl_worker`);
      await dbs.admin.query(
        `INSERT INTO ${fc}.fcctl_worker (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state) ` +
          "VALUES (UUID(), 'deliveries send', 'hx', 4242, '1', UTC_TIMESTAMP() - INTERVAL 3 HOUR, UTC_TIMESTAMP() - INTERVAL ? SECOND, 10, 'running')",
        [seconds],
      );
      const w = await explain(['answer', a.answerUuid], env);
      expect(w.code, w.stderr).toBe(0);
      return w.doc!['verdicts'][0].text as string;
    };
    expect(await beatAgo(0)).toMatch(/\(hx pid 4242\)$/);
    expect(await beatAgo(60)).toMatch(/\(hx pid 4242, registry row stale\)$/);
    // 20 intervals (200 s) are less than the hour's floor: still stale
    expect(await beatAgo(3500)).toMatch(/\(hx pid 4242, registry row stale\)$/);
    expect(await beatAgo(3700)).toMatch(/\(hx pid 4242, registry row gone\)$/);
  });

  test('applied with a stale projection: the repair runs as printed, then delivered and applied, audited', async ({
    dbs,
    tmp,
  }) => {
    const env = dbs.env();
    const a = await arrange(dbs);
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'BROKER_ACCEPTED', broker_accepted_at = NOW() - INTERVAL 2 HOUR, consumer_applied_at = NOW() - INTERVAL 2 HOUR, consumer_outcome = 'APPLIED' WHERE event_id = ?`,
      [a.eventId],
    );
    await insertProjection(dbs.admin, dbs.shName, {
      answerUuid: a.answerUuid,
      formUuid: a.formUuid,
      schId: 5,
      revision: 3,
      linked: false,
    });
    const s = await explain(['answer', a.answerUuid], env);
    const local = s.doc!['sh'].projections[0];
    expect(local).toMatchObject({ schId: '5', revision: '3', linkState: 'UNLINKED', retiredAt: null });
    const repair = `fcctl projection repair-authoritative --consumer ${a.key} --school 5 --answer ${a.answerUuid} --expected-revision 3 --expected-hash ${local.contentHash} --expected-is-deleted 0 --proof-id explain:${a.answerUuid}:4`;
    expect(s.doc!['verdicts']).toEqual([
      {
        consumerAppKey: a.key,
        schId: '5',
        kind: 'SH_STALE',
        text: 'SH stale (revision 3, FC 4)',
        command: repair,
        execute: `${repair} --execute`,
      },
    ]);
    // as pasted at a prompt: its evidence file goes to the current directory (here the file's temp dir)
    const cwd = process.cwd();
    process.chdir(tmp);
    const r = await runCli(asArgv(`${repair} --execute`), { env }).finally(() => process.chdir(cwd));
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(tmp, 'repair-evidence.jsonl'))).toBe(true);
    const after = await explain(['answer', a.answerUuid], env);
    expect(after.doc!['verdicts'][0]).toMatchObject({ kind: 'DELIVERED_APPLIED', command: null, execute: null });
    expect(after.doc!['verdicts'][0].text).toMatch(
      /^delivered and applied \(APPLIED at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)$/,
    );
    expect(after.doc!['sh'].projections[0]).toMatchObject({
      revision: '4',
      contentHash: a.contentHash,
      lastRepairProofId: `explain:${a.answerUuid}:4`,
    });
    expect(after.doc!['sh'].audit).toEqual([
      expect.objectContaining({ action: expect.any(String), outcome: 'APPLIED', proofId: `explain:${a.answerUuid}:4` }),
    ]);
  });

  test('a receipt the consumer did not take in (DEFERRED, on an accepted and on a DEAD row): not delivered, the printed replay queues it', async ({
    dbs,
  }) => {
    const env = { ...dbs.env(), FCCTL_SH_DATABASE_URL: undefined };
    const a = await arrange(dbs);
    const d = await arrange(dbs);
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'BROKER_ACCEPTED', broker_accepted_at = NOW() - INTERVAL 2 HOUR, consumer_applied_at = NOW() - INTERVAL 2 HOUR, consumer_outcome = 'DEFERRED' WHERE event_id = ?`,
      [a.eventId],
    );
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', retry_count = 8, last_error = 'NACK', consumer_applied_at = NOW(), consumer_outcome = 'DEFERRED' WHERE event_id = ?`,
      [d.eventId],
    );
    const x = await explain(['answer', a.answerUuid], env);
    const v = x.doc!['verdicts'][0];
    expect(v).toMatchObject({ kind: 'CONSUMER_REFUSED' });
    expect(v.text).toMatch(/^accepted by the broker, not taken in by the consumer \(DEFERRED at .+\)$/);
    const r = await runCli(asArgv(v.execute), { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('QUEUED');
    const y = await explain(['answer', d.answerUuid], env);
    expect(y.doc!['verdicts'][0]).toMatchObject({ kind: 'DEAD' });
    expect(y.doc!['verdicts'][0].text).toMatch(
      /^DEAD \(NACK ×8\): a replay sends it once the broker accepts messages again/,
    );
    const q = await runCli(asArgv(y.doc!['verdicts'][0].execute), { env });
    expect(q.code, q.stderr).toBe(0);
    expect(q.stdout).toContain('QUEUED');
  });

  test('revisions 9 and 10: the newest row is revision 10 (numeric order), and a DEAD 10 gets a replay that queues', async ({
    dbs,
  }) => {
    const env = { ...dbs.env(), FCCTL_SH_DATABASE_URL: undefined };
    const a = await arrange(dbs);
    // revision 9 DEAD, revision 10 DEAD too: the replay must name 10, the newest
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET answer_revision = 9, state = 'DEAD', retry_count = 8, last_error = 'NACK' WHERE event_id = ?`,
      [a.eventId],
    );
    await dbs.admin.query(
      `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
        answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, last_error, create_time)
       SELECT ?, 'updated', source_app_key, consumer_app_key, 5, 1, form_uuid, 4, answer_uuid, 10, 0, content_hash, NOW(), snapshot_json, 'DEAD', 8, 'NO_ROUTE', NOW()
       FROM \`${dbs.fcName}\`.answer_delivery WHERE event_id = ?`,
      [`${a.eventId.slice(0, 30)}-r10`, a.eventId],
    );
    await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.answer SET answer_revision = 10 WHERE answer_uuid = ?`, [
      a.answerUuid,
    ]);
    const x = await explain(['answer', a.answerUuid], env);
    expect(x.doc!['outbox'].rows.map((r: Doc) => r.revision)).toEqual(['10', '9']);
    expect(x.doc!['fc'].answer).toMatchObject({ revision: '10', outboxRevision: '10', hashMatches: true });
    const v = x.doc!['verdicts'][0];
    expect(v, v.text).toMatchObject({ kind: 'DEAD' });
    expect(v.text).toMatch(/^DEAD \(NO_ROUTE ×8\): /);
    expect(v.command).toContain('--expected-revision 10 ');
    const r = await runCli(asArgv(v.execute), { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('QUEUED');
  });

  test('absent at FC, present at SH; retired; found nowhere: exit 1 and one line', async ({ dbs }) => {
    const env = dbs.env();
    const present = randomUUID();
    const retired = randomUUID();
    await insertProjection(dbs.admin, dbs.shName, {
      answerUuid: present,
      formUuid: randomUUID(),
      revision: 2,
      linked: false,
    });
    await insertProjection(dbs.admin, dbs.shName, {
      answerUuid: retired,
      formUuid: randomUUID(),
      revision: 2,
      linked: false,
      retiredAt: '2026-11-30 03:00:00',
    });
    const p = await explain(['answer', present], env);
    expect(p.code).toBe(0);
    expect(p.doc!['fc']).toEqual({ status: 'ok', answer: null });
    expect(p.doc!['verdicts']).toEqual([
      {
        consumerAppKey: '-',
        schId: '5',
        kind: 'ABSENT_AT_FC',
        text: "absent at FC, present at SH (revision 2): see `fcctl retire-absent prove` (from a reconcile run's retire-candidates.jsonl)",
        command: null,
        execute: null,
      },
    ]);
    const t = await explain(['answer', retired], env);
    expect(t.doc!['verdicts'][0]).toMatchObject({
      kind: 'RETIRED',
      text: 'absent at FC, retired at SH on 2026-11-30 03:00:00 (proof retire-proof-1)',
    });
    const none = await explain(['answer', randomUUID()], env);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('');
    expect(none.stderr.trim().split('\n')).toHaveLength(1);
    expect(none.stderr).toMatch(/^fcctl: answer [0-9a-f-]{36}: not found at FC, in the outbox or at SH\n$/);
  });

  test('reconciled: the category from the run directory; without it "not recorded"', async ({ dbs, tmp }) => {
    const env = dbs.env();
    const a = await arrange(dbs);
    await insertProjection(dbs.admin, dbs.shName, {
      answerUuid: a.answerUuid,
      formUuid: a.formUuid,
      schId: 5,
      revision: 3,
      linked: false,
    });
    const dir = join(tmp, 'rec');
    const run = await runCli(['reconcile', 'run', '--school', '5', '--form', a.formUuid, '--out-dir', dir], { env });
    expect(run.code, run.stderr).toBe(0);
    const withDir = await explain(['answer', a.answerUuid, '--reconcile-dir', dir], env);
    expect(withDir.doc!['sh'].reconcile).toEqual([
      expect.objectContaining({
        schId: '5',
        formUuid: a.formUuid,
        category: 'STALE_LOCAL',
        categorySource: join(dir, 'report.csv'),
      }),
    ]);
    expect(withDir.doc!['sh'].reconcile[0].runId).toMatch(/.+/);
    // a run of every pair records its pairs in fcctl_reconcile_task: found without a directory, category not recorded
    const all = await runCli(
      [
        'reconcile',
        'run',
        '--all',
        '--consumer',
        a.key,
        '--school',
        '5',
        '--form',
        a.formUuid,
        '--out-dir',
        join(tmp, 'all'),
      ],
      { env },
    );
    expect(all.code, all.stderr).toBe(0);
    const noDir = await explain(['answer', a.answerUuid], env);
    expect(noDir.doc!['sh'].reconcile).toEqual([
      expect.objectContaining({
        schId: '5',
        state: 'DONE',
        category: 'not recorded',
        counts: expect.objectContaining({ STALE_LOCAL: 1 }),
      }),
    ]);
    const allDir = await explain(['answer', a.answerUuid, '--reconcile-dir', join(tmp, 'all')], env);
    expect(allDir.doc!['sh'].reconcile[0]).toMatchObject({
      state: 'DONE',
      category: 'STALE_LOCAL',
      runId: noDir.doc!['sh'].reconcile[0].runId,
    });
  });

  test('the apply command of the projection, its flow instance looked up (one GET, never an apply); explain command', async ({
    dbs,
    flowCenter,
  }) => {
    const env = flowEnv(dbs, flowCenter);
    const a = await arrange(dbs);
    const bizId = `ex-${randomUUID().slice(0, 8)}`;
    await insertCommands(dbs.admin, dbs.shName, [{ bizId, state: 'DONE' }]);
    const [[sa]] = (await dbs.admin.query(`SELECT id FROM \`${dbs.shName}\`.service_apply WHERE biz_id = ?`, [
      bizId,
    ])) as any;
    await insertProjection(dbs.admin, dbs.shName, {
      answerUuid: a.answerUuid,
      formUuid: a.formUuid,
      schId: 5,
      revision: 4,
    });
    await dbs.admin.query(`UPDATE \`${dbs.shName}\`.fc_answer_projection SET apply_id = ? WHERE answer_uuid = ?`, [
      sa.id,
      a.answerUuid,
    ]);
    await flowCenter.addInstances([ownedInstance(bizId, 20)]);
    await flowCenter.clearLog();
    const d = await explain(['answer', a.answerUuid], env);
    expect(d.doc!['applyCommands']).toMatchObject({
      status: 'ok',
      commands: [
        { bizType: BIZ_TYPE, bizId, state: 'DONE', flow: { status: 'found', instance: { bizId, status: 20 } } },
      ],
    });
    const c = await explain(['command', '--biz-type', BIZ_TYPE, '--biz-id', bizId], env);
    expect(c.code).toBe(0);
    expect(c.doc!['applyCommands'].commands[0]).toMatchObject({ bizId, flow: { status: 'found' } });
    const log = (await flowCenter.log()).filter((e) => e.bizId === bizId);
    expect(log.map((e) => e.path)).toEqual(['/oapi/flow/instance', '/oapi/flow/instance']);
    // without FCCTL_FLOW_URL the flow center is "not configured", never guessed
    const plain = await explain(['command', '--biz-type', BIZ_TYPE, '--biz-id', bizId], dbs.env());
    expect(plain.doc!['applyCommands'].commands[0].flow).toEqual({ status: 'not configured' });
    const missing = await explain(['command', '--biz-type', BIZ_TYPE, '--biz-id', 'nope'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `fcctl: apply command ${BIZ_TYPE}/nope: not found in flow_apply_command or service_apply\n`,
    );
  });

  test('a side not configured is shown so (exit 0); a side unreachable is shown so, the others still are (exit 3)', async ({
    dbs,
  }) => {
    const a = await arrange(dbs);
    const fcOnly = await explain(['answer', a.answerUuid], { ...dbs.env(), FCCTL_SH_DATABASE_URL: undefined });
    expect(fcOnly.code).toBe(0);
    expect(fcOnly.doc!['sh']).toEqual({ status: 'not configured' });
    expect(fcOnly.doc!['applyCommands']).toEqual({ status: 'not configured' });
    expect(fcOnly.doc!['fc'].status).toBe('ok');
    const down = await explain(
      ['answer', a.answerUuid],
      dbs.env({ FCCTL_SH_DATABASE_URL: 'mysql://u:secret-pw@127.0.0.1:1/sh' }),
    );
    expect(down.code).toBe(3);
    expect(down.doc!['sh']).toMatchObject({ status: 'unreachable', error: expect.stringContaining('SH database') });
    expect(down.stdout).not.toContain('secret-pw');
    expect(down.doc!['fc']).toMatchObject({ status: 'ok', answer: { answerUuid: a.answerUuid } });
    expect(down.doc!['verdicts'][0]).toMatchObject({ kind: 'WAITING' });
    const neither = await runCli(['explain', 'answer', a.answerUuid], { env: { PATH: process.env['PATH'] } });
    expect(neither.code).toBe(2);
    // an event id is only in the outbox: without FC it is not "not found" (exit 1), it cannot be looked up
    const noFc = await explain(['event', a.eventId], { ...dbs.env(), FCCTL_FC_DATABASE_URL: undefined });
    expect(noFc.code).toBe(2);
    expect(noFc.stdout).toBe('');
    expect(noFc.stderr).toBe('fcctl: explain event reads the outbox: FCCTL_FC_DATABASE_URL is not configured\n');
  });

  test('bad input: not a uuid, an unknown consumer, --watch, a bad school or event id: one line, exit 2, nothing changed', async ({
    dbs,
  }) => {
    const a = await arrange(dbs);
    const before = await checksumTables(dbs.admin, dbs.fcName);
    for (const argv of [
      ['answer', 'not-a-uuid'],
      ['answer', a.answerUuid, '--consumer', 'no-such-app'],
      ['answer', a.answerUuid, '--watch'],
      ['answer', a.answerUuid, '--school', '0'],
      ['event', 'x'.repeat(37)],
      ['command', '--biz-type', 'T'],
    ]) {
      const r = await runCli(['explain', ...argv], { env: dbs.env() });
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stdout, argv.join(' ')).toBe('');
      expect(r.stderr.trim().split('\n'), argv.join(' ')).toHaveLength(1);
    }
    expect(await checksumTables(dbs.admin, dbs.fcName)).toEqual(before);
  });

  test('--consumer of a key that is not in application_info but in a grant or an outbox row of the answer: explained, not refused', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const a = await arrange(dbs);
    // a deregistered consumer: its grant and outbox row stay, its registry row is gone
    await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.application_info WHERE app_key = ?`, [a.key]);
    const x = await explain(['answer', a.answerUuid, '--consumer', a.key], env);
    expect(x.code, x.stderr).toBe(0);
    expect(x.doc!['verdicts']).toEqual([expect.objectContaining({ consumerAppKey: a.key, kind: 'WAITING' })]);
    // only in the grant: no outbox row written for it yet
    const onlyGrant = uniqueConsumerKey('exg');
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: a.formUuid, schoolId: 5, consumerKey: onlyGrant });
    const g = await explain(['answer', a.answerUuid, '--consumer', onlyGrant], env);
    expect(g.code, g.stderr).toBe(0);
    expect(g.doc!['verdicts']).toEqual([
      expect.objectContaining({ consumerAppKey: onlyGrant, kind: 'NO_DELIVERY_ROW' }),
    ]);
    const none = await explain(['answer', a.answerUuid, '--consumer', 'no-such-app'], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(
      'fcctl: --consumer no-such-app: no such app key in application_info, nor in a grant or outbox row of this answer\n',
    );
  });

  test('an answer with more outbox rows than the list shows: the list says it is cut, a consumer cut off is not "no outbox row"', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const a = await arrange(dbs);
    const b = await arrange(dbs, { formUuid: a.formUuid });
    // b's one row (revision 4, DEAD) belongs to a's answer; a has 201 newer revisions
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET answer_uuid = ?, state = 'DEAD', retry_count = 8, last_error = 'NACK' WHERE event_id = ?`,
      [a.answerUuid, b.eventId],
    );
    await dbs.admin.query(
      `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
        answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, create_time)
       SELECT UUID(), 'updated', source_app_key, consumer_app_key, 5, 1, form_uuid, 4, answer_uuid, seq, 0, content_hash, NOW(), snapshot_json, 'BROKER_ACCEPTED', 0, NOW()
       FROM \`${dbs.fcName}\`.answer_delivery JOIN \`${dbs.fcName}\`.seq_5_to_205 WHERE event_id = ?`,
      [a.eventId],
    );
    await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.answer SET answer_revision = 205 WHERE answer_uuid = ?`, [
      a.answerUuid,
    ]);
    const x = await explain(['answer', a.answerUuid], env);
    expect(x.code, x.stderr).toBe(0);
    expect(x.doc!['outbox'].rows).toHaveLength(200);
    expect(x.doc!['outbox'].truncated).toBe(true);
    const vb = x.doc!['verdicts'].find((v: Doc) => v.consumerAppKey === b.key);
    expect(vb, vb.text).toMatchObject({ kind: 'UNKNOWN', command: null, execute: null });
    expect(vb.text).toContain(`explain again with --consumer ${b.key} --school 5`);
    const y = await explain(['answer', a.answerUuid, '--consumer', b.key, '--school', '5'], env);
    expect(y.doc!['outbox']).toMatchObject({ truncated: false, rows: [{ eventId: b.eventId, state: 'DEAD' }] });
    expect(y.doc!['verdicts']).toEqual([expect.objectContaining({ consumerAppKey: b.key, kind: 'OUTBOX_BEHIND' })]);
    const t = await runCli(['explain', 'answer', a.answerUuid], { env, tty: true });
    expect(t.stdout.replace(/\s+/g, ' ')).toContain(
      '… only the first 200 outbox rows (newest revisions) shown: narrow with --consumer and --school',
    );
  });

  test('on a terminal: the ink report, verdict first, with the command to run', async ({ dbs }) => {
    const a = await arrange(dbs, { push: 0 });
    const r = await runCli(['explain', 'answer', a.answerUuid], { env: dbs.env(), tty: true });
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(`explain answerUuid ${a.answerUuid}`);
    expect(r.stdout).toContain(`${a.key} / school 5: held: push_allowed = 0 (PENDING)`);
    for (const title of ['verdict', 'FC', 'grants', 'outbox', 'SH', 'apply commands']) expect(lines).toContain(title);
    expect(r.stdout.indexOf('verdict')).toBeLessThan(r.stdout.indexOf('\nFC\n'));
  });
});
