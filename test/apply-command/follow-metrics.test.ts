/**
 * What a follow resolver's `/metrics` says (issue 36 §2–§5), on a real `bin/fcctl` process against
 * the real SH database and the flow-center stand-in: a command that ran out of retries counted
 * `dead` (not `failed`), a FAILED one `retry`; the oldest due age counted from when a command became
 * due (a 45-day-old command up for its retry reads seconds), in `/metrics` and `fcctl status`; a
 * pause closes the flow-center target; the output lint-clean with only the resolver's families.
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
import { runCli } from '../helpers/cli.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import { promtool } from '../helpers/promtool.js';
import { freePort, httpGet, type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'rmetrics', init: 'sh', flowApps: APP_FLOW });
let fc: FlowCenter, env: Env, admin: import('mysql2/promise').Connection, shName: string;
const running: RunningService[] = [];
test.beforeAll(
  ({ dbs, flowCenter }) =>
    void ([fc, env, admin, shName] = [flowCenter, flowEnv(dbs, flowCenter), dbs.admin, dbs.shName]),
);
beforeEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop('SIGKILL')));
  await clearFlowCenter(fc);
  await admin.query(`DELETE FROM \`${shName}\`.fcctl_pause`);
});

const resolver = (args: string[] = []) => {
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
    { env },
  );
  running.push(s);
  return s;
};
const isState = (state: string) => (l: Record<string, unknown>) => l['type'] === 'state' && l['state'] === state;
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
const sample = (body: string, name: string, labels = '') =>
  Number(new RegExp(`^${name}${labels ? `\\{${labels}\\}` : ''} (\\S+)$`, 'm').exec(body)?.[1] ?? Number.NaN);
const LABEL = 'command="apply-command resolve-unknown"';

describe('apply-command resolve-unknown --follow: /metrics says what is true (issue 36)', () => {
  test('a command that ran out of retries is result="dead" (not "failed"), one charged a retry "retry"', async () => {
    const port = await freePort();
    const p = uniquePrefix('rm');
    await fc.faults([
      { path: '/oapi/flow/instance', kind: 'status', status: 500, bizId: `${p}-last` },
      { path: '/oapi/flow/instance', kind: 'status', status: 500, bizId: `${p}-first` },
    ]);
    await fc.addInstances([owned(`${p}-ok`, 30)]);
    const r = resolver(['--listen', `:${port}`, '--backoff-base', '60', '--max-retries', '3']);
    await r.waitForLine('running', isState('running'));
    await insertCommands(admin, shName, [
      { bizId: `${p}-ok`, state: 'UNKNOWN' },
      { bizId: `${p}-last`, state: 'FAILED', retryCount: 2 },
      { bizId: `${p}-first`, state: 'UNKNOWN' },
    ]);
    await waitFor(
      'DONE, DEAD, FAILED',
      async () => (await commandsOf(admin, shName, p)).map((c) => c.state).join() === 'DONE,DEAD,FAILED',
      20_000,
      100,
    );
    const body = (await httpGet(port, '/metrics')).body;
    expect(body).toMatch(/^fcctl_resolver_commands_total\{result="done",reason=""\} 1$/m);
    expect(body).toMatch(/^fcctl_resolver_commands_total\{result="dead",reason="LOOKUP_HTTP_500"\} 1$/m);
    expect(body).toMatch(/^fcctl_resolver_commands_total\{result="retry",reason="LOOKUP_HTTP_500"\} 1$/m);
    expect(body).not.toMatch(/result="failed"/);
    expect((await r.stop()).code).toBe(0);
  }, 60_000);

  test('oldest due counts from when a command became due: a 45-day-old one up for its retry reads seconds in /metrics and status; paused, the flow center is closed', async () => {
    const port = await freePort();
    const p = uniquePrefix('ro');
    const r = resolver(['--listen', `:${port}`, '--heartbeat-seconds', '1']);
    await r.waitForLine('running', isState('running'));
    expect((await runCli(['pause', 'apply-command resolve-unknown', '--reason', 'test'], { env })).code).toBe(0);
    await r.waitForLine('paused', isState('paused'));
    await insertCommands(admin, shName, [
      {
        bizId: `${p}-old`,
        state: 'FAILED',
        retryCount: 1,
        createTime: 'NOW() - INTERVAL 45 DAY',
        nextRetryAt: 'NOW() - INTERVAL 2 SECOND',
      },
    ]);
    await sleep(2500); // two beats: the gauge read with the command due
    const body = (await httpGet(port, '/metrics')).body;
    expect(sample(body, 'fcctl_resolver_due_commands')).toBe(1);
    expect(sample(body, 'fcctl_resolver_oldest_due_age_seconds')).toBeLessThan(30);
    const status = await runCli(['--json', 'status'], { env });
    const apply = (
      JSON.parse(status.stdout.trim().split('\n').pop()!) as Record<string, { oldestDueAgeSeconds: number }>
    )['applyCommands']!;
    expect(apply.oldestDueAgeSeconds).toBeLessThan(30);
    // paused: nothing asked of the flow center, by the resolver's choice
    const flow = (state: string) =>
      sample(body, 'fcctl_service_connection_state', `${LABEL},target="flow_center",state="${state}"`);
    expect([flow('connected'), flow('closed'), flow('lost')]).toEqual([0, 1, 0]);
    expect(sample(body, 'fcctl_service_reconnects_total', `${LABEL},target="flow_center"`)).toBe(0);
    expect((await r.stop()).code).toBe(0);
  }, 60_000);

  test('/metrics passes promtool check metrics, with fcctl_build_info and only the resolver families', async () => {
    const port = await freePort();
    const r = resolver(['--listen', `:${port}`]);
    await r.waitForLine('running', isState('running'));
    const body = (await httpGet(port, '/metrics')).body;
    const lint = promtool(['check', 'metrics'], body);
    expect({ code: lint.code, out: lint.stdout + lint.stderr }).toEqual({ code: 0, out: '' });
    expect(body).toMatch(
      new RegExp(`^fcctl_build_info\\{${LABEL},version="[^"]+",node_version="${process.version}"\\} 1$`, 'm'),
    );
    const families = [...body.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!);
    expect(families.filter((f) => f.startsWith('fcctl_relay_'))).toEqual([]);
    expect(families).toEqual(
      expect.arrayContaining([
        'fcctl_resolver_commands_total',
        'fcctl_resolver_oldest_due_age_seconds',
        'fcctl_service_connection_state',
        'process_cpu_seconds_total',
      ]),
    );
    expect((await r.stop()).code).toBe(0);
  }, 60_000);
});
