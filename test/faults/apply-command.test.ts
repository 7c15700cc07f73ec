import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DONE_BRANCHES } from '../../src/lib/apply-command/resolve-unknown/decide.js';
import {
  APP,
  BIZ_TYPE,
  type CommandSpec,
  commandsOf,
  defaults,
  insertCommands,
  makeDue,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import { FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import { freshDatabases, testMysqlUrl, type TestDatabases } from '../helpers/db.js';
import { pick, recordTotals, restartService } from '../helpers/faults.js';
import {
  type Fault,
  type FlowCenter,
  type LogEntry,
  STAND_IN,
  startFlowCenter,
  type StandInInstance,
} from '../helpers/flow-center.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { waitFor } from '../helpers/wait.js';

// resolve-unknown under flow-center timeouts, 5xx, cut and refused connections, a flow-center
// restart, kill -9 and a MariaDB restart: never a POST for an instance that exists, never a second
// instance, no row DONE without its own instance looked up or created.
const ROWS = pick(300, 2000);
/** rows one faulted run takes (`--max-rows`), so that every fault meets fresh rows too */
const SLICE = Math.ceil(ROWS / 5);
/** how many of each counted stand-in fault a round injects, per unit */
const TIMES = pick(1, 4);
const APPS = { [APP.key]: APP.secret, '100099': 'other-app-secret' };

let dbs: TestDatabases;
/** the admin connection; replaced after the MariaDB restart (the old one died with the server) */
let admin: mysql.Connection;
let fc: FlowCenter;
/** the stand-in process now running: the one startFlowCenter began, then each restart's */
let stopStandIn: () => Promise<void>;
let proxy: TcpProxy;
let env: Record<string, string | undefined>;
let dir: string;

beforeAll(async () => {
  dbs = await freshDatabases('faultapply');
  admin = dbs.admin;
  admin.on('error', () => undefined);
  fc = await startFlowCenter({ apps: APPS });
  stopStandIn = () => fc.stop();
  proxy = new TcpProxy('127.0.0.1', Number(new URL(fc.url).port));
  // Every request goes through the proxy: cuts and refusals happen between fcctl and the stand-in.
  env = dbs.env({
    FCCTL_FLOW_URL: viaProxy(fc.url, await proxy.start()),
    FCCTL_APP_KEY: APP.key,
    FCCTL_APP_SECRET: APP.secret,
  });
  expect((await runCli(['db', 'init', '--side', 'sh'], { env })).code).toBe(0);
  dir = mkdtempSync(join(tmpdir(), 'fcctl-fault-apply-'));
});
afterAll(async () => {
  await proxy?.stop();
  await stopStandIn?.();
  await admin?.query(`DROP DATABASE IF EXISTS \`${dbs.fcName}\`; DROP DATABASE IF EXISTS \`${dbs.shName}\``);
  await admin?.end();
  if (dbs && admin !== dbs.admin) await dbs.admin.end().catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Kind = 'owned' | 'foreign' | 'absent';
/** 40 % of the instances exist and are the row's own, 10 % someone else's, 50 % do not exist. */
const kindOf = (i: number): Kind => (i % 10 < 4 ? 'owned' : i % 10 === 4 ? 'foreign' : 'absent');

/** UNKNOWN, due FAILED and PENDING past the grace period, attempts 1 and 2. */
function commandOf(bizId: string, i: number): CommandSpec {
  const attempt = i % 3 === 0 ? 2 : 1;
  switch (i % 4) {
    case 2:
      return { bizId, attempt, state: 'FAILED', retryCount: 1, nextRetryAt: 'NOW() - INTERVAL 1 SECOND' };
    case 3:
      return { bizId, attempt, state: 'PENDING', createTime: 'NOW() - INTERVAL 11 MINUTE' };
    default:
      return { bizId, attempt, state: 'UNKNOWN' };
  }
}

/** The instance that exists before any run: owned ones with every status and token variant, foreign ones differing in one ownership field. */
function instanceOf(bizId: string, i: number): StandInInstance {
  const d = defaults(bizId);
  const base: StandInInstance = {
    bizType: BIZ_TYPE,
    bizId,
    status: ([10, 20, 30, 40] as const)[Math.floor(i / 10) % 4]!,
    applyAppKey: APP.key,
    submitterId: d.submitterId,
    flowGuid: d.flowGuid,
    instanceId: `FI-pre-${bizId}`,
    round: 1,
    requestToken: [d.requestToken, 'older-token', null][i % 3]!,
  };
  if (kindOf(i) === 'owned') return base;
  return [
    { ...base, applyAppKey: '100099' },
    { ...base, submitterId: '9007199254740992' },
    { ...base, flowGuid: 'someone-elses' },
  ][Math.floor(i / 10) % 3]!;
}

interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Date.now() when the first stderr bytes arrived */
  readonly stderrAt: number | null;
}

/** A real `bin/fcctl` process, so that it can be killed; a run that hangs is killed and fails the test. */
function startResolve(args: readonly string[]): { child: ChildProcess; done: Promise<RunResult> } {
  const child = spawn(process.execPath, [FCCTL_BIN, '--json', 'apply-command', 'resolve-unknown', ...args], {
    env: env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let stderrAt: number | null = null;
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => {
    stderrAt ??= Date.now();
    stderr += c.toString('utf8');
  });
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill('SIGKILL');
  }, 180_000);
  const done = new Promise<RunResult>((resolve, reject) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (hung) reject(new Error(`resolve-unknown hung (killed after 180 s): ${stderr}`));
      else resolve({ code, signal, stdout, stderr, stderrAt });
    }),
  );
  return { child, done };
}

