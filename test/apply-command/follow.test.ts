/**
 * `apply-command resolve-unknown --follow` (issue 27 §2) as a real `bin/fcctl` process against the
 * real SH database and the flow-center stand-in: commands that become due while it runs are
 * settled (never resent when found), a flow center answering 5xx is waited out with /readyz 503
 * and the process stays up, a 401 is a misconfiguration that claims nothing, and SIGTERM ends it
 * with exit 0 and nothing claimed.
 */
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
import type { FlowCenter } from '../helpers/flow-center.js';
import { runCli } from '../helpers/cli.js';
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
    expect(metrics.body).toMatch(/^fcctl_resolver_commands_total\{result="done"\} 30$/m);
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
});
