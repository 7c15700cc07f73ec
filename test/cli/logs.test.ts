/**
 * Issue 19 §4, logs an operator can read the next morning: every JSON line begins with `ts` (ISO
 * 8601 with the local offset, from the injected clock), the summary names its `runId` and `host`,
 * a `progress` line on stderr every `--progress-interval` seconds off a terminal (a slow run told
 * from a stuck one), and rows whose state did not change are counted, not printed one by one.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { countedOnly as retireCountedOnly } from '../../src/lib/retire-absent/retire/decide.js';
import { countedOnly as repairCountedOnly } from '../../src/lib/projection/repair-authoritative/decide.js';
import { loggedReport, type RowReport } from '../../src/lib/apply-command/resolve-unknown/decide.js';
import { Output, SummaryHold } from '../../src/lib/cli/output.js';
import { progressLine, type ProgressSnapshot } from '../../src/lib/cli/progress.js';
import { isoWithOffset, TS_PATTERN } from '../../src/lib/cli/timestamp.js';
import { UUID_PATTERN } from '../../src/lib/ids.js';
import {
  APP_FLOW,
  clearFlowCenter,
  commandsOf,
  type Env,
  flowEnv,
  insertCommands,
  linesOf,
  ownedInstance,
  summaryOf,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import { testIo } from '../helpers/io.js';
import { servicesTest } from '../helpers/services.js';
import { lockTable, startCli } from '../helpers/table-lock.js';

const test = servicesTest({ prefix: 'logs', init: 'sh', flowApps: APP_FLOW });
let dbs: TestDatabases, fc: FlowCenter, env: Env;
test.beforeAll(({ dbs: d, flowCenter }) => void ([dbs, fc, env] = [d, flowCenter, flowEnv(d, flowCenter)]));

const FIXED = new Date('2026-12-01T02:05:00.123Z');
/** Removes a prefix's commands, so a later run of the file's other tests claims only its own. */
const dropCommands = async (p: string) => {
  for (const table of ['flow_apply_command', 'service_apply'])
    await dbs.admin.query(`DELETE FROM \`${dbs.shName}\`.${table} WHERE biz_id LIKE ?`, [`${p}%`]);
};

describe('isoWithOffset: the ts of a line', () => {
  it.each([
    ['east of UTC', 480, '2026-12-01T10:05:00.123+08:00'],
    ['UTC is +00:00, never Z', 0, '2026-12-01T02:05:00.123+00:00'],
    ['west of UTC, the day before', -300, '2026-11-30T21:05:00.123-05:00'],
    ['a quarter-hour offset', 345, '2026-12-01T07:50:00.123+05:45'],
    ['a half-hour offset west', -570, '2026-11-30T16:35:00.123-09:30'],
    ['across a year end', 14 * 60, '2026-12-01T16:05:00.123+14:00'],
  ])('%s', (_, offset, want) => {
    expect(isoWithOffset(FIXED, offset)).toBe(want);
    expect(want).toMatch(TS_PATTERN);
  });

  it('by default the local offset at that instant, milliseconds always written', () => {
    const d = new Date(2026, 0, 2, 3, 4, 5, 6);
    expect(isoWithOffset(d)).toBe(isoWithOffset(d, -d.getTimezoneOffset()));
    expect(isoWithOffset(d)).toMatch(/^2026-01-02T03:04:05\.006[+-]\d\d:\d\d$/);
    expect(new Date(isoWithOffset(FIXED)).getTime()).toBe(FIXED.getTime());
  });
});

describe('progressLine: what a progress line says', () => {
  const snap = (over: Partial<ProgressSnapshot>): ProgressSnapshot => ({
    label: 'x',
    done: 0,
    total: undefined,
    failures: {},
    elapsedSeconds: 0,
    ratePerSecond: 0,
    etaSeconds: undefined,
    idleSeconds: 0,
    ...over,
  });
  it.each<[string, Partial<ProgressSnapshot>, number, Record<string, unknown>]>([
    [
      'a total known: total and ETA',
      { done: 50, total: 100, elapsedSeconds: 10, ratePerSecond: 5, etaSeconds: 10, idleSeconds: 0.04 },
      20,
      { done: 50, total: 100, intervalDone: 30, ratePerSecond: 5, etaSeconds: 10, elapsedSeconds: 10, idleSeconds: 0 },
    ],
    [
      'no total: neither total nor ETA',
      { done: 7, elapsedSeconds: 3.333, ratePerSecond: 2.10001 },
      7,
      { done: 7, intervalDone: 0, ratePerSecond: 2.1, elapsedSeconds: 3.3 },
    ],
    [
      'stuck: nothing since the previous line, idle growing',
      { done: 12, total: 40, elapsedSeconds: 95, ratePerSecond: 12 / 95, etaSeconds: 221.6, idleSeconds: 61.26 },
      12,
      { intervalDone: 0, ratePerSecond: 0.13, etaSeconds: 222, idleSeconds: 61.3 },
    ],
    [
      'failures by reason',
      { done: 3, failures: { GRANT_REVOKED: 2 } },
      0,
      { intervalDone: 3, failures: { GRANT_REVOKED: 2 } },
    ],
  ])('%s', (_, over, previous, want) => {
    const line = progressLine(snap(over), previous);
    expect(line).toMatchObject({ label: 'x', ...want });
    if (over.total === undefined) expect(Object.keys(line)).not.toEqual(expect.arrayContaining(['total']));
    if (over.etaSeconds === undefined) expect(line).not.toHaveProperty('etaSeconds');
    expect(Object.keys(line)[0]).toBe('label');
  });
});

