/**
 * `fcctl explain`'s advice, pasted (issue 36 §11–13): from real rows, each printed line is run by
 * bash exactly as printed with the real `bin/fcctl` (`npm run build` first) — the dry run changes
 * nothing, the write that follows fixes what the verdict named. A DEAD SNAPSHOT_HASH_MISMATCH row
 * gets no replay (a replay resends the same stored snapshot and fails again) but the repair from FC;
 * an INVALID_ROUTING_KEY row is not "waiting"; SH at FC's revision with another hash is said at once.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { FCCTL_BIN, runCli } from '../helpers/cli.js';
import { insertGrant, PUBLISHER, uniqueConsumerKey } from '../helpers/deliveries.js';
import { hashOf, insertFcAnswer, insertProjection } from '../helpers/projection.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'explainadv', init: 'all' });
type Doc = Record<string, any>;
type Dbs = { admin: any; fcName: string; shName: string };

let appId = 9600;
/** A registered consumer granted the form at school 5, an FC answer at revision 4 and its outbox row, then `set`. */
async function arrange(
  dbs: Dbs,
  set: (a: { snapshotJson: string }) => [string, unknown[]],
  key = uniqueConsumerKey('exa'),
) {
  const formUuid = randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`,
    [++appId, `code-${appId}`, key],
  );
  await insertGrant(dbs.admin, dbs.fcName, { formUuid, schoolId: 5, consumerKey: key });
  const a = await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 });
  const eventId = randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, create_time) VALUES (?, 'created', ?, ?, 5, 1, ?, 4, ?, 4, 0, ?, NOW(), ?, 'PENDING', 0, NOW())`,
    [eventId, PUBLISHER.appKey, key, formUuid, a.answerUuid, a.contentHash, a.snapshotJson],
  );
  const [sql, params] = set(a);
  await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.answer_delivery SET ${sql} WHERE event_id = ?`, [...params, eventId]);
  return { ...a, key, formUuid, eventId };
}

async function explainJson(answerUuid: string, env: Record<string, string | undefined>) {
  const r = await runCli(['--json', 'explain', 'answer', answerUuid], { env });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Doc;
}

/** A printed line as pasted at a prompt in `cwd`, `fcctl` being the real one: its exit code and output. */
function pasted(line: string, env: Record<string, string | undefined>, cwd: string) {
  const script = `fcctl() { '${process.execPath}' '${FCCTL_BIN}' "$@"; }\n${line}`;
  try {
    return {
      code: 0,
      stdout: execFileSync('bash', ['-c', script], { encoding: 'utf8', env: env as NodeJS.ProcessEnv, cwd }),
    };
  } catch (e) {
    const err = e as { status: number; stdout: string };
    return { code: err.status, stdout: err.stdout };
  }
}

/** The terminal view's printed lines after a verdict's "dry run, then the write:" (the `  $ …` lines). */
function printedPair(screen: string): string[] {
  const lines = screen.split('\n');
  const at = lines.indexOf('  dry run, then the write:');
  expect(at, screen).toBeGreaterThanOrEqual(0);
  return lines.slice(at + 1, at + 3).map((l) => {
    expect(l.startsWith('  $ fcctl '), screen).toBe(true);
    return l.slice(4);
  });
}

const shRow = async (dbs: Dbs, answerUuid: string) =>
  (
    (await dbs.admin.query(
      `SELECT answer_revision AS revision, content_hash AS hash, projection_version AS v FROM \`${dbs.shName}\`.fc_answer_projection WHERE answer_uuid = ?`,
      [answerUuid],
    )) as any
  )[0][0];

