/**
 * What `explain` and `status` show of values read from the databases, planted hostile in real rows
 * (issue 34 §11, §12): a printed command is run through `bash -c` exactly as printed, and creates
 * nothing; a value that is not what it claims goes into no command; escape sequences reach no
 * terminal, while `--json` keeps them whole. Run as real `bin/fcctl` processes (`npm run build`
 * first) and in tmux.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { afterEach, describe, expect } from 'vitest';
import { runCli, spawnCli } from '../helpers/cli.js';
import { insertGrant, PUBLISHER, uniqueConsumerKey } from '../helpers/deliveries.js';
import { insertFcAnswer, insertProjection } from '../helpers/projection.js';
import { servicesTest } from '../helpers/services.js';
import { TmuxSession } from '../helpers/tmux.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'explainh', init: 'all' });
type Doc = Record<string, any>;
type Dbs = { admin: any; fcName: string; shName: string };

/** Files a planted `$(touch …)` would create: a short unique name under /tmp (the columns are narrow). */
const planted: string[] = [];
const target = () => {
  const path = `/tmp/fx-${randomBytes(4).toString('hex')}`;
  planted.push(path);
  return path;
};
afterEach(() => {
  for (const p of planted.splice(0)) rmSync(p, { force: true });
});

/**
 * A printed line run by bash exactly as printed, `fcctl` a function that prints the words bash
 * made of it: the argv the real command would get, and nothing else runs but what the line holds.
 */
function argvOf(line: string): string[] {
  const out = execFileSync('bash', ['-c', `fcctl() { printf '%s\\0' "$@"; }\n${line}`], { encoding: 'utf8' });
  return out.split('\0').slice(0, -1);
}

/** The commands a terminal view prints (`  $ …` lines). */
const printedLines = (screen: string) =>
  screen
    .split('\n')
    .filter((l) => l.startsWith('  $ '))
    .map((l) => l.slice(4));

let appId = 5000;
async function consumer(dbs: Dbs, formUuid: string, key = uniqueConsumerKey('exh')) {
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`,
    [++appId, `code-${appId}`, key],
  );
  await insertGrant(dbs.admin, dbs.fcName, { formUuid, schoolId: 5, consumerKey: key });
  return key;
}

/** An outbox row of revision 4 of the answer, then `set` applied to it. */
async function outboxRow(
  dbs: Dbs,
  a: { answerUuid: string; formUuid: string; contentHash: string; snapshotJson: string },
  key: string,
  set: string,
  params: unknown[] = [],
) {
  const eventId = randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, create_time) VALUES (?, 'created', ?, ?, 5, 1, ?, 4, ?, 4, 0, ?, NOW(), ?, 'PENDING', 0, NOW())`,
    [eventId, PUBLISHER.appKey, key, a.formUuid, a.answerUuid, a.contentHash, a.snapshotJson],
  );
  await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.answer_delivery SET ${set} WHERE event_id = ?`, [...params, eventId]);
  return eventId;
}

const APPLIED_2H =
  "state = 'BROKER_ACCEPTED', broker_accepted_at = NOW() - INTERVAL 2 HOUR, consumer_applied_at = NOW() - INTERVAL 2 HOUR, consumer_outcome = 'APPLIED'";

async function explainProcess(argv: string[], env: Record<string, string | undefined>) {
  const r = await spawnCli(['--json', 'explain', ...argv], { env });
  return { ...r, doc: r.stdout.trim() === '' ? null : (JSON.parse(r.stdout) as Doc) };
}

describe('explain: commands printed for a shell run only what they say', () => {
  test('an SH content_hash `$(touch …)`: SH_DIFFERS shown with the hash as data, no repair printed; the printed lines create nothing', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const a = { ...(await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 })), formUuid };
    const k = await consumer(dbs, formUuid);
    await outboxRow(dbs, a, k, APPLIED_2H);
    const file = target();
    const hostile = `$(touch ${file})`;
    await insertProjection(dbs.admin, dbs.shName, {
      answerUuid: a.answerUuid,
      formUuid,
      revision: 4,
      contentHash: hostile,
      linked: false,
    });
    const x = await explainProcess(['answer', a.answerUuid], env);
    expect(x.code, x.stderr).toBe(0);
    const tty = await runCli(['explain', 'answer', a.answerUuid], { env, tty: true });
    // every line printed to run, run as printed: nothing is created
    const lines = [...x.doc!['verdicts'].map((w: Doc) => w.command).filter(Boolean), ...printedLines(tty.stdout)];
    for (const line of lines) argvOf(line);
    expect(existsSync(file), lines.join('\n')).toBe(false);
    expect(lines).toEqual([]);
    const [v] = x.doc!['verdicts'];
    expect(v.kind).toBe('SH_DIFFERS');
    expect(v.command).toBeNull();
    expect(v.text).toContain(
      `SH's content_hash ${JSON.stringify(hostile)} is not 64 lowercase hex digits: no command is printed with it`,
    );
    expect(existsSync(file)).toBe(false);
  });

  test('an outbox answer_uuid `$(touch …)` of a DEAD row: `explain event` prints no replay, the uuid as data; a valid consumer key full of shell says what it is, quoted, and parses back to it', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const file = target();
    const hostileUuid = `$(touch ${file})`;
    const h = {
      ...(await insertFcAnswer(dbs.admin, dbs.fcName, { answerUuid: hostileUuid, formUuid, schId: 5, revision: 4 })),
      formUuid,
    };
    const k = await consumer(dbs, formUuid);
    const dead = "state = 'DEAD', retry_count = 8, last_error = 'NACK'";
    const eventId = await outboxRow(dbs, h, k, dead);
    const e = await explainProcess(['event', eventId], env);
    expect(e.code, e.stderr).toBe(0);
    const printed = e.doc!['verdicts'][0].command;
    if (printed !== null) argvOf(printed);
    expect(existsSync(file), printed).toBe(false);
    expect(e.doc!['verdicts'][0]).toEqual({
      consumerAppKey: k,
      schId: '5',
      kind: 'DEAD',
      text: `DEAD (NACK ×8): a replay sends it once the broker accepts messages again (a nack: a full queue, a disk or memory alarm); the answer uuid ${JSON.stringify(hostileUuid)} is not a UUID: no command is printed with it`,
      command: null,
      execute: null,
    });
    expect(existsSync(file)).toBe(false);

    // a key fcctl takes (no space, no . * #) that a shell would run unquoted: printed quoted, and as itself
    const keyFile = target();
    const shellKey = `k'$(touch\${IFS}${keyFile})'\`touch\${IFS}${keyFile}\`;x`;
    const b = { ...(await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 })), formUuid };
    const key = await consumer(dbs, formUuid, shellKey);
    const deadEvent = await outboxRow(dbs, b, key, dead);
    const d = await explainProcess(['event', deadEvent], env);
    expect(d.code, d.stderr).toBe(0);
    const line = d.doc!['verdicts'][0].command as string;
    const argv = argvOf(line);
    expect(existsSync(keyFile)).toBe(false);
    expect(argv).toEqual([
      ...['deliveries', 'replay', '--consumer', shellKey, '--school', '5', '--answer', b.answerUuid],
      ...['--expected-revision', '4', '--operation-id', `explain:${deadEvent}:g0`],
    ]);
    expect(d.doc!['verdicts'][0].execute).toBe(`${line} --execute`);
    // the terminal prints the same line, and the words it makes are what fcctl takes (a dry run)
    const tty = await runCli(['explain', 'event', deadEvent], { env, tty: true });
    expect(printedLines(tty.stdout)).toContain(line);
    const dry = await runCli(
      argv.filter((w) => w !== '--execute'),
      { env },
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('"code":"QUEUED"');
    expect(dry.stdout).toContain('"dryRun":true');
    expect(existsSync(keyFile)).toBe(false);
  });
});