describe('counted, not logged: the pure rules', () => {
  it.each<[RowReport, boolean]>([
    [{ kind: 'released', reason: 'STOPPED' }, false],
    [{ kind: 'released', reason: 'CREDENTIALS_REFUSED' }, false],
    [{ kind: 'done', via: 'lookup', status: 30, branch: null, roundBehind: false, mirror: 'written' }, false],
    [{ kind: 'done', via: 'lookup', status: 30, branch: null, roundBehind: true }, true],
    [{ kind: 'done', via: 'lookup', status: 30, branch: null, roundBehind: false, mirror: 'changed' }, true],
    [{ kind: 'done', via: 'apply', status: 10, branch: 'CREATED', roundBehind: false }, true],
    [{ kind: 'failed', reason: 'LOOKUP_TIMEOUT', dead: false }, true],
    [{ kind: 'dead', reason: 'OWNERSHIP_MISMATCH', branch: null }, true],
    [{ kind: 'stale', would: 'done' }, true],
    [{ kind: 'would-post' }, true],
  ])('resolve-unknown %o printed: %s', (report, printed) => {
    expect(loggedReport(report)).toBe(printed);
  });

  it.each([
    [{ code: 'ALREADY_CURRENT', rereads: 0 }, true],
    [{ code: 'ALREADY_CURRENT', rereads: 1 }, false],
    [{ code: 'LOCAL_ROW_MATCHES', rereads: 0 }, false],
  ] as const)('repair %o counted only: %s', (r, counted) => {
    expect(repairCountedOnly(r as never)).toBe(counted);
  });

  it.each([
    ['ALREADY_RETIRED', true],
    ['RETIRED', false],
    ['WOULD_RETIRE', false],
    ['REFUSED', false],
  ] as const)('retire %s counted only: %s', (result, counted) => {
    expect(retireCountedOnly({ result })).toBe(counted);
  });
});