describe('fcctl explain: advice that works as printed', () => {
  test('DEAD SNAPSHOT_HASH_MISMATCH, FC hashing to the row’s hash: no replay; the repair from FC, its dry run changes nothing, its write brings SH to FC', async ({
    dbs,
    tmp,
  }) => {
    const env = dbs.env();
    // the stored snapshot was damaged after the row's content_hash was computed: it hashes to something else
    const a = await arrange(dbs, (x) => {
      const damaged = JSON.stringify({ ...JSON.parse(x.snapshotJson), code: 'damaged' });
      return [
        "snapshot_json = ?, state = 'DEAD', retry_count = 8, last_error = 'SNAPSHOT_HASH_MISMATCH: recomputed x'",
        [damaged],
      ];
    });
    const doc = await explainJson(a.answerUuid, env);
    expect(doc['fc'].answer).toMatchObject({ revision: '4', hashMatches: true });
    const [v] = doc['verdicts'];
    expect(v.kind).toBe('DEAD');
    expect(v.text).toContain('a replay resends the same row and fails again — the producer (FC team)');
    expect(v.command).not.toContain('deliveries replay');
    expect(v.command).toMatch(/^fcctl projection repair-authoritative .* --expect-missing --proof-id \S+$/);
    expect(v.execute).toBe(`${v.command} --execute`);
    // the terminal prints the same two lines, the dry run first; pasted as printed
    const tty = await runCli(['explain', 'answer', a.answerUuid], { env, tty: true });
    const [dry, write] = printedPair(tty.stdout);
    expect([dry, write]).toEqual([v.command, v.execute]);
    const d = pasted(dry!, env, tmp);
    expect(d.code, d.stdout).toBe(0);
    expect(d.stdout).toContain('"code":"WOULD_INSERT"');
    expect(await shRow(dbs, a.answerUuid)).toBeUndefined();
    const w = pasted(write!, env, tmp);
    expect(w.code, w.stdout).toBe(0);
    expect(w.stdout).toContain('"code":"INSERTED"');
    expect(await shRow(dbs, a.answerUuid)).toMatchObject({ revision: '4', hash: a.contentHash });
    const after = (await explainJson(a.answerUuid, env))['verdicts'][0];
    expect(after).toMatchObject({ kind: 'DEAD', command: null, execute: null });
    expect(after.text).toContain('SH already holds revision 4 as FC has it');
  }, 60_000);

  test('FAILED INVALID_ROUTING_KEY (school 0): not "waiting" — it can never be sent, the FC team acts, no command', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const a = await arrange(dbs, () => [
      "state = 'FAILED', retry_count = 1, next_retry_at = NOW() + INTERVAL 10 SECOND, last_error = 'INVALID_ROUTING_KEY: consumer school id \"0\" is not a positive integer'",
      [],
    ]);
    const [v] = (await explainJson(a.answerUuid, env))['verdicts'];
    expect(v.kind).toBe('CANNOT_SEND');
    expect(v.text).not.toMatch(/^waiting/);
    expect(v.text).toContain('it can never be sent');
    expect(v.text).toContain('the FC team must register the consumer');
    expect(v).toMatchObject({ command: null, execute: null });
  });

  test('SH at FC’s revision with another hash while the delivery is in flight (accepted 30 s ago): SH_DIFFERS at once; dry run, then the write repairs it', async ({
    dbs,
    tmp,
  }) => {
    const env = dbs.env();
    const a = await arrange(dbs, () => [
      "state = 'BROKER_ACCEPTED', broker_accepted_at = NOW() - INTERVAL 30 SECOND",
      [],
    ]);
    const other = hashOf('other');
    await insertProjection(dbs.admin, dbs.shName, {
      answerUuid: a.answerUuid,
      formUuid: a.formUuid,
      schId: 5,
      revision: 4,
      contentHash: other,
    });
    const [v] = (await explainJson(a.answerUuid, env))['verdicts'];
    expect(v.kind).toBe('SH_DIFFERS');
    expect(v.command).toContain(`--expected-revision 4 --expected-hash ${other} --expected-is-deleted 0`);
    expect(v.command).not.toContain('--execute');
    const before = await shRow(dbs, a.answerUuid);
    const d = pasted(v.command, env, tmp);
    expect(d.code, d.stdout).toBe(0);
    expect(d.stdout).toContain('"code":"WOULD_REPAIR_HASH_CONFLICT"');
    expect(await shRow(dbs, a.answerUuid)).toEqual(before);
    const w = pasted(v.execute, env, tmp);
    expect(w.code, w.stdout).toBe(0);
    expect(w.stdout).toContain('"code":"HASH_CONFLICT_REPAIRED"');
    expect(await shRow(dbs, a.answerUuid)).toMatchObject({ revision: '4', hash: a.contentHash });
  });

  test('accepted, REJECTED by the consumer (a poison payload): no replay, which resends the same row to the same refusal; the producer acts', async ({
    dbs,
  }) => {
    const env = { ...dbs.env(), FCCTL_SH_DATABASE_URL: undefined };
    const a = await arrange(dbs, () => [
      "state = 'BROKER_ACCEPTED', broker_accepted_at = NOW() - INTERVAL 2 HOUR, consumer_applied_at = NOW() - INTERVAL 2 HOUR, consumer_outcome = 'REJECTED'",
      [],
    ]);
    const [v] = (await explainJson(a.answerUuid, env))['verdicts'];
    expect(v.kind).toBe('CONSUMER_REFUSED');
    expect(v).toMatchObject({ command: null, execute: null });
    expect(v.text).toContain('a replay resends the same row — the producer (FC team) must find why');
  });
});
