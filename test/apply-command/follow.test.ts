/**
 * `apply-command resolve-unknown --follow` (issue 27 §2) as a real `bin/fcctl` process against the
 * real SH database and the flow-center stand-in: commands that become due while it runs are
 * settled (never resent when found), a flow center answering 5xx is waited out with /readyz 503
 * and the process stays up, a 401 is a misconfiguration that claims nothing, and SIGTERM ends it
 * with exit 0 and nothing claimed. Issue 34: an outage that begins after start is an outage (no
 * row charged), a due row locked by another transaction is polled, not spun on, and the last
 * progress is Unix time.
 */
import mysql from 'mysql2/promise';
import { beforeEach, describe, expect } from 'vitest';
import {
  APP_FLOW,
  clearFlowCenter,
  commandsOf,
  type Env,
  flowEnv,
  insertCommands,
  ownedInstance as owned,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import type { Fault, FlowCenter } from '../helpers/flow-center.js';
import { runCli } from '../helpers/cli.js';
import { costOver, MysqlCommandCounter } from '../helpers/cost.js';
import { viaProxy } from '../helpers/proxy.js';
import { freePort, httpGet, type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'rfollow', init: 'sh', flowApps: APP_FLOW });
let fc: FlowCenter, env: Env, admin: import('mysql2/promise').Connection, shName: string;
const running: RunningService[] = [];
test.beforeAll(
  ({ dbs, flowCenter }) =>
    void ([fc, env, admin, shName] = [flowCenter, flowEnv(dbs, flowCenter), dbs.admin, dbs.shName]),
);
beforeEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop('SIGKILL')));
  await clearFlowCenter(fc);
});

const resolver = (args: string[] = [], e = env) => {
  const s = startService(
    [
      '--json',
      'apply-command',
      'resolve-unknown',
      '--follow',
      '--request-timeout',
      '1',
      '--lease-seconds',
      '30',
      ...args,
    ],
    { env: e },
  );
  running.push(s);
  return s;
};
const isState = (state: string) => (l: Record<string, unknown>) => l['type'] === 'state' && l['state'] === state;
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
/** The value of one sample in a /metrics body, or null. */
const sample = (body: string, name: string, labels: string) =>
  Number(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(body)?.[1] ?? Number.NaN);
const LABEL = 'command="apply-command resolve-unknown"';

