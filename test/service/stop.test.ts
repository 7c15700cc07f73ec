/**
 * A stop keeps its word (issue 34 §3, §5, §6), on real `bin/fcctl --follow` processes: SIGTERM ends
 * a service within `--drain-seconds` + 10 s with exit 0 whatever is down or frozen — flow-center
 * requests slower than the drain are abandoned and their rows released as they were (not charged),
 * outcomes that cannot be written during a database outage are given up at the drain's end (not
 * retried until the lease's), and a database that stops answering (a stalling proxy: no answer, no
 * refusal) turns `/readyz` 503 within ~15 s instead of hanging the loop.
 */
import { afterEach, describe, expect } from 'vitest';
import {
  APP_FLOW,
  clearFlowCenter,
  commandsOf,
  flowEnv,
  insertCommands,
  logOf,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import { testAmqpUrl } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { freePort, httpGet, type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const FORM = '0f0e0d0c-0000-4000-8000-000000000001'; // insertDeliveries' form
const DRAIN_SECONDS = 2;
/** the promise: a stop ends the process within the drain and 10 s */
const STOP_LIMIT_MS = (DRAIN_SECONDS + 10) * 1000;
const test = servicesTest({ prefix: 'stop', init: 'all', flowApps: APP_FLOW });
const running: RunningService[] = [];
const proxies: TcpProxy[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop('SIGKILL')));
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
});

const start = (argv: string[], env: Record<string, string | undefined>) => {
  const s = startService(['--json', ...argv, '--drain-seconds', String(DRAIN_SECONDS)], { env });
  running.push(s);
  return s;
};
async function proxyTo(url: string): Promise<TcpProxy> {
  const u = new URL(url);
  const p = new TcpProxy(u.hostname, Number(u.port || 3306));
  await p.start();
  proxies.push(p);
  return p;
}
/** SIGTERM, and how long the process took to end after it. */
async function timedStop(s: RunningService): Promise<{ code: number; ms: number; stdout: string }> {
  const t0 = performance.now();
  const r = await s.stop('SIGTERM', 120_000);
  return { code: r.code, ms: performance.now() - t0, stdout: r.stdout };
}
const isState = (state: string) => (l: Record<string, unknown>) => l['type'] === 'state' && l['state'] === state;

