/**
 * `fcctl explain` past the projection, from real rows (issue 34 §17): a delivered and applied
 * answer whose apply command is DEAD (by the flow center's faults, or someone else's instance),
 * UNKNOWN or PENDING gets a verdict of its own and, where a requeue settles it, the requeue run as
 * printed; and a grant of another form of the consumer and school is no stand-in for the answer's.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { BIZ_TYPE, insertCommands } from '../helpers/apply-commands.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { insertGrant, PUBLISHER, uniqueConsumerKey } from '../helpers/deliveries.js';
import { insertFcAnswer, insertProjection } from '../helpers/projection.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'explaina', init: 'all' });
type Doc = Record<string, any>;
type Dbs = { admin: any; fcName: string; shName: string };

let appId = 7000;
async function consumer(dbs: Dbs, formUuid: string | null) {
  const key = uniqueConsumerKey('exa');
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`,
    [++appId, `code-${key}`, key],
  );
  if (formUuid !== null) await insertGrant(dbs.admin, dbs.fcName, { formUuid, schoolId: 5, consumerKey: key });
  return key;
}

/** An FC answer at revision 4 and its outbox row for `key` at school 5, then `set` on the row. */
async function answerWithRow(dbs: Dbs, formUuid: string, key: string, set: string) {
  const a = await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 });
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, create_time) VALUES (UUID(), 'created', ?, ?, 5, 1, ?, 4, ?, 4, 0, ?, NOW(), ?, 'PENDING', 0, NOW())`,
    [PUBLISHER.appKey, key, formUuid, a.answerUuid, a.contentHash, a.snapshotJson],
  );
  await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.answer_delivery SET ${set} WHERE answer_uuid = ?`, [a.answerUuid]);
  return a;
}

const APPLIED_2H =
  "state = 'BROKER_ACCEPTED', broker_accepted_at = NOW() - INTERVAL 2 HOUR, consumer_applied_at = NOW() - INTERVAL 2 HOUR, consumer_outcome = 'APPLIED'";

/** A delivered and applied answer whose SH projection (in sync) is linked to an apply command in `state`. */
async function appliedWithCommand(dbs: Dbs, state: 'PENDING' | 'FAILED' | 'DEAD' | 'DONE', set: string) {
  const formUuid = randomUUID();
  const key = await consumer(dbs, formUuid);
  const a = await answerWithRow(dbs, formUuid, key, APPLIED_2H);
  const bizId = `exa-${randomUUID().slice(0, 8)}`;
  await insertCommands(dbs.admin, dbs.shName, [{ bizId, state }]);
  await dbs.admin.query(`UPDATE \`${dbs.shName}\`.flow_apply_command SET ${set} WHERE biz_id = ?`, [bizId]);
  const [[sa]] = (await dbs.admin.query(`SELECT id FROM \`${dbs.shName}\`.service_apply WHERE biz_id = ?`, [
    bizId,
  ])) as any;
  await insertProjection(dbs.admin, dbs.shName, {
    answerUuid: a.answerUuid,
    formUuid,
    revision: 4,
    contentHash: a.contentHash,
  });
  await dbs.admin.query(`UPDATE \`${dbs.shName}\`.fc_answer_projection SET apply_id = ? WHERE answer_uuid = ?`, [
    sa.id,
    a.answerUuid,
  ]);
  return { ...a, key, bizId };
}

async function explain(argv: string[], env: Record<string, string | undefined>) {
  const r = await runCli(['--json', 'explain', ...argv], { env });
  return { ...r, doc: r.stdout.trim() === '' ? null : (JSON.parse(r.stdout) as Doc) };
}