/** Requests the stand-in received since its request number `seq`. */
async function requestsSince(seq: number): Promise<number> {
  return ((await (await fetch(`${fc.url}/__admin/log?since=${seq}`)).json()) as unknown[]).length;
}
async function lastSeq(): Promise<number> {
  return ((await (await fetch(`${fc.url}/__admin/stats`)).json()) as { requests: number }).requests;
}

/** The stand-in on a given port, its instances loaded from a file before it listens. */
async function startStandInAt(port: number, seedFile: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [STAND_IN, '--port', String(port), '--seed', seedFile], {
    env: { PATH: process.env['PATH'], FLOW_STANDIN_APPS: JSON.stringify(APPS) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`stand-in exited ${code}`)));
  });
  return child;
}

describe(`apply-command resolve-unknown under faults (${ROWS} rows)`, () => {
  it("never a POST for an existing instance, never a second instance, DONE only with its own instance, DEAD only for someone else's", async () => {
    const p = uniquePrefix('fault');
    const ids = Array.from({ length: ROWS }, (_, i) => `${p}-${i}`);
    await insertCommands(
      admin,
      dbs.shName,
      ids.map((bizId, i) => commandOf(bizId, i)),
    );
    const before = ids.map((bizId, i) => (kindOf(i) === 'absent' ? null : instanceOf(bizId, i)));
    await fc.addInstances(before.filter((x) => x !== null));

    /** the stand-in's request log over its restarts, in arrival order */
    const logSegments: LogEntry[][] = [];
    let runs = 0;
    let outsideFaults = 0;
    const port = Number(new URL(fc.url).port);

    /** The flow center goes down and comes back on its port with the instances it held. */
    const restartStandIn = async () => {
      // Nothing reaches it from here on, so the log and instances saved are the whole story.
      proxy.refuse(true);
      proxy.cut();
      // Requests it had already taken are still acted on (the cut only drops their answers).
      await waitFor(
        'requests under way at the flow center',
        async () => (await fc.log()).every((e) => e.status !== null),
        30_000,
        20,
      );
      logSegments.push(await fc.log());
      const seedFile = join(dir, `instances-${logSegments.length}.json`);
      writeFileSync(seedFile, JSON.stringify(await fc.instances()));
      await stopStandIn();
      const child = await startStandInAt(port, seedFile);
      stopStandIn = () =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        });
      await new Promise((r) => setTimeout(r, 300));
      proxy.refuse(false);
    };
    const expireLeases = () =>
      admin.query(
        `UPDATE \`${dbs.shName}\`.flow_apply_command SET claim_expires_at = NOW() - INTERVAL 1 SECOND WHERE claim_owner IS NOT NULL AND biz_id LIKE ?`,
        [`${p}%`],
      );

    const base = [
      '--request-timeout',
      '1',
      '--lease-seconds',
      '30',
      '--max-retries',
      '100',
      '--concurrency',
      '4',
      '--batch-size',
      '20',
    ];
    const patient = ['--max-consecutive-errors', '1000000'];
    const latency = (ms: number): Fault => ({ path: '*', kind: 'latency', ms });
    interface Round {
      readonly name: string;
      readonly faults: readonly Fault[];
      readonly args: readonly string[];
      /** a fault in place before the run starts (undone after it) */
      readonly before?: () => void;
      /** a fault done while the run is under way, once the stand-in has seen `after` of its requests */
      readonly midRun?: { readonly after: number; readonly act: (child: ChildProcess) => Promise<void> };
      readonly check: (r: RunResult) => void | Promise<void>;
    }
    const rowsFailed = (reasons: RegExp) => (r: RunResult) => {
      expect(r.stderr).toBe('');
      expect(r.code).toBe(1);
      const s = jsonLines(r.stdout).find((l) => l['type'] === 'summary')!;
      expect(
        Object.keys(s['failedByReason'] as object).some((k) => reasons.test(k)),
        JSON.stringify(s['failedByReason']),
      ).toBe(true);
    };
    /** exit 3 with one line on stderr, no stack trace */
    const environmentFailure = (line: RegExp) => (r: RunResult) => {
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toMatch(/^fcctl: [^\n]+\n$/);
      expect(r.stderr).toMatch(line);
    };
    const rounds: Round[] = [
      {
        name: 'lookups and applies that never answer (longer than --request-timeout), some after the flow center acted',
        faults: [
          { path: '/oapi/flow/instance', kind: 'timeout', count: 6 * TIMES },
          { path: '/oapi/flow/apply', kind: 'timeout', count: 3 * TIMES },
          { path: '/oapi/flow/apply', kind: 'timeout', after: true, count: 3 * TIMES },
        ],
        args: [...base, ...patient, '--max-rows', String(SLICE)],
        check: rowsFailed(/^LOOKUP_TIMEOUT$/),
      },
      {
        name: '5xx before and after the flow center acted',
        faults: [
          { path: '/oapi/flow/instance', kind: 'status', status: 503, count: 5 * TIMES },
          { path: '/oapi/flow/apply', kind: 'status', status: 502, count: 3 * TIMES },
          { path: '/oapi/flow/apply', kind: 'status', status: 500, after: true, count: 3 * TIMES },
        ],
        args: [...base, ...patient, '--max-rows', String(SLICE)],
        check: rowsFailed(/^LOOKUP_HTTP_503$/),
      },
      {
        name: 'connections cut twice mid-run',
        faults: [latency(40)],
        args: [...base, ...patient, '--max-rows', String(SLICE)],
        midRun: {
          after: Math.ceil(SLICE / 3),
          act: async () => {
            proxy.cut();
            const seq = await lastSeq();
            await waitFor(
              'requests after the first cut',
              async () => (await requestsSince(seq)) >= Math.ceil(SLICE / 3),
              60_000,
              20,
            );
            proxy.cut();
            outsideFaults += 2;
          },
        },
        check: rowsFailed(/_NETWORK$/),
      },
      {
        name: 'connections refused: the run stops after --max-consecutive-errors (exit 3), untried rows released',
        faults: [],
        args: [...base, '--max-rows', String(SLICE)],
        before: () => {
          proxy.refuse(true);
          outsideFaults += 1;
        },
        check: (r) => {
          environmentFailure(/^fcctl: flow center gave 20 errors in a row/)(r);
          const s = jsonLines(r.stdout).find((l) => l['type'] === 'summary')!;
          expect(s).toMatchObject({
            stoppedBy: 'flow-center-errors',
            posts: 0,
            done: 0,
            failedByReason: { LOOKUP_NETWORK: s['failed'] },
          });
          // the 20th error stops it; at most the other three requests in flight fail too; the rest is given back
          expect(s['failed'] as number).toBeGreaterThanOrEqual(20);
          expect(s['failed'] as number).toBeLessThanOrEqual(23);
          expect((s['failed'] as number) + (s['released'] as number)).toBe(s['claimed']);
        },
      },
      {
        name: 'the flow center restarts mid-run',
        faults: [latency(40)],
        args: [...base, ...patient, '--max-rows', String(SLICE)],
        midRun: {
          after: Math.ceil(SLICE / 3),
          act: async () => {
            await restartStandIn();
            outsideFaults += 1;
          },
        },
        check: rowsFailed(/_NETWORK$/),
      },
      {
        name: 'kill -9 mid-run',
        faults: [latency(40)],
        args: [...base, ...patient, '--max-rows', String(SLICE)],
        midRun: {
          after: Math.ceil(SLICE / 3),
          act: async (child) => {
            child.kill('SIGKILL');
            outsideFaults += 1;
          },
        },
        check: (r) => expect(r.signal).toBe('SIGKILL'),
      },
      {
        name: 'MariaDB restarts mid-run',
        faults: [latency(150)],
        args: [...base, ...patient, '--max-rows', String(SLICE)],
        midRun: {
          after: Math.ceil(SLICE / 4),
          act: async () => {
            await restartService('mariadb', 1);
            outsideFaults += 1;
            admin = await mysql.createConnection({
              uri: testMysqlUrl(),
              dateStrings: true,
              supportBigNumbers: true,
              bigNumberStrings: true,
              multipleStatements: true,
            });
            admin.on('error', () => undefined);
          },
        },
        check: async (r) => {
          environmentFailure(/^fcctl: [^\n]*SH database/)(r);
          // Once it has said so, it sends nothing more to the flow center.
          expect((await fc.log()).filter((e) => e.at > r.stderrAt!).map((e) => `${e.method} ${e.bizId}`)).toEqual([]);
        },
      },
    ];

    for (const round of rounds) {
      await fc.clearFaults();
      if (round.faults.length > 0) await fc.faults(round.faults);
      round.before?.();
      const seq = await lastSeq();
      const run = startResolve(round.args);
      runs++;
      let exited = false;
      const done = run.done.finally(() => (exited = true));
      if (round.midRun) {
        const { after, act } = round.midRun;
        await waitFor(
          `${round.name}: ${after} requests`,
          async () => {
            if (exited)
              throw new Error(`${round.name}: the run ended before the mid-run fault: ${(await done).stderr}`);
            return (await requestsSince(seq)) >= after;
          },
          120_000,
          20,
        );
        await act(run.child);
      }
      const r = await done;
      proxy.refuse(false);
      expect(r.stderr, round.name).not.toMatch(/\n\s+at /);
      await round.check(r);
      await expireLeases();
      await makeDue(admin, dbs.shName, p);
    }

    // Then without faults until every row is settled (rows still open after 10 runs count as lost).
    await fc.clearFaults();
    for (let settle = 0; settle < 10; settle++) {
      const r = await startResolve([...base, ...patient]).done;
      runs++;
      expect(r.stderr).toBe('');
      expect([0, 1]).toContain(r.code);
      const rows = await commandsOf(admin, dbs.shName, p);
      if (rows.every((x) => x.state === 'DONE' || x.state === 'DEAD')) break;
      await expireLeases();
      await makeDue(admin, dbs.shName, p);
    }

    logSegments.push(await fc.log());
    const log = logSegments.flat().filter((e) => e.bizId?.startsWith(p));
    const after = new Map((await fc.instances()).map((x) => [x.bizId, x]));
    const rows = await commandsOf(admin, dbs.shName, p);
    const index = new Map(ids.map((id, i) => [id, i]));

    // When each business key's instance came to exist: before everything (-1), at the request that
    // created it (arrival order in the log), or never.
    const existsFrom = new Map<string, number>();
    for (const [i, id] of ids.entries()) if (before[i]) existsFrom.set(id, -1);
    log.forEach((e, order) => {
      if (
        e.method === 'POST' &&
        (e.branch === 'CREATED' || e.branch === 'CONCURRENT_CREATED') &&
        !existsFrom.has(e.bizId!)
      )
        existsFrom.set(e.bizId!, order);
    });
    const postsOnExisting = log.filter(
      (e, order) => e.method === 'POST' && (existsFrom.get(e.bizId!) ?? Infinity) < order,
    );
    const creations = new Map<string, number>();
    for (const e of log)
      if (
        e.method === 'POST' &&
        (e.branch === 'CREATED' || e.branch === 'CONCURRENT_CREATED' || e.branch === 'RESTARTED')
      )
        creations.set(e.bizId!, (creations.get(e.bizId!) ?? 0) + 1);
    const duplicates = [...creations.values()].reduce((n, c) => n + c - 1, 0);

    /** What is wrong with a row's final state, or null. */
    const problem = (row: (typeof rows)[number]): { lost: boolean; why: string } | null => {
      const i = index.get(row.biz_id)!;
      const kind = kindOf(i);
      const inst = after.get(row.biz_id);
      if (kind === 'foreign') {
        if (row.state !== 'DEAD' || !row.last_error?.startsWith('OWNERSHIP_MISMATCH: ') || row.flow_status !== null)
          return { lost: row.state !== 'DONE', why: `foreign ${row.state} ${row.last_error}` };
        return null;
      }
      if (row.state !== 'DONE') return { lost: true, why: `${kind} ${row.state} ${row.last_error}` };
      if (!inst) return { lost: true, why: 'DONE, no instance at the flow center' };
      const d = defaults(row.biz_id);
      const own = inst.applyAppKey === APP.key && inst.submitterId === d.submitterId && inst.flowGuid === d.flowGuid;
      if (
        !own ||
        row.remote_instance_id !== inst.instanceId ||
        row.remote_status !== inst.status ||
        row.flow_status !== inst.status
      ) {
        return {
          lost: false,
          why: `DONE with ${row.remote_instance_id}/${row.remote_status}/${row.flow_status}, flow center has ${JSON.stringify(inst)}`,
        };
      }
      const from = existsFrom.get(row.biz_id) ?? Infinity;
      const seen = log.some(
        (e, order) =>
          e.bizId === row.biz_id &&
          e.status === 200 &&
          e.fault === null &&
          ((e.method === 'GET' && order > from) || (e.method === 'POST' && DONE_BRANCHES.includes(e.branch as never))),
      );
      if (!seen)
        return { lost: false, why: 'DONE without a lookup that found its instance or an apply that created it' };
      if (kind === 'owned') {
        const was = before[i]!;
        if (
          inst.instanceId !== was.instanceId ||
          inst.status !== was.status ||
          inst.round !== was.round ||
          inst.requestToken !== was.requestToken
        )
          return { lost: false, why: `owned instance changed: ${JSON.stringify(inst)}` };
      } else if (inst.requestToken !== d.requestToken || inst.round !== commandOf(row.biz_id, i).attempt) {
        return { lost: false, why: `created with token ${inst.requestToken} round ${inst.round}` };
      }
      return null;
    };
    const problems = rows.map((row) => [row.biz_id, problem(row)] as const).filter(([, x]) => x !== null);
    const rowsLost = problems.filter(([, x]) => x!.lost).length + (ROWS - rows.length);
    const wronglyAccepted =
      problems.filter(([, x]) => !x!.lost).length + new Set(postsOnExisting.map((e) => e.bizId)).size;
    recordTotals('apply-command resolve-unknown under faults', {
      faultsInjected: log.filter((e) => e.fault !== null).length + outsideFaults,
      runs,
      rowsChecked: rows.length,
      rowsLost,
      wronglyAccepted,
      duplicates,
    });

    expect(rows).toHaveLength(ROWS);
    expect(postsOnExisting.map((e) => `${e.bizId} ${e.branch}`)).toEqual([]);
    expect(duplicates).toBe(0);
    expect(problems.slice(0, 10)).toEqual([]);
    // The faults did reach rows of every kind, and the DEAD rows are exactly the foreign ones.
    expect(log.filter((e) => e.fault !== null).length).toBeGreaterThanOrEqual(20);
    expect(rows.filter((x) => x.state === 'DEAD').map((x) => x.biz_id)).toEqual(
      ids.filter((_, i) => kindOf(i) === 'foreign'),
    );
    expect(rows.filter((x) => x.state === 'DONE' && x.last_branch === 'CREATED').length).toBeGreaterThan(0);
    expect(rows.some((x) => x.retry_count >= 2)).toBe(true);
  });
});
