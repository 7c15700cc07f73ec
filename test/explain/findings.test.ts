/**
 * `fcctl explain` against the real services, the review's findings: an SH projection compared with
 * several consumers of its school (and a repair the grant would refuse), a GRANT_REVOKED row whose
 * grant is valid again, an answer uuid pasted in upper case or in braces — each suggested command run
 * as printed.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { insertGrant, PUBLISHER, uniqueConsumerKey } from '../helpers/deliveries.js';
import { insertFcAnswer, insertProjection } from '../helpers/projection.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'explainf', init: 'all' });
type Doc = Record<string, any>;
type Dbs = { admin: any; fcName: string; shName: string };

let appId = 3000;
/** A registered, granted consumer of the form at school 5. */
async function consumer(
  dbs: Dbs,
  formUuid: string,
  grant: { grantVersion?: number; revoked?: number; schoolId?: number } = {},
) {
  const key = uniqueConsumerKey('exf');
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`,
    [++appId, `code-${key}`, key],
  );
  await insertGrant(dbs.admin, dbs.fcName, { formUuid, schoolId: 5, consumerKey: key, ...grant });
  return key;
}

/** An outbox row of the answer's revision 4 for a consumer at school 5, in the given state. */
async function outboxRow(
  dbs: Dbs,
  a: { answerUuid: string; formUuid: string; contentHash: string; snapshotJson: string },
  key: string,
  set: string,
) {
  const eventId = randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, create_time) VALUES (?, 'created', ?, ?, 5, 1, ?, 4, ?, 4, 0, ?, NOW(), ?, 'PENDING', 0, NOW())`,
    [eventId, PUBLISHER.appKey, key, a.formUuid, a.answerUuid, a.contentHash, a.snapshotJson],
  );
  await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.answer_delivery SET ${set} WHERE event_id = ?`, [eventId]);
  return eventId;
}

const APPLIED_2H =
  "state = 'BROKER_ACCEPTED', broker_accepted_at = NOW() - INTERVAL 2 HOUR, consumer_applied_at = NOW() - INTERVAL 2 HOUR, consumer_outcome = 'APPLIED'";

async function explain(argv: string[], env: Record<string, string | undefined>) {
  const r = await runCli(['--json', 'explain', ...argv], { env });
  return { ...r, doc: r.stdout.trim() === '' ? null : (JSON.parse(r.stdout) as Doc) };
}
const asArgv = (command: string) => {
  expect(command).not.toMatch(/['"\\]/);
  return command.split(' ').slice(1);
};

/** Runs a printed command as pasted at a prompt in `dir` (its evidence file goes there), dry run or as printed. */
async function runAsPrinted(command: string, env: Record<string, string | undefined>, dir: string, execute: boolean) {
  const argv = asArgv(command).filter((w) => execute || w !== '--execute');
  const cwd = process.cwd();
  process.chdir(dir);
  return runCli(argv, { env }).finally(() => process.chdir(cwd));
}

describe('fcctl explain: the review findings, from real rows', () => {
  test('SH stale, two consumers at the school, no --consumer: one repair per consumer, each saying only SH’s own is to run; with --consumer the one that works', async ({
    dbs,
    tmp,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const a = { ...(await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 })), formUuid };
    const k1 = await consumer(dbs, formUuid);
    const k2 = await consumer(dbs, formUuid);
    const k3 = await consumer(dbs, formUuid, { revoked: 1 });
    await outboxRow(dbs, a, k1, APPLIED_2H);
    await outboxRow(dbs, a, k2, APPLIED_2H);
    // k3 got it before its grant was revoked: a repair under k3's grant is DEFERRED (GRANT_REVOKED)
    await outboxRow(dbs, a, k3, APPLIED_2H);
    await insertProjection(dbs.admin, dbs.shName, { answerUuid: a.answerUuid, formUuid, schId: 5, revision: 3 });
    const x = await explain(['answer', a.answerUuid], env);
    const keys = [k1, k2, k3].sort();
    const byKey = Object.fromEntries(x.doc!['verdicts'].map((v: Doc) => [v.consumerAppKey, v]));
    expect(Object.keys(byKey).sort()).toEqual(keys);
    for (const k of [k1, k2]) {
      const v = byKey[k];
      expect(v.kind).toBe('SH_STALE');
      expect(v.text).toBe(
        `SH stale (revision 3, FC 4) — if SH is ${k}'s: SH serves one consumer, and 3 at school 5 are compared with it (${keys.join(', ')}); run only the repair under SH's own consumer key (or explain again with --consumer)`,
      );
      expect(v.command).toContain(`--consumer ${k} `);
      // each works as printed, dry run
      const r = await runAsPrinted(v.command, env, tmp, false);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('"code":"WOULD_REPAIR_STALE"');
    }
    expect(byKey[k3]).toMatchObject({
      kind: 'SH_STALE',
      text: `SH stale (revision 3, FC 4); a repair under ${k3} would be DEFERRED: grant revoked (version 1)`,
      command: null,
      execute: null,
    });
    // SH's consumer named: one verdict, no alternatives, and its repair works as printed
    const one = await explain(['answer', a.answerUuid, '--consumer', k2], env);
    expect(one.doc!['verdicts']).toEqual([
      expect.objectContaining({ consumerAppKey: k2, kind: 'SH_STALE', text: 'SH stale (revision 3, FC 4)' }),
    ]);
    const repair = one.doc!['verdicts'][0].execute;
    expect(repair).toBe(byKey[k2].execute);
    const r = await runAsPrinted(repair, env, tmp, true);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"code":"STALE_REPAIRED"');
    const after = await explain(['answer', a.answerUuid, '--consumer', k2], env);
    expect(after.doc!['verdicts'][0]).toMatchObject({ kind: 'DELIVERED_APPLIED', command: null, execute: null });
  });

  test("SH stale at a consumer school other than the answer's: no repair, which would be DEFERRED (SCHOOL_MISMATCH)", async ({
    dbs,
    tmp,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const a = { ...(await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 })), formUuid };
    // a consumer of school 6 granted the form of an answer of school 5 (seed 000: the school is the caller's)
    const k = await consumer(dbs, formUuid, { schoolId: 6 });
    const eventId = await outboxRow(dbs, a, k, APPLIED_2H);
    await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.answer_delivery SET consumer_school_id = 6 WHERE event_id = ?`, [
      eventId,
    ]);
    await insertProjection(dbs.admin, dbs.shName, { answerUuid: a.answerUuid, formUuid, schId: 6, revision: 3 });
    const x = await explain(['answer', a.answerUuid], env);
    expect(x.doc!['verdicts']).toEqual([
      {
        consumerAppKey: k,
        schId: '6',
        kind: 'SH_STALE',
        text: `SH stale (revision 3, FC 4); a repair under ${k} would be DEFERRED: FC's answer belongs to school 5 (SCHOOL_MISMATCH)`,
        command: null,
        execute: null,
      },
    ]);
    // what that repair answers
    const repair = `fcctl projection repair-authoritative --consumer ${k} --school 6 --answer ${a.answerUuid} --expected-revision 3 --expected-hash ${x.doc!['sh'].projections[0].contentHash} --expected-is-deleted 0 --proof-id t`;
    const r = await runAsPrinted(repair, env, tmp, false);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('"code":"SCHOOL_MISMATCH"');
  });

  test('a GRANT_REVOKED row whose grant is valid again (newer version): not "revoked", and no replay, as replay answers', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const a = { ...(await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 })), formUuid };
    // revoked under version 1 (the row's), granted again at version 2
    const k = await consumer(dbs, formUuid, { grantVersion: 2 });
    await outboxRow(dbs, a, k, "state = 'GRANT_REVOKED', last_error = 'GRANT_REVOKED'");
    const x = await explain(['answer', a.answerUuid], env);
    expect(x.doc!['verdicts']).toEqual([
      {
        consumerAppKey: k,
        schId: '5',
        kind: 'REGRANTED',
        text: 'GRANT_REVOKED (GRANT_REVOKED) at grant version 1; the grant is valid again at version 2: `deliveries replay` would answer GRANT_REVOKED (a revoked row is never replayed); revision 4 goes out only in a new outbox row the producer writes under version 2',
        command: null,
        execute: null,
      },
    ]);
    // as deliveries replay answers it
    const replay = ['deliveries', 'replay', '--consumer', k, '--school', '5', '--answer', a.answerUuid];
    const r = await runCli([...replay, '--expected-revision', '4', '--operation-id', `t:${k}`, '--execute'], { env });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('"code":"GRANT_REVOKED"');
    // still revoked: said so, at the version it is now
    await insertGrant(dbs.admin, dbs.fcName, { formUuid, schoolId: 5, consumerKey: k, grantVersion: 3, revoked: 1 });
    const y = await explain(['answer', a.answerUuid], env);
    expect(y.doc!['verdicts'][0]).toMatchObject({
      kind: 'GRANT_REVOKED',
      text: 'GRANT_REVOKED (GRANT_REVOKED) at grant version 1; now: grant revoked (version 3); `deliveries replay` would answer GRANT_REVOKED (a revoked row is never replayed)',
      command: null,
      execute: null,
    });
  });

  test('an answer uuid pasted in upper case, in braces or with spaces: explained; found nowhere: one line naming both forms', async ({
    dbs,
  }) => {
    const env = { ...dbs.env(), FCCTL_SH_DATABASE_URL: undefined };
    const formUuid = randomUUID();
    const a = await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 });
    const upper = a.answerUuid.toUpperCase();
    for (const pasted of [upper, `{${upper}}`, ` ${a.answerUuid} `, `{${a.answerUuid}}`]) {
      const r = await explain(['answer', pasted], env);
      expect(r.code, `${pasted}: ${r.stderr}`).toBe(0);
      expect(r.doc!['fc'].answer.answerUuid, pasted).toBe(a.answerUuid);
      expect(r.doc!['subject'], pasted).toEqual(
        pasted.includes(upper) ? { answerUuid: a.answerUuid, given: upper } : { answerUuid: a.answerUuid },
      );
    }
    const missing = randomUUID().toUpperCase();
    const none = await explain(['answer', missing], env);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('');
    expect(none.stderr).toBe(
      `fcctl: answer ${missing}: not found at FC, in the outbox or at SH (nor as ${missing.toLowerCase()}: uuids are matched exactly)\n`,
    );
    // still not a uuid inside the braces: exit 2, one line
    const bad = await runCli(['explain', 'answer', '{not-a-uuid}'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});