/** A printed command as pasted at a prompt in `dir` (its evidence file goes there); these quote nothing. */
async function runAsPrinted(command: string, env: Record<string, string | undefined>, dir: string, extra: string[]) {
  expect(command).not.toMatch(/['"\\]/);
  const cwd = process.cwd();
  process.chdir(dir);
  return runCli([...command.split(' ').slice(1), ...extra], { env }).finally(() => process.chdir(cwd));
}

const DELIVERED = /^delivered and applied \(APPLIED at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\); /;

describe('explain: the apply command after the projection', () => {
  test('DEAD by OWNERSHIP_MISMATCH: a person must look at the flow instance, no command', async ({ dbs }) => {
    const a = await appliedWithCommand(
      dbs,
      'DEAD',
      "retry_count = 1, last_error = 'OWNERSHIP_MISMATCH: instance FI-9 flowGuid other'",
    );
    const x = await explain(['answer', a.answerUuid], dbs.env());
    expect(x.code, x.stderr).toBe(0);
    const [v] = x.doc!['verdicts'];
    expect(v).toMatchObject({ kind: 'APPLY_DEAD', command: null, execute: null });
    expect(v.text).toMatch(DELIVERED);
    expect(v.text).toContain(
      `flow apply command ${BIZ_TYPE}/${a.bizId} is DEAD (OWNERSHIP_MISMATCH ×1): the flow center's instance of this business key is someone else's (app key, submitter or flowGuid): a person must look at the flow instance`,
    );
  });

  test('DEAD by the flow center timing out: the printed requeue dry-runs, then requeues with --execute; then UNKNOWN, settled by resolve-unknown now', async ({
    dbs,
    tmp,
  }) => {
    const env = dbs.env();
    const a = await appliedWithCommand(
      dbs,
      'DEAD',
      "retry_count = 6, last_error = 'LOOKUP_TIMEOUT: no answer in 5000 ms', update_time = '2026-12-01 10:00:00'",
    );
    const x = await explain(['answer', a.answerUuid], env);
    const [v] = x.doc!['verdicts'];
    const [[row]] = (await dbs.admin.query(`SELECT id FROM \`${dbs.shName}\`.flow_apply_command WHERE biz_id = ?`, [
      a.bizId,
    ])) as any;
    expect(v).toMatchObject({
      kind: 'APPLY_DEAD',
      command: `fcctl apply-command requeue --biz-type ${BIZ_TYPE} --biz-id ${a.bizId} --operation-id explain:requeue:${row.id}:20261201100000`,
    });
    expect(v.text).toMatch(DELIVERED);
    expect(v.text).toContain(
      'is DEAD (LOOKUP_TIMEOUT ×6): the flow center did not answer (an outage, timeouts) until the retry budget was spent: once it answers again, requeue it — a dry run first, then the same line with --execute',
    );
    const dry = await runAsPrinted(v.command, env, tmp, []);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('"code":"WOULD_REQUEUE"');
    const run = await runAsPrinted(v.command, env, tmp, ['--execute']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('"code":"REQUEUED"');
    const y = await explain(['answer', a.answerUuid], env);
    expect(y.doc!['verdicts'][0]).toMatchObject({ kind: 'APPLY_UNKNOWN', command: null, execute: null });
    expect(y.doc!['verdicts'][0].text).toContain(
      `flow apply command ${BIZ_TYPE}/${a.bizId} is UNKNOWN (REQUEUED ×0): apply-command resolve-unknown settles it now (due)`,
    );
  });

  test("DEAD by a reason resolve-unknown never writes (its service's own): no requeue printed — a requeue would resend the apply", async ({
    dbs,
  }) => {
    const a = await appliedWithCommand(
      dbs,
      'DEAD',
      "retry_count = 0, last_error = 'CANCELLED: withdrawn by the applicant', update_time = '2026-12-01 10:00:00'",
    );
    const r = await spawnCli(['--json', 'explain', 'answer', a.answerUuid], { env: dbs.env() });
    expect(r.code, r.stderr).toBe(0);
    const [v] = (JSON.parse(r.stdout) as Doc)['verdicts'];
    expect(v).toMatchObject({ kind: 'APPLY_DEAD', command: null, execute: null });
    expect(v.text).toContain(
      `flow apply command ${BIZ_TYPE}/${a.bizId} is DEAD (CANCELLED ×0), not by a reason apply-command resolve-unknown writes: a person must find out why first`,
    );
  });

  test('PENDING and FAILED: who settles them and when; DONE stays delivered and applied', async ({ dbs }) => {
    const p = await appliedWithCommand(dbs, 'PENDING', 'retry_count = 0');
    const f = await appliedWithCommand(
      dbs,
      'FAILED',
      "retry_count = 2, last_error = 'APPLY_HTTP_503: busy', next_retry_at = NOW() + INTERVAL 3 MINUTE",
    );
    const d = await appliedWithCommand(dbs, 'DONE', 'retry_count = 0');
    const env = dbs.env();
    const vp = (await explain(['answer', p.answerUuid], env)).doc!['verdicts'][0];
    expect(vp).toMatchObject({ kind: 'APPLY_PENDING', command: null, execute: null });
    expect(vp.text).toContain('is PENDING: its service has not sent it yet');
    const vf = (await explain(['answer', f.answerUuid], env)).doc!['verdicts'][0];
    expect(vf).toMatchObject({ kind: 'APPLY_FAILED', command: null, execute: null });
    expect(vf.text).toMatch(/is FAILED \(APPLY_HTTP_503 ×2\): apply-command resolve-unknown tries it again in 3m$/);
    const vd = (await explain(['answer', d.answerUuid], env)).doc!['verdicts'][0];
    expect(vd.kind).toBe('DELIVERED_APPLIED');
  });
});

describe('explain: the grant of the answer’s own form', () => {
  test("a grant of another form of the consumer and school is not the answer's: a PENDING row with none is WILL_BE_REVOKED", async ({
    dbs,
  }) => {
    const formUuid = randomUUID();
    const otherForm = randomUUID();
    // the consumer is granted another form at school 5, not the answer's
    const key = await consumer(dbs, otherForm);
    const a = await answerWithRow(dbs, formUuid, key, "state = 'PENDING'");
    // SH's projection names the other form (so its grants are read too)
    await insertProjection(dbs.admin, dbs.shName, { answerUuid: a.answerUuid, formUuid: otherForm, revision: 3 });
    const x = await explain(['answer', a.answerUuid], dbs.env());
    expect(x.code, x.stderr).toBe(0);
    expect(x.doc!['verdicts']).toEqual([
      {
        consumerAppKey: key,
        schId: '5',
        kind: 'WILL_BE_REVOKED',
        text: 'PENDING, but no grant: the next send marks it GRANT_REVOKED',
        command: null,
        execute: null,
      },
    ]);
    // the other form's grant is listed, as of its form
    expect(x.doc!['grants'].rows).toEqual([expect.objectContaining({ formUuid: otherForm, consumerAppKey: key })]);
  });

  test('a consumer past the first 200 grants of a busy form: its own grant is read for its verdict (it read "no grant": WILL_BE_REVOKED)', async ({
    dbs,
  }) => {
    const formUuid = randomUUID();
    const key = `zz-${uniqueConsumerKey('exa')}`;
    await dbs.admin.query(
      `INSERT INTO \`${dbs.fcName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`,
      [++appId, `code-${key}`, key],
    );
    await insertGrant(dbs.admin, dbs.fcName, { formUuid, schoolId: 5, consumerKey: key });
    // 201 other consumers of the form at school 5, listed before it (keys sort first)
    await dbs.admin.query(
      `INSERT INTO \`${dbs.fcName}\`.form_consumer_grant (form_uuid, consumer_school_id, consumer_app_key, grant_version, read_allowed, subscribe_allowed, push_allowed, revoked, create_time) VALUES ?`,
      [
        Array.from({ length: 201 }, (_, i) => [
          formUuid,
          5,
          `a${String(i).padStart(3, '0')}`,
          1,
          1,
          1,
          1,
          0,
          new Date(),
        ]),
      ],
    );
    const a = await answerWithRow(dbs, formUuid, key, "state = 'PENDING'");
    const r = await spawnCli(['--json', 'explain', 'answer', a.answerUuid], { env: dbs.env() });
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc['grants']).toMatchObject({ status: 'ok', truncated: true });
    expect(doc['grants'].rows).toHaveLength(200);
    expect(doc['grants'].rows.map((g: Doc) => g.consumerAppKey)).not.toContain(key);
    expect(doc['verdicts'].find((v: Doc) => v.consumerAppKey === key)).toEqual({
      consumerAppKey: key,
      schId: '5',
      kind: 'WAITING',
      text: 'waiting: due now (PENDING)',
      command: null,
      execute: null,
    });
  });
});