describe('Output: ts first on every JSON line, runId and host on the summary', () => {
  it("events, rows and the summary carry the injected clock's time, first", () => {
    const t = testIo();
    const hold = new SummaryHold();
    const out = new Output(t.io, { now: () => FIXED, hold, runId: 'run-1' });
    out.event('row', { id: '7', ts: 'not ours' });
    out.rows([{ a: 1 }], [{ key: 'a' }], 'json');
    out.summary({ command: 'x', exitCode: 0, n: 2 });
    hold.release(1);
    const ts = isoWithOffset(FIXED);
    const lines = t.stdout().trim().split('\n');
    expect(lines.map((l) => l.slice(0, 8 + ts.length))).toEqual(lines.map(() => `{"ts":"${ts}"`));
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { ts, type: 'row', id: '7' },
      { ts, type: 'row', a: 1 },
      { ts, type: 'summary', command: 'x', exitCode: 1, n: 2, runId: 'run-1', host: hostname() },
    ]);
    expect(t.stderr()).toBe('');
  });

  it("a command's own runId is kept; a new UUID when none is given; asJson keeps clock and run id", () => {
    const t = testIo();
    const out = new Output(t.io, { now: () => FIXED, host: 'h1' });
    out.summary({ command: 'projection repair-authoritative', exitCode: 0, runId: 'evidence-run', seconds: 1 });
    out.asJson().summary({ command: 'y', exitCode: 0 });
    const [own, other] = jsonLines(t.stdout());
    expect(Object.keys(own!)).toEqual(['ts', 'type', 'command', 'exitCode', 'runId', 'seconds', 'host']);
    expect(own).toMatchObject({ runId: 'evidence-run', host: 'h1' });
    expect(other!['runId']).toBe(out.runId);
    // reconcile run stopped before it recorded a run: its own runId, null, stands
    const early = testIo();
    new Output(early.io, { runId: 'process-run' }).summary({ command: 'reconcile run', runId: null, exitCode: 1 });
    expect(JSON.parse(early.stdout())).toMatchObject({ runId: null, host: hostname() });
    expect(out.runId).toMatch(UUID_PATTERN);
    const tty = testIo({ tty: true });
    const onTerminal = new Output(tty.io, { now: () => FIXED, runId: 'r' });
    onTerminal.asJson().event('x');
    expect(JSON.parse(tty.stdout())).toEqual({ ts: isoWithOffset(FIXED), type: 'x' });
  });

  it('off a terminal, progress lines on stderr every interval until stop(); close() stops the rest; none without an interval', async () => {
    const t = testIo();
    let clock = FIXED.getTime();
    const out = new Output(t.io, { now: () => new Date(clock), progressIntervalMs: 40 });
    const a = out.progress('batch a', 10);
    out.progress('batch b');
    for (let i = 0; i < 4; i++) a.record(i === 0 ? 'GRANT_REVOKED' : undefined);
    clock += 2000;
    await new Promise((r) => setTimeout(r, 110));
    a.stop();
    a.stop();
    const seen = jsonLines(t.stderr());
    const ofA = seen.filter((l) => l['label'] === 'batch a');
    expect(ofA.length).toBeGreaterThanOrEqual(2);
    expect(ofA[0]).toEqual({
      ts: isoWithOffset(new Date(clock)),
      type: 'progress',
      label: 'batch a',
      done: 4,
      total: 10,
      intervalDone: 4,
      ratePerSecond: 2,
      etaSeconds: 3,
      elapsedSeconds: 2,
      idleSeconds: 2,
      failures: { GRANT_REVOKED: 1 },
    });
    expect(ofA[1]).toMatchObject({ done: 4, intervalDone: 0 });
    expect(seen.filter((l) => l['label'] === 'batch b').length).toBeGreaterThanOrEqual(2);
    out.close();
    const count = t.stderr().length;
    await new Promise((r) => setTimeout(r, 100));
    expect(t.stderr().length).toBe(count);
    expect(t.stdout()).toBe('');

    const quiet = testIo();
    new Output(quiet.io, { progressIntervalMs: 0 }).progress('x').record();
    await new Promise((r) => setTimeout(r, 60));
    expect(quiet.stderr()).toBe('');
  });

  it('the interval timer never keeps a process alive (a progress never stopped)', async () => {
    const script = `
      const { Output } = await import(${JSON.stringify(new URL('../../dist/lib/cli/output.js', import.meta.url).href)});
      const out = new Output({ stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, interactive: false }, { progressIntervalMs: 30 });
      out.progress('never stopped').record();
      setTimeout(() => {}, 200);
    `;
    const started = Date.now();
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.on('close', (code) => (clearTimeout(kill), resolve({ code, stderr })));
    });
    expect(r.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(jsonLines(r.stderr).length).toBeGreaterThanOrEqual(2);
    expect(jsonLines(r.stderr).every((l) => l['type'] === 'progress' && l['label'] === 'never stopped')).toBe(true);
  });
});

