/**
 * What a person copies from `explain`'s terminal view is what the command takes (review of issue
 * 34 §11/§12): a value holding a character the view shows escaped (U+0085 as the six characters
 * `\u0085`) or hides (a bidi override, a zero-width space) goes into no printed command — copied
 * from the screen, the line would name another value: here another DEAD command, requeued. Real
 * rows, the printed lines run by bash with the real `bin/fcctl` (`npm run build` first).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect } from 'vitest';
import { BIZ_TYPE, insertCommands } from '../helpers/apply-commands.js';
import { FCCTL_BIN, runCli, spawnCli } from '../helpers/cli.js';
import { insertGrant, PUBLISHER, uniqueConsumerKey } from '../helpers/deliveries.js';
import { insertFcAnswer, insertProjection } from '../helpers/projection.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'explains', init: 'all' });
type Doc = Record<string, any>;
type Dbs = { admin: any; fcName: string; shName: string };

/** Characters a terminal must not get raw: C1, bidi controls, zero-width and other invisible ones. */
const UNSEEN = /[\u0080-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;

let appId = 9100;
async function consumer(dbs: Dbs, formUuid: string, key = uniqueConsumerKey('exs')) {
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`,
    [++appId, `code-${appId}`, key],
  );
  await insertGrant(dbs.admin, dbs.fcName, { formUuid, schoolId: 5, consumerKey: key });
  return key;
}

/** An FC answer at revision 4 with one outbox row for `key` at school 5, then `set` on the row. */
async function answerWithRow(dbs: Dbs, key: string, formUuid: string, set: string) {
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
const BUDGET_SPENT = "retry_count = 6, last_error = 'LOOKUP_TIMEOUT: no answer in 5000 ms'";

/** The commands a terminal view prints (`  $ …` lines). */
const printedLines = (screen: string) =>
  screen
    .split('\n')
    .filter((l) => l.startsWith('  $ '))
    .map((l) => l.slice(4));

/** A line as pasted at a prompt in `cwd`, `fcctl` being the real one, `extra` typed after it. */
function pasted(line: string, extra: string, env: Record<string, string | undefined>, cwd: string) {
  const script = `fcctl() { '${process.execPath}' '${FCCTL_BIN}' "$@"; }\n${line} ${extra}`;
  return execFileSync('bash', ['-c', script], { encoding: 'utf8', env: env as NodeJS.ProcessEnv, cwd });
}

const stateOf = async (dbs: Dbs, bizId: string) =>
  (
    (await dbs.admin.query(`SELECT state FROM \`${dbs.shName}\`.flow_apply_command WHERE biz_id = ?`, [bizId])) as any
  )[0][0].state;

describe('explain: a printed command is what the screen shows', () => {
  test('a DEAD apply command whose biz id holds U+0085: no requeue printed (copied from the screen, it requeued the command whose biz id is the six characters `\\u0085`)', async ({
    dbs,
    tmp,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const key = await consumer(dbs, formUuid);
    const a = await answerWithRow(dbs, key, formUuid, APPLIED_2H);
    const tag = randomBytes(3).toString('hex');
    const bizId = `X\u0085${tag}`;
    // the twin: a DEAD command whose biz id is what the terminal view shows of the first one's
    const twin = `X\\u0085${tag}`;
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId, state: 'DEAD' },
      { bizId: twin, state: 'DEAD' },
    ]);
    await dbs.admin.query(`UPDATE \`${dbs.shName}\`.flow_apply_command SET ${BUDGET_SPENT} WHERE biz_id IN (?, ?)`, [
      bizId,
      twin,
    ]);
    const [[sa]] = (await dbs.admin.query(
      `SELECT id FROM \`${dbs.shName}\`.service_apply WHERE biz_type = ? AND biz_id = ?`,
      [BIZ_TYPE, bizId],
    )) as any;
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

    // on a terminal: every printed line, pasted and run with --execute, leaves the twin DEAD
    const tty = await runCli(['explain', 'answer', a.answerUuid], { env, tty: true });
    expect(tty.code, tty.stderr).toBe(0);
    for (const line of printedLines(tty.stdout)) pasted(line, '--execute', env, tmp);
    expect(await stateOf(dbs, twin), printedLines(tty.stdout).join('\n')).toBe('DEAD');
    expect(tty.stdout).not.toMatch(UNSEEN);
    expect(printedLines(tty.stdout)).toEqual([]);

    const x = await spawnCli(['--json', 'explain', 'answer', a.answerUuid], { env });
    const [v] = (JSON.parse(x.stdout) as Doc)['verdicts'];
    expect(v.kind).toBe('APPLY_DEAD');
    expect(v.command).toBeNull();
    expect(v.text).toContain(
      `${JSON.stringify(bizId)} holds characters a terminal cannot show as they are: no command is printed with it`,
    );
    expect(await stateOf(dbs, bizId)).toBe('DEAD');
  });

  test('a DEAD outbox row of a consumer key holding a bidi override (U+202E) and a zero-width space: the key shown escaped, no replay printed', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const key = await consumer(dbs, formUuid, `k\u202e${randomBytes(3).toString('hex')}\u200bx`);
    const a = await answerWithRow(
      dbs,
      key,
      formUuid,
      "state = 'DEAD', retry_count = 8, last_error = 'NACK: \u202edone'",
    );
    const tty = await runCli(['explain', 'answer', a.answerUuid], { env, tty: true });
    expect(tty.code, tty.stderr).toBe(0);
    expect(tty.stdout).not.toMatch(UNSEEN);
    expect(tty.stdout).toContain('NACK: \\u202edone');
    expect(printedLines(tty.stdout)).toEqual([]);
    const x = await spawnCli(['--json', 'explain', 'answer', a.answerUuid], { env });
    const [v] = (JSON.parse(x.stdout) as Doc)['verdicts'];
    expect(v).toMatchObject({ consumerAppKey: key, kind: 'DEAD', command: null, execute: null });
    expect(v.text).toContain('holds characters a terminal cannot show as they are: no command is printed with it');
  });

  test('a DEAD outbox row of a consumer key `=node`: the replay prints it quoted — bare, zsh (macOS) pastes it as the path of node, another consumer', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const key = await consumer(dbs, formUuid, '=node');
    const a = await answerWithRow(dbs, key, formUuid, "state = 'DEAD', retry_count = 8, last_error = 'NACK'");
    const x = await spawnCli(['--json', 'explain', 'answer', a.answerUuid], { env });
    const [v] = (JSON.parse(x.stdout) as Doc)['verdicts'];
    expect(v.command).toContain(" --consumer '=node' --school 5 ");
    // bash (and zsh, where a bare =node would be /usr/bin/node) read it back as the key
    const argv = execFileSync('bash', ['-c', `fcctl() { printf '%s\\0' "$@"; }\n${v.command}`], { encoding: 'utf8' });
    expect(argv.split('\0')[3]).toBe('=node');
  });
});