describe('apply-command resolve-unknown --follow', () => {
  test('settles commands that become due while it runs, found ones with no POST; exit 0 on SIGTERM, nothing claimed', async () => {
    const port = await freePort();
    const r = resolver(['--listen', `:${port}`]);
    await r.waitForLine('running', isState('running'));
    expect((await httpGet(port, '/readyz')).status).toBe(200);
    const p = uniquePrefix('rf');
    const found = Array.from({ length: 20 }, (_, i) => `${p}-f${i}`);
    const missing = Array.from({ length: 10 }, (_, i) => `${p}-m${i}`);
    await fc.addInstances(found.map((bizId) => owned(bizId, 30)));
    await insertCommands(
      admin,
      shName,
      [...found, ...missing].map((bizId) => ({ bizId, state: 'UNKNOWN' })),
    );
    await waitFor(
      'all 30 DONE',
      async () => (await commandsOf(admin, shName, p)).filter((c) => c.state === 'DONE').length === 30,
      20_000,
      100,
    );
    const log = (await fc.log()).filter((e) => e.bizId?.startsWith(p));
    expect(
      log
        .filter((e) => e.method === 'POST')
        .map((e) => e.bizId)
        .sort(),
    ).toEqual([...missing].sort());
    const metrics = await httpGet(port, '/metrics');
    expect(metrics.body).toMatch(/^fcctl_resolver_commands_total\{result="done",reason=""\} 30$/m);
    const end = await r.stop('SIGTERM');
    expect(end.code).toBe(0);
    expect((await commandsOf(admin, shName, p)).every((c) => c.claim_owner === null)).toBe(true);
    expect(end.stdout).toContain('"type":"summary"');
  });

  test('a flow center answering 503: /readyz 503, the process stays up, and it settles the rows once the flow center is back', async () => {
    const port = await freePort();
    await fc.faults([{ path: '*', kind: 'status', status: 503 }]);
    const r = resolver(['--listen', `:${port}`]);
    await r.waitForLine('outage', isState('outage'));
    const ready = await httpGet(port, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toContain('outage');
    expect((await httpGet(port, '/healthz')).status).toBe(200);
    const p = uniquePrefix('ro');
    await insertCommands(admin, shName, [{ bizId: `${p}-1`, state: 'UNKNOWN' }]);
    await new Promise((res) => setTimeout(res, 1500));
    expect(r.child.exitCode).toBeNull();
    await fc.clearFaults();
    await waitFor(
      'settled after the outage',
      async () => (await commandsOf(admin, shName, p))[0]?.state === 'DONE',
      40_000,
      200,
    );
    expect((await httpGet(port, '/readyz')).status).toBe(200);
    expect((await r.stop()).code).toBe(0);
  });

  test('a wrong secret (401): misconfigured, nothing claimed or charged, still running', async () => {
    const port = await freePort();
    const p = uniquePrefix('rs');
    await insertCommands(admin, shName, [{ bizId: `${p}-1`, state: 'UNKNOWN' }]);
    const r = resolver(['--listen', `:${port}`], { ...env, FCCTL_APP_SECRET: 'wrong-secret' });
    const line = await r.waitForLine('misconfigured', isState('misconfigured'));
    expect(String(line['detail'])).toContain('401');
    expect((await httpGet(port, '/readyz')).body).toContain('misconfigured');
    const [row] = await commandsOf(admin, shName, p);
    expect(row).toMatchObject({ state: 'UNKNOWN', retry_count: 0, claim_owner: null });
    expect(r.child.exitCode).toBeNull();
    expect((await r.stop()).code).toBe(0);
  });

  test('paused, it claims nothing (/readyz 503); resumed, it settles what came meanwhile', async () => {
    const port = await freePort();
    const r = resolver(['--listen', `:${port}`]);
    await r.waitForLine('running', isState('running'));
    expect((await runCli(['pause', 'apply-command resolve-unknown', '--reason', 'test'], { env })).code).toBe(0);
    await r.waitForLine('paused', isState('paused'));
    expect((await httpGet(port, '/readyz')).body).toContain('paused');
    const p = uniquePrefix('rp');
    await insertCommands(admin, shName, [{ bizId: `${p}-1`, state: 'UNKNOWN' }]);
    await new Promise((res) => setTimeout(res, 1000));
    expect((await commandsOf(admin, shName, p))[0]).toMatchObject({
      state: 'UNKNOWN',
      claim_owner: null,
      retry_count: 0,
    });
    expect((await runCli(['resume', 'apply-command resolve-unknown'], { env })).code).toBe(0);
    await waitFor(
      'settled after resume',
      async () => (await commandsOf(admin, shName, p))[0]?.state === 'DONE',
      10_000,
      100,
    );
    expect((await r.stop()).code).toBe(0);
  });

  // before issue 34, 503s turned all three rows DEAD (retry_count 6) within ~15 s and timeouts
  // charged them every few seconds, with /readyz 200 all along
  // A partial outage too: every POST apply failing while lookups answer, and the rows' lookups
  // failing while the readiness lookup (biz type fcctl-probe) answers. Before, both charged every
  // row (DEAD, or FAILED 5, within 15 s with --backoff-base 1) with /readyz 200 all along.
  const outages: Array<{ what: string; faults: (p: string) => Fault[]; holdMs: number; reason: RegExp }> = [
    {
      what: 'every request 503',
      faults: () => [{ path: '*', kind: 'status', status: 503 }],
      holdMs: 15_000,
      reason: /503/,
    },
    {
      what: 'every request timing out',
      faults: () => [{ path: '*', kind: 'timeout' }],
      holdMs: 8_000,
      reason: /timeout/,
    },
    { what: 'every connection dropped', faults: () => [{ path: '*', kind: 'drop' }], holdMs: 8_000, reason: /network/ },
    {
      what: 'every POST apply 503, lookups answering',
      faults: () => [{ path: '/oapi/flow/apply', kind: 'status', status: 503 }],
      holdMs: 15_000,
      reason: /503/,
    },
    {
      what: 'every POST apply timing out, lookups answering',
      faults: () => [{ path: '/oapi/flow/apply', kind: 'timeout' }],
      holdMs: 10_000,
      reason: /timeout/,
    },
    {
      what: "the rows' lookups 500, the readiness lookup answering",
      faults: (p) =>
        [1, 2, 3].map((i) => ({
          path: '/oapi/flow/instance' as const,
          kind: 'status' as const,
          status: 500,
          bizId: `${p}-${i}`,
        })),
      holdMs: 15_000,
      reason: /500/,
    },
  ];
  for (const { what, faults, holdMs, reason } of outages)
    test(`a flow-center outage that begins after start (${what}): outage and /readyz 503, no row charged, settled once it answers (issue 34 §1)`, async () => {
      const port = await freePort();
      const r = resolver(['--listen', `:${port}`, '--backoff-base', '1', '--backoff-cap', '4']);
      await r.waitForLine('running', isState('running'));
      const p = uniquePrefix('rx');
      await fc.faults(faults(p));
      await insertCommands(
        admin,
        shName,
        [1, 2, 3].map((i) => ({ bizId: `${p}-${i}`, state: 'UNKNOWN' as const })),
      );
      const inserted = Date.now();
      await waitFor('/readyz 503', async () => (await httpGet(port, '/readyz')).status === 503, 10_000, 100);
      await sleep(Math.max(inserted + holdMs - Date.now(), 0));
      const ready = await httpGet(port, '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatch(/^outage: /);
      expect(ready.body).toMatch(reason);
      const metrics = (await httpGet(port, '/metrics')).body;
      expect(sample(metrics, 'fcctl_service_ready', LABEL)).toBe(0);
      expect(sample(metrics, 'fcctl_service_connection_up', `${LABEL},target="flow_center"`)).toBe(0);
      const rows = await commandsOf(admin, shName, p);
      expect(rows.map((c) => [c.state, c.retry_count])).toEqual([
        ['UNKNOWN', 0],
        ['UNKNOWN', 0],
        ['UNKNOWN', 0],
      ]);
      expect(r.lines().some(isState('outage'))).toBe(true);
      await fc.clearFaults();
      await waitFor(
        'all 3 DONE after the outage',
        async () => (await commandsOf(admin, shName, p)).every((c) => c.state === 'DONE'),
        40_000,
        200,
      );
      // ready again once the pass that settled them ends (after an outage the readiness lookup cannot see)
      await waitFor('/readyz 200', async () => (await httpGet(port, '/readyz')).status === 200, 5_000, 50);
      expect(sample((await httpGet(port, '/metrics')).body, 'fcctl_service_ready', LABEL)).toBe(1);
      expect((await r.stop()).code).toBe(0);
    });

  test("one row's 5xx among answers is that row's failure: FAILED with its retry charged, the service stays running", async () => {
    const port = await freePort();
    const p = uniquePrefix('r5');
    await fc.faults([{ path: '*', kind: 'status', status: 500, bizId: `${p}-bad` }]);
    const r = resolver(['--listen', `:${port}`]);
    await r.waitForLine('running', isState('running'));
    await insertCommands(
      admin,
      shName,
      ['ok1', 'bad', 'ok2'].map((k) => ({ bizId: `${p}-${k}`, state: 'UNKNOWN' as const })),
    );
    await waitFor(
      'the good rows DONE, the bad one FAILED',
      async () => (await commandsOf(admin, shName, p)).map((c) => c.state).join() === 'DONE,FAILED,DONE',
      15_000,
      100,
    );
    const bad = (await commandsOf(admin, shName, p))[1]!;
    expect(bad).toMatchObject({ retry_count: 1, claim_owner: null });
    expect(bad.last_error).toMatch(/^LOOKUP_HTTP_500/);
    expect(r.lines().some(isState('outage'))).toBe(false);
    expect((await httpGet(port, '/readyz')).status).toBe(200);
    expect((await r.stop()).code).toBe(0);
  });

  test('a row whose lookup always 500s, and one whose POST apply always 500s, still go DEAD among good rows and alone; never an outage', async () => {
    const port = await freePort();
    const p = uniquePrefix('rd');
    await fc.faults([
      { path: '/oapi/flow/instance', kind: 'status', status: 500, bizId: `${p}-lookup` },
      { path: '/oapi/flow/apply', kind: 'status', status: 500, bizId: `${p}-apply` },
    ]);
    const r = resolver(['--listen', `:${port}`, '--backoff-base', '1', '--backoff-cap', '2', '--max-retries', '3']);
    await r.waitForLine('running', isState('running'));
    await insertCommands(
      admin,
      shName,
      ['ok1', 'lookup', 'apply', 'ok2'].map((k) => ({ bizId: `${p}-${k}`, state: 'UNKNOWN' as const })),
    );
    await waitFor(
      'the good rows DONE, the bad ones DEAD',
      async () => (await commandsOf(admin, shName, p)).map((c) => c.state).join() === 'DONE,DEAD,DEAD,DONE',
      30_000,
      200,
    );
    const rows = await commandsOf(admin, shName, p);
    expect(rows.map((c) => [c.retry_count, c.last_error?.split(':')[0] ?? null])).toEqual([
      [0, null],
      [3, 'LOOKUP_HTTP_500'],
      [3, 'APPLY_HTTP_500'],
      [0, null],
    ]);
    // then two more, one after the other, each alone: a row charged is no longer a suspect that
    // makes the next one's failures an outage (it would never go DEAD)
    for (const k of ['x', 'y']) {
      await fc.faults([{ path: '/oapi/flow/instance', kind: 'status', status: 500, bizId: `${p}-${k}` }]);
      await insertCommands(admin, shName, [{ bizId: `${p}-${k}`, state: 'UNKNOWN' }]);
      await waitFor(
        `the bad row ${k} DEAD`,
        async () => (await commandsOf(admin, shName, `${p}-${k}`))[0]?.state === 'DEAD',
        20_000,
        200,
      );
    }
    expect(r.lines().some(isState('outage'))).toBe(false);
    expect((await httpGet(port, '/readyz')).status).toBe(200);
    expect((await r.stop()).code).toBe(0);
  });

  test('a due row locked by another transaction is polled, not spun on: CPU and statements as when idle (issue 34 §2)', async () => {
    const p = uniquePrefix('rl');
    await insertCommands(admin, shName, [{ bizId: `${p}-1`, state: 'UNKNOWN' }]);
    const dbUrl = new URL(env['FCCTL_SH_DATABASE_URL']!);
    const counter = new MysqlCommandCounter(dbUrl.hostname, Number(dbUrl.port || 3306));
    await counter.start();
    const locker = await mysql.createConnection({ uri: dbUrl.toString() });
    try {
      await locker.query('START TRANSACTION');
      await locker.query('SELECT id FROM flow_apply_command WHERE biz_id = ? FOR UPDATE', [`${p}-1`]);
      const r = resolver([], { ...env, FCCTL_SH_DATABASE_URL: viaProxy(dbUrl.toString(), counter.port) });
      await r.waitForLine('running', isState('running'));
      await sleep(2000); // rows earlier tests left due are settled first
      const held = await costOver(r.child.pid!, counter, 5000);
      await locker.query('ROLLBACK');
      await waitFor(
        'the row settled once the lock is gone',
        async () => (await commandsOf(admin, shName, p))[0]?.state === 'DONE',
        10_000,
        100,
      );
      await sleep(1000);
      const idle = await costOver(r.child.pid!, counter, 5000);
      if (process.env['FCCTL_PRINT_COST']) console.info(JSON.stringify({ held, idle }));
      // before issue 34: 35–45 % of a core and thousands of statements a second
      expect(held.cpuPercent).toBeLessThan(5);
      expect(held.commandsPerSecond).toBeLessThan(80);
      expect(idle.cpuPercent).toBeLessThan(5);
      expect((await r.stop()).code).toBe(0);
    } finally {
      await locker.end().catch(() => undefined);
      await counter.stop();
    }
  });

  test('fcctl_service_last_progress_timestamp_seconds is Unix time (issue 34 §4)', async () => {
    const port = await freePort();
    const r = resolver(['--listen', `:${port}`]);
    await r.waitForLine('running', isState('running'));
    await sleep(500);
    const at = sample((await httpGet(port, '/metrics')).body, 'fcctl_service_last_progress_timestamp_seconds', LABEL);
    expect(Math.abs(at - Date.now() / 1000)).toBeLessThan(5);
    expect((await r.stop()).code).toBe(0);
  });
});
