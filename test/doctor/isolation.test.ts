import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentError, UsageError } from '../../src/lib/cli/exit.js';
import { ManagementClient } from '../../src/lib/amqp/management.js';
import { RETURN_PROBE_ROUTING_KEY } from '../../src/lib/amqp/connect.js';
import { CONSUMER_QUEUE, ISOLATION_CHECKS } from '../../src/lib/doctor/isolation.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { freshDatabases, type TestDatabases } from '../helpers/db.js';
import { insertRegistry, PUBLISHER, uniqueConsumerKey } from '../helpers/deliveries.js';
import { isolatedVhost, type IsolatedVhost, managementUrlAs, mgmt, testManagementUrl } from '../helpers/management.js';

/**
 * `doctor --isolation` against the real broker: a vhost of its own, configured here as seed 000 §6
 * wants it, then each item broken on purpose (and put back) to see it named.
 */

const EXCHANGE = 'fc.answer.delivery.v2';
const DLQ = `${CONSUMER_QUEUE}.dlq`;
const ITEMS = [ISOLATION_CHECKS.vhost, ISOLATION_CHECKS.permissions, ISOLATION_CHECKS.topic, ISOLATION_CHECKS.bindings, ISOLATION_CHECKS.queues, ISOLATION_CHECKS.alternateExchange];
const enc = encodeURIComponent;