describe('a stop ends the process within --drain-seconds + 10 s, exit 0', () => {
  test('resolver: a lookup slower than the drain is abandoned at its end; the row is released as it was, not charged (§3)', async ({
    dbs,
    flowCenter,
  }) => {
    await clearFlowCenter(flowCenter);
    const p = uniquePrefix('sd');
    // the readiness probe answers at once; the row's lookup takes 60 s (as long as --request-timeout)
    await flowCenter.faults([{ path: '/oapi/flow/instance', kind: 'latency', ms: 60_000, bizId: `${p}-1` }]);
    const r = start(
      [
        'apply-command',
        'resolve-unknown',
        '--follow',
        '--request-timeout',
        '60',
        '--lease-seconds',
        '130',
        '--backoff-base',
        '1',
      ],
      flowEnv(dbs, flowCenter),
    );
    await r.waitForLine('running', isState('running'));
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'UNKNOWN' }]);
    await waitFor(
      'the row claimed',
      async () => (await commandsOf(dbs.admin, dbs.shName, p))[0]?.claim_owner !== null,
      15_000,
      50,
    );
    await new Promise((res) => setTimeout(res, 500));
    const end = await timedStop(r);
    expect(end.code).toBe(0);
    // the drain, and little more: the request does not run its 60 s
    expect(end.ms).toBeLessThan((DRAIN_SECONDS + 3) * 1000);
    expect(end.ms).toBeGreaterThan(DRAIN_SECONDS * 1000 - 500);
    const [row] = await commandsOf(dbs.admin, dbs.shName, p);
    expect(row).toMatchObject({ state: 'UNKNOWN', retry_count: 0, claim_owner: null, last_error: null });
  });

  test('resolver: a POST apply in flight at the drain’s end is abandoned; the row is released UNKNOWN uncharged and the next run looks it up first, never POSTs again (§3, SPEC §9)', async ({
    dbs,
    flowCenter,
  }) => {
    await clearFlowCenter(flowCenter);
    const p = uniquePrefix('sp');
    // the flow center creates the instance, but its answer never comes
    await flowCenter.faults([{ path: '/oapi/flow/apply', kind: 'timeout', after: true, bizId: `${p}-1` }]);
    const argv = ['apply-command', 'resolve-unknown', '--follow', '--request-timeout', '60', '--lease-seconds', '130'];
    const r = start(argv, flowEnv(dbs, flowCenter));
    await r.waitForLine('running', isState('running'));
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'UNKNOWN' }]);
    const posted = async () => logOf(await flowCenter.log(), p).some((e) => e.path === '/oapi/flow/apply');
    await waitFor('the POST sent', posted, 15_000, 50);
    const end = await timedStop(r);
    expect(end.code).toBe(0);
    expect(end.ms).toBeLessThan((DRAIN_SECONDS + 3) * 1000);
    const [row] = await commandsOf(dbs.admin, dbs.shName, p);
    expect(row).toMatchObject({ state: 'UNKNOWN', retry_count: 0, claim_owner: null, last_error: null });
    await clearFlowCenter(flowCenter);
    const again = start(argv, flowEnv(dbs, flowCenter));
    await waitFor('DONE', async () => (await commandsOf(dbs.admin, dbs.shName, p))[0]?.state === 'DONE', 30_000, 100);
    expect(logOf(await flowCenter.log(), p).map((e) => e.path)).toEqual(['/oapi/flow/instance']);
    expect((await timedStop(again)).code).toBe(0);
  });

  test('relay: outcomes that cannot be written while the FC database is down are given up at the drain’s end, not retried until the lease’s (§5)', async ({
    dbs,
  }) => {
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const key = uniqueConsumerKey('sd');
    await bindQueue(key);
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    const db = await proxyTo(dbs.fcUrl);
    const mq = await proxyTo(testAmqpUrl());
    const relay = start(['deliveries', 'send', '--follow', '--lease-seconds', '90'], {
      ...dbs.env({ FCCTL_AMQP_URL: viaProxy(testAmqpUrl(), mq.port), FCCTL_APP_KEY: PUBLISHER.appKey }),
      FCCTL_APP_CODE: PUBLISHER.appCode,
      FCCTL_FC_DATABASE_URL: viaProxy(dbs.fcUrl, db.port),
    });
    await relay.waitForLine('running', isState('running'));
    // confirms come 3 s late: the rows are claimed and published, their outcome not yet written
    mq.delayMs = 3000;
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 3);
    await waitFor(
      'the rows claimed',
      async () => {
        const [rows] = await dbs.admin.query(
          `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? AND claim_owner IS NOT NULL`,
          [key],
        );
        return Number((rows as Array<{ n: number }>)[0]!.n) === 3;
      },
      15_000,
      20,
    );
    // the database goes down and the stop comes while the confirms are on their way: the claim loop
    // waits for its batches, whose outcomes cannot be written
    db.refuse(true);
    db.cut();
    const end = await timedStop(relay);
    expect(end.code).toBe(0);
    expect(end.ms).toBeLessThan(STOP_LIMIT_MS);
    expect(end.stdout).toContain('"type":"summary"');
  });

  test('relay: a frozen FC database (no answer, not refused) turns /readyz 503 within 15 s, and a stop still ends it (§6)', async ({
    dbs,
  }) => {
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const db = await proxyTo(dbs.fcUrl);
    const port = await freePort();
    const relay = start(['deliveries', 'send', '--follow', '--listen', `:${port}`], {
      ...dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode }),
      FCCTL_FC_DATABASE_URL: viaProxy(dbs.fcUrl, db.port),
    });
    await relay.waitForLine('running', isState('running'));
    expect((await httpGet(port, '/readyz')).status).toBe(200);
    db.freeze();
    const t0 = performance.now();
    await waitFor('/readyz 503', async () => (await httpGet(port, '/readyz')).status === 503, 20_000, 250);
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect((await httpGet(port, '/readyz')).body).toMatch(/^outage: /);
    const end = await timedStop(relay);
    expect(end.code).toBe(0);
    expect(end.ms).toBeLessThan(STOP_LIMIT_MS);
  });

  test('resolver: a frozen SH database turns /readyz 503 within 15 s, and a stop still ends it (§6)', async ({
    dbs,
    flowCenter,
  }) => {
    await clearFlowCenter(flowCenter);
    const db = await proxyTo(dbs.shUrl);
    const port = await freePort();
    const r = start(['apply-command', 'resolve-unknown', '--follow', '--listen', `:${port}`], {
      ...flowEnv(dbs, flowCenter),
      FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, db.port),
    });
    await r.waitForLine('running', isState('running'));
    db.freeze();
    const t0 = performance.now();
    await waitFor('/readyz 503', async () => (await httpGet(port, '/readyz')).status === 503, 20_000, 250);
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect((await httpGet(port, '/readyz')).body).toMatch(/^outage: SH database: no answer in 10 s/);
    const end = await timedStop(r);
    expect(end.code).toBe(0);
    expect(end.ms).toBeLessThan(STOP_LIMIT_MS);
  });

  // A stop while the service is still opening its database, the server frozen after the handshake:
  // the open's first statement waits out its 10 s deadline, and the stop waited with it (14.9 s
  // after SIGTERM with a 2 s drain); the open is no longer waited for.
  test('resolver: SIGTERM while it opens an SH database frozen after the handshake ends it within the drain + 10 s (§5, §6)', async ({
    dbs,
    flowCenter,
  }) => {
    const db = await proxyTo(dbs.shUrl);
    db.freezeAtStatement();
    const r = start(['apply-command', 'resolve-unknown', '--follow'], {
      ...flowEnv(dbs, flowCenter),
      FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, db.port),
    });
    await new Promise((res) => setTimeout(res, 1500));
    expect(r.lines().filter(isState('running'))).toEqual([]);
    const end = await timedStop(r);
    expect(end.code).toBe(0);
    expect(end.ms).toBeLessThan(STOP_LIMIT_MS);
    expect(end.stdout).toContain('"type":"summary"');
  });

  test('relay: SIGTERM while it opens an FC database frozen after the handshake ends it within the drain + 10 s (§5, §6)', async ({
    dbs,
  }) => {
    const db = await proxyTo(dbs.fcUrl);
    db.freezeAtStatement();
    const relay = start(['deliveries', 'send', '--follow'], {
      ...dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode }),
      FCCTL_FC_DATABASE_URL: viaProxy(dbs.fcUrl, db.port),
    });
    await new Promise((res) => setTimeout(res, 1500));
    expect(relay.lines().filter(isState('running'))).toEqual([]);
    const end = await timedStop(relay);
    expect(end.code).toBe(0);
    expect(end.ms).toBeLessThan(STOP_LIMIT_MS);
    expect(end.stdout).toContain('"type":"summary"');
  });
});