describe('--progress-interval: refused values (exit 2, one line, nothing claimed)', () => {
  test.each(['abc', '-1', '0.05', '1e3', '86401', '', '30s'])('%j', async (bad) => {
    const p = uniquePrefix('pi');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-0` }]);
    await clearFlowCenter(fc);
    const r = await runCli(['--json', '--progress-interval', bad, 'apply-command', 'resolve-unknown'], { env });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^fcctl: option '--progress-interval <s>' argument '.*' is invalid\. expected 0 \(no progress lines\) or seconds from 0\.1 to 86400\n$/,
    );
    expect((await commandsOf(dbs.admin, dbs.shName, p)).map((c) => [c.state, c.claim_owner])).toEqual([
      ['UNKNOWN', null],
    ]);
    expect(await fc.log()).toEqual([]);
    await dropCommands(p);
  });

  test.each([
    ['0', 0],
    ['0.0', 0],
    ['0.1', 0.1],
    ['30', 30],
    ['86400', 86400],
  ])('%s is taken', async (value) => {
    const r = await runCli(['--json', '--progress-interval', value, 'config', 'show'], { env });
    expect(r.code).toBe(0);
  });
});

describe('a real run off a terminal (bin/fcctl, real MariaDB and flow-center stand-in)', () => {
  test('held at a table lock, then slow: stuck lines (intervalDone 0, idle growing) then moving ones; every line ts first with the local offset; the summary names run and host', async () => {
    const p = uniquePrefix('slow');
    const n = 8;
    await clearFlowCenter(fc);
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: n }, (_, i) => ({ bizId: `${p}-${i}` })),
    );
    await fc.addInstances(Array.from({ length: n }, (_, i) => ownedInstance(`${p}-${i}`, 30)));
    await fc.faults([{ path: '*', kind: 'latency', ms: 250 }]);
    const lock = await lockTable(dbs.shName, 'flow_apply_command');
    let run: ReturnType<typeof startCli>;
    try {
      run = startCli(
        [
          '--json',
          '--progress-interval',
          '0.3',
          'apply-command',
          'resolve-unknown',
          '--concurrency',
          '1',
          '--request-timeout',
          '5',
          '--lease-seconds',
          '60',
        ],
        { env: { ...env, TZ: 'Asia/Kolkata' } },
      );
      await lock.waitForBlocked();
      await new Promise((r) => setTimeout(r, 1200));
    } finally {
      await lock.unlock();
    }
    const r = await run.done;
    expect(r.code).toBe(0);
    const progress = jsonLines(r.stderr);
    expect(progress.every((l) => l['type'] === 'progress' && l['label'] === 'apply-command resolve-unknown')).toBe(
      true,
    );
    const stuck = progress.filter((l) => l['done'] === 0);
    expect(stuck.length).toBeGreaterThanOrEqual(3);
    const idle = stuck.map((l) => l['idleSeconds'] as number);
    expect(idle).toEqual([...idle].sort((a, b) => a - b));
    expect(idle.at(-1)!).toBeGreaterThan(idle[0]!);
    expect(stuck.every((l) => l['intervalDone'] === 0 && !('total' in l) && !('etaSeconds' in l))).toBe(true);
    const moving = progress.filter((l) => (l['intervalDone'] as number) > 0);
    expect(moving.length).toBeGreaterThanOrEqual(1);
    expect(moving[0]!['ratePerSecond'] as number).toBeGreaterThan(0);
    const dones = progress.map((l) => l['done'] as number);
    expect(dones).toEqual([...dones].sort((a, b) => a - b));

    const out = r.stdout.trim().split('\n');
    for (const line of [...out, ...r.stderr.trim().split('\n')]) {
      const ts = /^\{"ts":"([^"]+)",/.exec(line)?.[1];
      expect(ts, line).toMatch(TS_PATTERN);
      expect(ts!.endsWith('+05:30'), line).toBe(true);
    }
    const summary = summaryOf(r.stdout);
    expect(summary).toMatchObject({
      command: 'apply-command resolve-unknown',
      exitCode: 0,
      claimed: n,
      done: n,
      doneViaLookup: n,
      host: hostname(),
    });
    expect(summary['runId']).toMatch(UUID_PATTERN);
    expect(Object.keys(summary).slice(-2)).toEqual(['runId', 'host']);
    // found DONE by the lookup with nothing to flag: counted, no row line each
    expect(linesOf(r.stdout, 'row')).toEqual([]);
    // two runs, two run ids
    const again = await runCli(['--json', 'apply-command', 'resolve-unknown'], { env });
    expect(summaryOf(again.stdout)['runId']).not.toBe(summary['runId']);
  });

  test('--progress-interval 0: the same slow run prints no progress line', async () => {
    const p = uniquePrefix('quiet');
    await clearFlowCenter(fc);
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 3 }, (_, i) => ({ bizId: `${p}-${i}` })),
    );
    await fc.addInstances(Array.from({ length: 3 }, (_, i) => ownedInstance(`${p}-${i}`, 30)));
    await fc.faults([{ path: '*', kind: 'latency', ms: 300 }]);
    const r = await startCli(
      ['--json', '--progress-interval', '0', 'apply-command', 'resolve-unknown', '--concurrency', '1'],
      { env },
    ).done;
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(summaryOf(r.stdout)).toMatchObject({ done: 3 });
  });

  test('released rows (claim given back, state unchanged) are counted by reason, not printed', async () => {
    const p = uniquePrefix('rel');
    await clearFlowCenter(fc);
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 12 }, (_, i) => ({ bizId: `${p}-${i}` })),
    );
    const r = await runCli(['--json', 'apply-command', 'resolve-unknown', '--concurrency', '4', '--batch-size', '6'], {
      env: { ...env, FCCTL_APP_SECRET: 'wrong-secret-logs' },
    });
    expect(r.code).toBe(3);
    const s = summaryOf(r.stdout);
    expect(Number(s['released'])).toBeGreaterThan(0);
    expect(s['releasedByReason']).toEqual({ CREDENTIALS_REFUSED: s['released'] });
    expect(linesOf(r.stdout, 'row').filter((l) => l['kind'] === 'released')).toEqual([]);
    expect(
      (await commandsOf(dbs.admin, dbs.shName, p)).every((c) => c.state === 'UNKNOWN' && c.claim_owner === null),
    ).toBe(true);
    await dropCommands(p);
  });
});