describe('fcctl doctor --isolation (real broker and management API)', () => {
  let dbs: TestDatabases;
  let iso: IsolatedVhost;
  const svcHall = { id: 43, appCode: 'svc-hall', appKey: uniqueConsumerKey('svc') };
  const other = { id: 44, appCode: 'other-consumer', appKey: uniqueConsumerKey('oth') };
  const CORRECT_PERMISSIONS = { configure: '^fc\\.answer\\.delivery\\.v2$', write: '^fc\\.answer\\.delivery\\.v2$', read: '^$' };
  const CORRECT_TOPIC = { exchange: EXCHANGE, write: '^fc\\.snapshot\\.v2\\.', read: '' };

  const api = (path: string) => `/api/${path.replace('{v}', iso.path)}`;
  const declareQueue = (name: string, durable = true) => mgmt('PUT', api(`queues/{v}/${enc(name)}`), { durable, auto_delete: false });
  const deleteQueue = (name: string) => mgmt('DELETE', api(`queues/{v}/${enc(name)}`), undefined, { allow404: true });
  const bind = (queue: string, key: string) => mgmt('POST', api(`bindings/{v}/e/${EXCHANGE}/q/${enc(queue)}`), { routing_key: key });
  const setPermissions = (p: { configure: string; write: string; read: string }) => mgmt('PUT', api(`permissions/{v}/${enc(iso.publisher.user)}`), p);
  const setTopic = () => mgmt('PUT', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`), CORRECT_TOPIC);

  const env = (extra: Record<string, string> = {}) => dbs.env({ FCCTL_AMQP_URL: iso.amqpUrl, FCCTL_AMQP_MANAGEMENT_URL: testManagementUrl(), ...extra });
  const doctor = async (extra: Record<string, string> = {}, args: string[] = []) => {
    const r = await runCli(['--json', 'doctor', '--isolation', ...args], { env: env(extra) });
    const checks = Object.fromEntries(jsonLines(r.stdout).filter((l) => l['type'] === 'check').map((l) => [String(l['check']), l as { status: string; detail: string }]));
    return { ...r, checks };
  };
  /** the items that did not pass, as [item, status] */
  const notOk = (checks: Record<string, { status: string }>) => ITEMS.filter((i) => checks[i]?.status !== 'ok').map((i) => [i, checks[i]?.status]);

  beforeAll(async () => {
    dbs = await freshDatabases('isolation');
    expect((await runCli(['db', 'init', '--side', 'all'], { env: dbs.env() })).code).toBe(0);
    for (const row of [PUBLISHER, svcHall, other]) await insertRegistry(dbs.admin, dbs.fcName, row);
    iso = await isolatedVhost('iso');
    // the correct setup (README "doctor --isolation")
    await setPermissions(CORRECT_PERMISSIONS);
    await setTopic();
    await mgmt('PUT', api(`exchanges/{v}/${EXCHANGE}`), { type: 'topic', durable: true, auto_delete: false, internal: false, arguments: {} });
    await declareQueue(CONSUMER_QUEUE);
    await declareQueue(DLQ);
    await declareQueue('other-consumer.q');
    await bind(CONSUMER_QUEUE, `fc.snapshot.v2.${svcHall.appKey}.*`);
    await bind('other-consumer.q', `fc.snapshot.v2.${other.appKey}.5`);
  });
  afterAll(async () => {
    await iso?.drop();
    await dbs?.drop();
  });

  it('passes on the correct setup: exit 0, every item ok, one JSON object per item', async () => {
    const r = await doctor();
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(notOk(r.checks)).toEqual([]);
    expect(r.checks[ISOLATION_CHECKS.permissions]!.detail).toBe(
      `publisher "${iso.publisher.user}" on vhost "${iso.vhost}": configure only fc.answer.delivery.v2; write only fc.answer.delivery.v2; read nothing`,
    );
    expect(r.checks[ISOLATION_CHECKS.bindings]!.detail).toBe(`2 bindings on fc.answer.delivery.v2, all for registered app keys (${[svcHall.appKey, other.appKey].sort().join(', ')})`);
    expect(r.checks[ISOLATION_CHECKS.queues]!.detail).toBe(`${CONSUMER_QUEUE} (classic, durable) and ${DLQ} (classic, durable) exist`);
    const lines = jsonLines(r.stdout).filter((l) => l['type'] === 'check' && String(l['check']).startsWith('isolation: '));
    expect(lines.map((l) => l['check'])).toEqual(ITEMS);
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'summary', command: 'doctor', exitCode: 0, fail: 0 });
    // the publisher really can publish the return probe's key and nothing outside the prefix
    expect(r.checks[ISOLATION_CHECKS.topic]!.detail).toContain("the return probe's key included");
  });

  it('the broker agrees with the judgement of the correct setup: the publisher publishes fc.snapshot.v2. keys only and cannot bind', async () => {
    const conn = await amqp.connect(iso.amqpUrl);
    conn.on('error', () => undefined);
    try {
      const publish = async (key: string) => {
        const ch = await conn.createConfirmChannel();
        // a refused publish closes the channel with the broker's code (403 ACCESS_REFUSED)
        let closedWith = '';
        ch.on('error', (err: { code?: number }) => (closedWith = String(err.code)));
        try {
          await new Promise<void>((resolve, reject) => ch.publish(EXCHANGE, key, Buffer.from('{}'), {}, (err: unknown) => (err ? reject(err) : resolve())));
          await ch.close();
          return 'ack';
        } catch (err) {
          return closedWith || (err as Error).message;
        }
      };
      expect(await publish(RETURN_PROBE_ROUTING_KEY)).toBe('ack');
      expect(await publish(`fc.snapshot.v2.${svcHall.appKey}.5`)).toBe('ack');
      expect(await publish('audit.all')).toBe('403');
      const ch = await conn.createChannel();
      ch.on('error', () => undefined);
      await expect(ch.bindQueue(CONSUMER_QUEUE, EXCHANGE, '#')).rejects.toMatchObject({ code: 403 });
    } finally {
      await conn.close().catch(() => undefined);
    }
    // the message published for svc-hall is in its queue; drain it so later tests see the same setup
    await mgmt('DELETE', api(`queues/{v}/${enc(CONSUMER_QUEUE)}/contents`));
  });

  it('the default vhost "/" in FCCTL_AMQP_URL is named', async () => {
    const url = new URL(iso.amqpUrl);
    url.pathname = '/';
    const r = await doctor({ FCCTL_AMQP_URL: url.toString() });
    expect(r.code).toBe(3);
    expect(r.checks[ISOLATION_CHECKS.vhost]).toMatchObject({ status: 'fail', detail: expect.stringContaining('FCCTL_AMQP_URL uses the default vhost "/"') });
    // the publisher has nothing on "/": the other items say so
    expect(r.checks[ISOLATION_CHECKS.permissions]).toMatchObject({ status: 'fail', detail: `publisher "${iso.publisher.user}" on vhost "/" has no permissions (it cannot publish to fc.answer.delivery.v2)` });
    expect(r.stdout + r.stderr).not.toContain(iso.publisher.password);
  });

  it('a publisher with ".*" permissions is named, each operation with what it also covers', async () => {
    await setPermissions({ configure: '.*', write: '.*', read: '.*' });
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.permissions, 'fail']]);
      const detail = r.checks[ISOLATION_CHECKS.permissions]!.detail;
      expect(detail).toContain(`configure ".*" also matches ${CONSUMER_QUEUE}, ${DLQ}`);
      expect(detail).toContain(`write ".*" also matches ${CONSUMER_QUEUE}`);
      expect(detail).toContain('read ".*" also matches fc.answer.delivery.v2');
      expect(detail).toContain('read on the exchange lets its holder bind a queue to it');
    } finally {
      await setPermissions(CORRECT_PERMISSIONS);
    }
  });

  it('write on a neighbouring exchange (an unescaped dot, no anchor) is named', async () => {
    await setPermissions({ configure: '^$', write: 'fc.answer.delivery.v2', read: '^$' });
    try {
      const r = await doctor();
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.permissions, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.permissions]!.detail).toContain('write "fc.answer.delivery.v2" also matches fc.answer.delivery.v2x, fc.answer.delivery.v2.dlx, xfc.answer.delivery.v2, fc_answer_delivery_v2');
    } finally {
      await setPermissions(CORRECT_PERMISSIONS);
    }
  });

  it('no topic permission on the exchange is named', async () => {
    await mgmt('DELETE', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`));
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.topic, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.topic]!.detail).toContain('has no topic permission on fc.answer.delivery.v2: without one every routing key may be published there');
    } finally {
      await setTopic();
    }
  });

  it('a topic permission that refuses the return probe is named', async () => {
    await mgmt('PUT', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`), { ...CORRECT_TOPIC, write: `^fc\\.snapshot\\.v2\\.${svcHall.appKey}\\.` });
    try {
      const r = await doctor();
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.topic, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.topic]!.detail).toContain(`refuses the return probe's key ${RETURN_PROBE_ROUTING_KEY}`);
    } finally {
      await setTopic();
    }
  });

  it('a "#" binding and a binding for an unregistered key are named with their destinations', async () => {
    const stranger = uniqueConsumerKey('stranger');
    await declareQueue('audit-all');
    await declareQueue('stranger.q');
    await bind('audit-all', '#');
    await bind('stranger.q', `fc.snapshot.v2.${stranger}.*`);
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.bindings, 'fail']]);
      const detail = r.checks[ISOLATION_CHECKS.bindings]!.detail;
      expect(detail).toContain('"#" → queue audit-all: "#" matches every routing key');
      expect(detail).toContain(`"fc.snapshot.v2.${stranger}.*" → queue stranger.q: ${stranger} is not an app key registered in application_info`);
      // the good bindings are not named
      expect(detail).not.toContain(svcHall.appKey);
    } finally {
      await deleteQueue('audit-all');
      await deleteQueue('stranger.q');
    }
  });

  it('a wildcard in place of the app key, to an exchange, is named', async () => {
    await mgmt('PUT', api('exchanges/{v}/spy.fanout'), { type: 'fanout', durable: false });
    await mgmt('POST', api(`bindings/{v}/e/${EXCHANGE}/e/spy.fanout`), { routing_key: 'fc.snapshot.v2.*.5' });
    try {
      const r = await doctor();
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.bindings, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.bindings]!.detail).toBe('"fc.snapshot.v2.*.5" → exchange spy.fanout: a wildcard in place of the app key matches every consumer\'s snapshots');
    } finally {
      await mgmt('DELETE', api('exchanges/{v}/spy.fanout'));
    }
  });

  it('a missing dlq, then a non-durable one, is named', async () => {
    await deleteQueue(DLQ);
    try {
      const missing = await doctor();
      expect(missing.code).toBe(3);
      expect(notOk(missing.checks)).toEqual([[ISOLATION_CHECKS.queues, 'fail']]);
      expect(missing.checks[ISOLATION_CHECKS.queues]!.detail).toBe(`${DLQ} does not exist on vhost "${iso.vhost}"`);
      await declareQueue(DLQ, false);
      const transient = await doctor();
      expect(notOk(transient.checks)).toEqual([[ISOLATION_CHECKS.queues, 'fail']]);
      expect(transient.checks[ISOLATION_CHECKS.queues]!.detail).toBe(`${DLQ} is not durable (it and its messages are lost when the broker restarts)`);
    } finally {
      await deleteQueue(DLQ);
      await declareQueue(DLQ);
    }
  });

  it('--consumer-queue names another queue: its missing queues are named', async () => {
    const r = await doctor({}, ['--consumer-queue', 'svc-other.q']);
    expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.queues, 'fail']]);
    expect(r.checks[ISOLATION_CHECKS.queues]!.detail).toBe(`svc-other.q does not exist on vhost "${iso.vhost}"; svc-other.q.dlq does not exist on vhost "${iso.vhost}"`);
  });

  it('an alternate-exchange policy (invisible to AMQP) is named', async () => {
    await mgmt('PUT', api('policies/{v}/spill'), { pattern: '^fc\\.answer\\.', definition: { 'alternate-exchange': 'amq.fanout' }, 'apply-to': 'exchanges', priority: 0 });
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.alternateExchange, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.alternateExchange]!.detail).toBe(
        'policy "spill" (pattern "^fc\\\\.answer\\\\.") gives it alternate-exchange "amq.fanout": unroutable messages go there instead of being returned (no NO_ROUTE, no return probe)',
      );
    } finally {
      await mgmt('DELETE', api('policies/{v}/spill'));
    }
  });

  it('several items broken at once: each is named, exit 3', async () => {
    await setPermissions({ configure: '.*', write: '.*', read: '.*' });
    await mgmt('DELETE', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`));
    await declareQueue('audit-all');
    await bind('audit-all', '#');
    await deleteQueue(DLQ);
    await mgmt('PUT', api('policies/{v}/spill'), { pattern: '.*', definition: { 'alternate-exchange': 'amq.fanout' }, 'apply-to': 'all' });
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual(ITEMS.slice(1).map((i) => [i, 'fail']));
      expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'summary', exitCode: 3 });
    } finally {
      await setPermissions(CORRECT_PERMISSIONS);
      await setTopic();
      await deleteQueue('audit-all');
      await declareQueue(DLQ);
      await mgmt('DELETE', api('policies/{v}/spill'));
    }
    // and put back, it passes again
    const again = await doctor();
    expect({ code: again.code, notOk: notOk(again.checks) }).toEqual({ code: 0, notOk: [] });
  });

  it('without the FC database the bindings cannot be checked against the registry: fail saying so', async () => {
    const r = await runCli(['--json', 'doctor', '--isolation'], { env: dbs.env({ FCCTL_FC_DATABASE_URL: '', FCCTL_AMQP_URL: iso.amqpUrl, FCCTL_AMQP_MANAGEMENT_URL: testManagementUrl() }) });
    expect(r.code).toBe(3);
    const line = jsonLines(r.stdout).find((l) => l['check'] === ISOLATION_CHECKS.bindings);
    expect(line).toMatchObject({ status: 'fail', detail: 'the registered app keys could not be read (FC database not configured), so no key was checked against application_info' });
  });

  it('a management user without the administrator tag: one failed line naming the tag; a wrong password: the credentials, never the password', async () => {
    const monitor = await iso.user('mon', 'monitoring');
    const r = await doctor({ FCCTL_AMQP_MANAGEMENT_URL: managementUrlAs(monitor.user, monitor.password) });
    expect(r.code).toBe(3);
    expect(ITEMS.filter((i) => r.checks[i] !== undefined)).toEqual([]);
    expect(r.checks[ISOLATION_CHECKS.api]).toMatchObject({ status: 'fail', detail: expect.stringMatching(new RegExp(`user "${monitor.user}" may not read .*Not administrator user.*needs a user with the administrator tag`)) });
    expect(r.stdout + r.stderr).not.toContain(monitor.password);

    const wrong = await doctor({ FCCTL_AMQP_MANAGEMENT_URL: managementUrlAs(undefined, 'wrong-SECRET-pw') });
    expect(wrong.code).toBe(3);
    expect(wrong.checks[ISOLATION_CHECKS.api]!.detail).toMatch(/:\*\*\*@127\.0\.0\.1:\d+\/?: the management API refused the credentials of user "[^"]+" \(HTTP 401\)$/);
    expect(wrong.stdout + wrong.stderr).not.toContain('wrong-SECRET-pw');
  });

  it('an unreachable management API is one failed line, password masked', async () => {
    // a port nothing listens on (fetch refuses port 1 itself, as a "bad port")
    const { createServer } = await import('node:net');
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as { port: number }).port;
    await new Promise((r) => server.close(r));
    const r = await doctor({ FCCTL_AMQP_MANAGEMENT_URL: `http://mon:pw-SECRET-9@127.0.0.1:${port}/` });
    expect(r.code).toBe(3);
    expect(r.checks[ISOLATION_CHECKS.api]).toMatchObject({ status: 'fail', detail: `cannot reach the RabbitMQ management API at http://mon:***@127.0.0.1:${port}/: ECONNREFUSED` });
    expect(r.stdout + r.stderr).not.toContain('pw-SECRET-9');
  });
});