/** Escape sequences a value may carry: a window title (OSC … BEL), blinking (SGR 5), and a C1 CSI. */
const TITLE = 'PWNED-TITLE';
const ESCAPES = `\u001b]0;${TITLE}\u0007\u001b[5mblink\u009b2J`;
/** Raw controls a view must never send (ink's own SGR colours aside): BEL, OSC, blink, any C1. */
const RAW = /\u0007|\u001b\]|\u001b\[5m|[\u0080-\u009f]/;

describe('explain and status: text from the databases never drives the terminal', () => {
  test('a last_error (a DEAD reason too), a pause reason and its author holding escape sequences: escaped on a terminal and in tmux, whole in --json', async ({
    dbs,
  }) => {
    const env = dbs.env();
    const formUuid = randomUUID();
    const a = { ...(await insertFcAnswer(dbs.admin, dbs.fcName, { formUuid, schId: 5, revision: 4 })), formUuid };
    const k = await consumer(dbs, formUuid);
    const lastError = `${ESCAPES}NACK: ${ESCAPES}`;
    await outboxRow(dbs, a, k, "state = 'DEAD', retry_count = 8, last_error = ?", [lastError]);
    await dbs.admin.query(
      `INSERT INTO \`${dbs.fcName}\`.fcctl_pause (command, reason, paused_by, paused_at) VALUES ('deliveries send', ?, ?, UTC_TIMESTAMP())`,
      [`maintenance ${ESCAPES}`, `ops@${ESCAPES}`],
    );
    const shown = '\\u001b]0;PWNED-TITLE\\u0007\\u001b[5mblink\\u009b2J';

    const x = await runCli(['explain', 'answer', a.answerUuid], { env, tty: true });
    expect(x.code, x.stderr).toBe(0);
    expect(x.stdout).not.toMatch(RAW);
    expect(x.stdout).toContain(`DEAD (${shown}NACK ×8)`);
    const j = await runCli(['--json', 'explain', 'answer', a.answerUuid], { env });
    expect(j.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(JSON.parse(j.stdout).outbox.rows[0].lastError).toBe(lastError);

    const s = await runCli(['status'], { env, tty: true });
    expect(s.stdout).not.toMatch(RAW);
    expect(s.stdout).toContain(`maintenance ${shown}`);
    expect(s.stdout).toMatch(/DEAD reasons: .*\\u001b\]0;PWNED-TITLE\\u0007\\u001b\[5mblink\\u009b2JNACK ×1/);
    const sj = await runCli(['--json', 'status'], { env });
    expect(sj.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    const doc = JSON.parse(sj.stdout);
    expect(doc.pauses.fc.pauses[0].reason).toBe(`maintenance ${ESCAPES}`);

    // in a real terminal: the pane keeps its title
    for (const argv of [`explain answer ${a.answerUuid}`, 'status']) {
      const t = new TmuxSession(`node bin/fcctl ${argv}`, env);
      try {
        await waitFor(`${argv} to finish`, async () => t.screen().includes('[exit '), 20_000);
        const title = execFileSync('tmux', ['-L', t.name, 'display-message', '-p', '-t', t.name, '#{pane_title}'], {
          encoding: 'utf8',
        });
        expect(title, argv).not.toContain(TITLE);
        expect(t.screen(), argv).toContain('PWNED-TITLE');
      } finally {
        t.kill();
      }
    }
  }, 60_000);
});