describe('ManagementClient', () => {
  it('refuses a URL that is not http(s) (UsageError, password masked)', () => {
    for (const url of ['amqp://u:pw-SECRET@127.0.0.1:5672', 'ftp://h/', 'not a url']) {
      let err: unknown;
      try {
        new ManagementClient(url);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UsageError);
      expect(String((err as Error).message)).toMatch(/^amqpManagementUrl (must start with http:\/\/ or https:\/\/|is not a valid URL)/);
      expect(String((err as Error).message)).not.toContain('pw-SECRET');
    }
  });

  it('reads as the URL\'s user; a missing object is null, not an error', async () => {
    const client = new ManagementClient(testManagementUrl());
    expect(await client.vhostExists('fcctl-test-no-such-vhost')).toBe(false);
    expect(await client.exchange('fcctl-test-no-such-vhost', EXCHANGE)).toBeNull();
    expect(await client.queue('fcctl-test-no-such-vhost', CONSUMER_QUEUE)).toBeNull();
    expect(await client.bindingsFrom('fcctl-test-no-such-vhost', EXCHANGE)).toEqual([]);
    await expect(new ManagementClient(managementUrlAs(undefined, 'bad-pw')).vhostExists('/')).rejects.toBeInstanceOf(EnvironmentError);
  });

  it('a timeout is an EnvironmentError naming it', async () => {
    // a listener that accepts and never answers
    const { createServer } = await import('node:net');
    const server = createServer(() => undefined).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as { port: number }).port;
    try {
      await expect(new ManagementClient(`http://u:p@127.0.0.1:${port}`, { timeoutMs: 200 }).vhostExists('v')).rejects.toThrow('did not answer within 0.2 s (reading vhost v)');
    } finally {
      server.close();
    }
  });
});
