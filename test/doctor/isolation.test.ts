import amqp from 'amqplib';
import { afterAll, describe, expect } from 'vitest';
import { EnvironmentError, UsageError } from '../../src/lib/cli/exit.js';
import { ManagementClient } from '../../src/lib/amqp/management.js';
import { RETURN_PROBE_ROUTING_KEY } from '../../src/lib/amqp/connect.js';
import { CONSUMER_QUEUE, ISOLATION_CHECKS } from '../../src/lib/doctor/isolation/types.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { ISOLATION_ITEMS } from '../helpers/isolation.js';
import type { TestDatabases } from '../helpers/db.js';
import { insertRegistry, PUBLISHER, uniqueConsumerKey } from '../helpers/deliveries.js';
import { isolatedVhost, type IsolatedVhost, managementUrlAs, mgmt, testManagementUrl } from '../helpers/management.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'isolation', init: 'all' });

/**
 * `doctor --isolation` against the real broker: a vhost of its own, configured here as seed 000 §6
 * wants it, then each item broken on purpose (and put back) to see it named.
 */

const EXCHANGE = 'fc.answer.delivery.v2';
const DLQ = `${CONSUMER_QUEUE}.dlq`;
const ITEMS = ISOLATION_ITEMS;
/** the svc-hall consumer's permissions (seed 000 §6): its own prefix, and read on the exchange to bind */
const CONSUMER_PERMISSIONS = {
  configure: '^svc-hall\\.fc\\.answer\\.snapshot\\.v2',
  write: '^svc-hall\\.fc\\.answer\\.snapshot\\.v2',
  read: '^(svc-hall\\.fc\\.answer\\.snapshot\\.v2.*|fc\\.answer\\.delivery\\.v2)$',
};
const enc = encodeURIComponent;

describe('fcctl doctor --isolation (real broker and management API)', () => {
  let dbs: TestDatabases;
  let iso: IsolatedVhost;
  /** the consumer's user, given as --consumer-user */
  let consumer: { user: string; password: string };
  const svcHall = { id: 43, appCode: 'svc-hall', appKey: uniqueConsumerKey('svc') };
  const other = { id: 44, appCode: 'other-consumer', appKey: uniqueConsumerKey('oth') };
  const CORRECT_PERMISSIONS = {
    configure: '^fc\\.answer\\.delivery\\.v2$',
    write: '^fc\\.answer\\.delivery\\.v2$',
    read: '^$',
  };
  const CORRECT_TOPIC = { exchange: EXCHANGE, write: '^fc\\.snapshot\\.v2\\.', read: '' };

  const api = (path: string) => `/api/${path.replace('{v}', iso.path)}`;
  const declareQueue = (name: string, durable = true) =>
    mgmt('PUT', api(`queues/{v}/${enc(name)}`), { durable, auto_delete: false });
  const deleteQueue = (name: string) => mgmt('DELETE', api(`queues/{v}/${enc(name)}`), undefined, { allow404: true });
  const bind = (queue: string, key: string) =>
    mgmt('POST', api(`bindings/{v}/e/${EXCHANGE}/q/${enc(queue)}`), { routing_key: key });
  const setPermissions = (p: { configure: string; write: string; read: string }) =>
    mgmt('PUT', api(`permissions/{v}/${enc(iso.publisher.user)}`), p);
  const setTopic = () => mgmt('PUT', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`), CORRECT_TOPIC);
  const setUserPermissions = (user: string, p: { configure: string; write: string; read: string }) =>
    mgmt('PUT', api(`permissions/{v}/${enc(user)}`), p);
  const SCHOOL_QUEUE = `${CONSUMER_QUEUE}.school5`;

  const env = (extra: Record<string, string> = {}) =>
    dbs.env({ FCCTL_AMQP_URL: iso.amqpUrl, FCCTL_AMQP_MANAGEMENT_URL: testManagementUrl(), ...extra });
  /** `doctor --isolation --consumer-user <the consumer>`, and `args` (`consumerUser: false` leaves the option out) */
  const doctor = async (
    extra: Record<string, string> = {},
    args: string[] = [],
    options: { consumerUser?: boolean } = {},
  ) => {
    const users = options.consumerUser === false ? [] : ['--consumer-user', consumer.user];
    const r = await runCli(['--json', 'doctor', '--isolation', ...users, ...args], { env: env(extra) });
    const checks = Object.fromEntries(
      jsonLines(r.stdout)
        .filter((l) => l['type'] === 'check')
        .map((l) => [String(l['check']), l as { status: string; detail: string }]),
    );
    return { ...r, checks };
  };
  /** the items that did not pass, as [item, status] */
  const notOk = (checks: Record<string, { status: string }>) =>
    ITEMS.filter((i) => checks[i]?.status !== 'ok').map((i) => [i, checks[i]?.status]);
  /** doctor fails exactly `item` (exit 3), saying `detail`; `undo` then puts the broken item back, whatever happened */
  const expectFailsAlone = async (item: string, detail: string, undo: () => Promise<unknown>) => {
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[item, 'fail']]);
      expect(r.checks[item]!.detail).toBe(detail);
    } finally {
      await undo();
    }
  };

  test.beforeAll(async ({ dbs: services }) => {
    dbs = services;
    for (const row of [PUBLISHER, svcHall, other]) await insertRegistry(dbs.admin, dbs.fcName, row);
    iso = await isolatedVhost('iso');
    // the correct setup (docs/commands/doctor.md)
    await setPermissions(CORRECT_PERMISSIONS);
    await setTopic();
    consumer = await iso.user('svc', '');
    await setUserPermissions(consumer.user, CONSUMER_PERMISSIONS);
    await mgmt('PUT', api(`exchanges/{v}/${EXCHANGE}`), {
      type: 'topic',
      durable: true,
      auto_delete: false,
      internal: false,
      arguments: {},
    });
    await declareQueue(CONSUMER_QUEUE);
    await declareQueue(DLQ);
    await declareQueue(SCHOOL_QUEUE);
    await bind(CONSUMER_QUEUE, `fc.snapshot.v2.${svcHall.appKey}.*`);
    await bind(SCHOOL_QUEUE, `fc.snapshot.v2.${other.appKey}.5`);
  });
  afterAll(async () => {
    await iso?.drop();
  });

  test('passes on the correct setup: exit 0, every item ok, one JSON object per item', async () => {
    const r = await doctor();
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(notOk(r.checks)).toEqual([]);
    expect(r.checks[ISOLATION_CHECKS.permissions]!.detail).toBe(
      `publisher "${iso.publisher.user}" on vhost "${iso.vhost}": configure only fc.answer.delivery.v2; write only fc.answer.delivery.v2; read nothing`,
    );
    expect(r.checks[ISOLATION_CHECKS.bindings]!.detail).toBe(
      `2 bindings on fc.answer.delivery.v2, all to ${CONSUMER_QUEUE}* queues and for registered app keys (${[svcHall.appKey, other.appKey].sort().join(', ')})`,
    );
    expect(r.checks[ISOLATION_CHECKS.exchange]!.detail).toBe(
      'fc.answer.delivery.v2: topic, durable, not auto-delete, not internal',
    );
    // the test administrator (the management API's user) has .* on the vhost: named, allowed
    const admin = decodeURIComponent(new URL(testManagementUrl()).username);
    expect(r.checks[ISOLATION_CHECKS.readers]!.detail).toBe(
      `users on vhost "${iso.vhost}" who can read fc.answer.delivery.v2, and so bind a queue to it: the management API's own user "${admin}" (administrator, read ".*"); consumer user "${consumer.user}" (read ${JSON.stringify(CONSUMER_PERMISSIONS.read)})`,
    );
    expect(r.checks[ISOLATION_CHECKS.queues]!.detail).toBe(
      `${CONSUMER_QUEUE} (classic, durable) and ${DLQ} (classic, durable) exist`,
    );
    const lines = jsonLines(r.stdout).filter(
      (l) => l['type'] === 'check' && String(l['check']).startsWith('isolation: '),
    );
    expect(lines.map((l) => l['check'])).toEqual(ITEMS);
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'summary', command: 'doctor', exitCode: 0, fail: 0 });
    // the publisher really can publish the return probe's key and nothing outside the prefix
    expect(r.checks[ISOLATION_CHECKS.topic]!.detail).toContain("the return probe's key included");
  });

  test('the broker agrees with the judgement of the correct setup: the publisher publishes fc.snapshot.v2. keys only and cannot bind', async () => {
    const conn = await amqp.connect(iso.amqpUrl);
    conn.on('error', () => undefined);
    try {
      const publish = async (key: string) => {
        const ch = await conn.createConfirmChannel();
        // a refused publish closes the channel with the broker's code (403 ACCESS_REFUSED)
        let closedWith = '';
        ch.on('error', (err: { code?: number }) => (closedWith = String(err.code)));
        try {
          await new Promise<void>((resolve, reject) =>
            ch.publish(EXCHANGE, key, Buffer.from('{}'), {}, (err: unknown) => (err ? reject(err) : resolve())),
          );
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

  test('the default vhost "/" in FCCTL_AMQP_URL is named', async () => {
    const url = new URL(iso.amqpUrl);
    url.pathname = '/';
    const r = await doctor({ FCCTL_AMQP_URL: url.toString() });
    expect(r.code).toBe(3);
    expect(r.checks[ISOLATION_CHECKS.vhost]).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('FCCTL_AMQP_URL uses the default vhost "/"'),
    });
    // the publisher has nothing on "/": the other items say so
    expect(r.checks[ISOLATION_CHECKS.permissions]).toMatchObject({
      status: 'fail',
      detail: `publisher "${iso.publisher.user}" on vhost "/" has no permissions (it cannot publish to fc.answer.delivery.v2)`,
    });
    expect(r.stdout + r.stderr).not.toContain(iso.publisher.password);
  });

  test('a publisher with ".*" permissions is named, each operation with what it also covers', async () => {
    await setPermissions({ configure: '.*', write: '.*', read: '.*' });
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      // read .* also makes the publisher a reader of the exchange
      expect(notOk(r.checks)).toEqual([
        [ISOLATION_CHECKS.permissions, 'fail'],
        [ISOLATION_CHECKS.readers, 'fail'],
      ]);
      const detail = r.checks[ISOLATION_CHECKS.permissions]!.detail;
      expect(detail).toContain(`configure ".*" also matches ${CONSUMER_QUEUE}, ${DLQ}`);
      expect(detail).toContain(`write ".*" also matches ${CONSUMER_QUEUE}`);
      expect(detail).toContain('read ".*" also matches fc.answer.delivery.v2');
      expect(detail).toContain('read on the exchange lets its holder bind a queue to it');
    } finally {
      await setPermissions(CORRECT_PERMISSIONS);
    }
  });

  test('write on a neighbouring exchange (an unescaped dot, no anchor) is named', async () => {
    await setPermissions({ configure: '^$', write: 'fc.answer.delivery.v2', read: '^$' });
    try {
      const r = await doctor();
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.permissions, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.permissions]!.detail).toContain(
        'write "fc.answer.delivery.v2" also matches fc.answer.delivery.v2x, fc.answer.delivery.v2.dlx, xfc.answer.delivery.v2, fc_answer_delivery_v2',
      );
    } finally {
      await setPermissions(CORRECT_PERMISSIONS);
    }
  });

  test('no topic permission on the exchange is named', async () => {
    await mgmt('DELETE', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`));
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.topic, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.topic]!.detail).toContain(
        'has no topic permission on fc.answer.delivery.v2: without one every routing key may be published there',
      );
    } finally {
      await setTopic();
    }
  });

  test('a topic permission that refuses the return probe is named', async () => {
    await mgmt('PUT', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`), {
      ...CORRECT_TOPIC,
      write: `^fc\\.snapshot\\.v2\\.${svcHall.appKey}\\.`,
    });
    try {
      const r = await doctor();
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.topic, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.topic]!.detail).toContain(
        `refuses the return probe's key ${RETURN_PROBE_ROUTING_KEY}`,
      );
    } finally {
      await setTopic();
    }
  });

  test('a "#" binding and a binding for an unregistered key, to queues of the consumer\'s prefix, are named with their destinations', async () => {
    const stranger = uniqueConsumerKey('stranger');
    const audit = `${CONSUMER_QUEUE}.audit`;
    const strangerQueue = `${CONSUMER_QUEUE}.stranger`;
    await declareQueue(audit);
    await declareQueue(strangerQueue);
    await bind(audit, '#');
    await bind(strangerQueue, `fc.snapshot.v2.${stranger}.*`);
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.bindings, 'fail']]);
      const detail = r.checks[ISOLATION_CHECKS.bindings]!.detail;
      expect(detail).toBe(
        `"#" → queue ${audit}: "#" matches every routing key; "fc.snapshot.v2.${stranger}.*" → queue ${strangerQueue}: ${stranger} is not an app key registered in application_info`,
      );
    } finally {
      await deleteQueue(audit);
      await deleteQueue(strangerQueue);
    }
  });

  test('a registered key bound to a rogue queue, and an exchange-to-exchange binding to a fanout feeding one, are named with destination and type', async () => {
    await declareQueue('rogue.q');
    await bind('rogue.q', `fc.snapshot.v2.${svcHall.appKey}.*`);
    await mgmt('PUT', api('exchanges/{v}/spy.fanout'), { type: 'fanout', durable: false });
    await declareQueue('rogue.spy');
    await mgmt('POST', api('bindings/{v}/e/spy.fanout/q/rogue.spy'), { routing_key: '' });
    await mgmt('POST', api(`bindings/{v}/e/${EXCHANGE}/e/spy.fanout`), {
      routing_key: `fc.snapshot.v2.${other.appKey}.5`,
    });
    try {
      // the broker really routes a snapshot for the other consumer to both rogue queues
      await mgmt('POST', api(`exchanges/{v}/${EXCHANGE}/publish`), {
        routing_key: `fc.snapshot.v2.${other.appKey}.5`,
        payload: '{}',
        payload_encoding: 'string',
        properties: {},
      });
      const depth = async (q: string) =>
        (
          (await mgmt('POST', api(`queues/{v}/${enc(q)}/get`), {
            count: 10,
            ackmode: 'ack_requeue_false',
            encoding: 'auto',
          })) as unknown[]
        ).length;
      expect(await depth('rogue.spy')).toBe(1);
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.bindings, 'fail']]);
      const detail = r.checks[ISOLATION_CHECKS.bindings]!.detail;
      expect(detail).toContain(
        `"fc.snapshot.v2.${svcHall.appKey}.*" → queue rogue.q: queue rogue.q is not the consumer's (its name does not start with ${CONSUMER_QUEUE})`,
      );
      expect(detail).toContain(
        `"fc.snapshot.v2.${other.appKey}.5" → exchange spy.fanout: an exchange-to-exchange binding sends snapshots on to wherever exchange spy.fanout routes them (bind only the consumer's queues)`,
      );
      // the consumer's own bindings are not named
      expect(detail).not.toContain(SCHOOL_QUEUE);
      // --consumer-queue moves the prefix: then the default consumer queue's bindings are rogue too
      const moved = await doctor({}, ['--consumer-queue', 'rogue.']);
      expect(moved.checks[ISOLATION_CHECKS.bindings]!.detail).toContain(
        `→ queue ${CONSUMER_QUEUE}: queue ${CONSUMER_QUEUE} is not the consumer's (its name does not start with rogue.)`,
      );
      expect(moved.checks[ISOLATION_CHECKS.bindings]!.detail).not.toContain('→ queue rogue.q:');
    } finally {
      await deleteQueue('rogue.q');
      await deleteQueue('rogue.spy');
      await mgmt('DELETE', api('exchanges/{v}/spy.fanout'));
      await mgmt('DELETE', api(`queues/{v}/${enc(SCHOOL_QUEUE)}/contents`));
    }
  });

  test('a wildcard in place of the app key, to an exchange, is named with both problems', async () => {
    await mgmt('PUT', api('exchanges/{v}/spy.fanout'), { type: 'fanout', durable: false });
    await mgmt('POST', api(`bindings/{v}/e/${EXCHANGE}/e/spy.fanout`), { routing_key: 'fc.snapshot.v2.*.5' });
    await expectFailsAlone(
      ISOLATION_CHECKS.bindings,
      '"fc.snapshot.v2.*.5" → exchange spy.fanout: a wildcard in place of the app key matches every consumer\'s snapshots, and an exchange-to-exchange binding sends snapshots on to wherever exchange spy.fanout routes them (bind only the consumer\'s queues)',
      () => mgmt('DELETE', api('exchanges/{v}/spy.fanout')),
    );
  });

  test('a second user who can read the exchange (.* .* .*) fails, and can really bind; an administrator warns; without --consumer-user every reader is a warning', async () => {
    const rogue = await iso.user('rogue', '');
    const ops = await iso.user('ops', 'administrator');
    await setUserPermissions(rogue.user, { configure: '.*', write: '.*', read: '.*' });
    try {
      // the premise: read on the exchange is enough to bind a queue of one's own to it
      const conn = await amqp.connect(
        new URL(
          iso.amqpUrl.replace(
            `${enc(iso.publisher.user)}:${enc(iso.publisher.password)}`,
            `${enc(rogue.user)}:${enc(rogue.password)}`,
          ),
        ).toString(),
      );
      conn.on('error', () => undefined);
      try {
        const ch = await conn.createChannel();
        await ch.assertQueue('rogue.own', { durable: false });
        await ch.bindQueue('rogue.own', EXCHANGE, `fc.snapshot.v2.${svcHall.appKey}.*`);
        await ch.deleteQueue('rogue.own');
      } finally {
        await conn.close().catch(() => undefined);
      }
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.readers, 'fail']]);
      const detail = r.checks[ISOLATION_CHECKS.readers]!.detail;
      expect(detail).toContain(`"${rogue.user}" (read ".*") is not a --consumer-user`);
      expect(detail).toContain(`consumer user "${consumer.user}"`);

      // an administrator with read on the vhost, and no one else: a warning (exit 0)
      await mgmt('DELETE', api(`permissions/{v}/${enc(rogue.user)}`));
      await setUserPermissions(ops.user, { configure: '', write: '', read: 'fc\\.answer' });
      const admin = await doctor();
      expect({ code: admin.code, notOk: notOk(admin.checks) }).toEqual({
        code: 0,
        notOk: [[ISOLATION_CHECKS.readers, 'warn']],
      });
      expect(admin.checks[ISOLATION_CHECKS.readers]!.detail).toContain(
        `"${ops.user}" (administrator, read "fc\\\\.answer") is not a --consumer-user (an administrator can give itself any permission anyway`,
      );

      // without --consumer-user doctor cannot tell the consumer from anyone else: each reader is named, a warning
      await mgmt('DELETE', api(`permissions/{v}/${enc(ops.user)}`));
      const anonymous = await doctor({}, [], { consumerUser: false });
      expect({ code: anonymous.code, notOk: notOk(anonymous.checks) }).toEqual({
        code: 0,
        notOk: [[ISOLATION_CHECKS.readers, 'warn']],
      });
      const anonymousDetail = anonymous.checks[ISOLATION_CHECKS.readers]!.detail;
      expect(anonymousDetail).toContain(
        `bind a queue to it: "${consumer.user}" (read ${JSON.stringify(CONSUMER_PERMISSIONS.read)}); the management API's own user`,
      );
      expect(anonymousDetail).toContain("; no --consumer-user given: name the consumer's user(s) with --consumer-user");
    } finally {
      await mgmt('DELETE', api(`permissions/{v}/${enc(rogue.user)}`), undefined, { allow404: true });
      await mgmt('DELETE', api(`permissions/{v}/${enc(ops.user)}`), undefined, { allow404: true });
    }
    // the publisher can never be a consumer user: exit 2 before anything is read
    const refused = await doctor({}, ['--consumer-user', iso.publisher.user]);
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: 2,
      stderr: `fcctl: --consumer-user "${iso.publisher.user}" is the publisher of FCCTL_AMQP_URL: the publisher must read nothing, it cannot be a consumer user\n`,
    });
  });

  test('a topic permission with an alternative outside the prefix (^amq\\.) fails, and the broker really lets such keys through', async () => {
    const write = '^fc\\.snapshot\\.v2\\.|^amq\\.';
    await mgmt('PUT', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`), { ...CORRECT_TOPIC, write });
    try {
      const conn = await amqp.connect(iso.amqpUrl);
      conn.on('error', () => undefined);
      try {
        const ch = await conn.createConfirmChannel();
        await new Promise<void>((resolve, reject) =>
          ch.publish(EXCHANGE, 'amq.anything', Buffer.from('{}'), {}, (err: unknown) =>
            err ? reject(err) : resolve(),
          ),
        );
        await ch.close();
      } finally {
        await conn.close().catch(() => undefined);
      }
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual([[ISOLATION_CHECKS.topic, 'fail']]);
      expect(r.checks[ISOLATION_CHECKS.topic]!.detail).toBe(
        `publisher "${iso.publisher.user}" on vhost "${iso.vhost}": topic write ${JSON.stringify(write)} on fc.answer.delivery.v2: its top-level alternative "^amq\\\\." allows keys starting "amq.", outside fc.snapshot.v2. (only fc.snapshot.v2. keys may be published)`,
      );
    } finally {
      await setTopic();
    }
  });

  test("the delivery exchange as a fanout, then non-durable, auto-delete and internal, is named (and plain doctor's re-declare still fails on 406)", async () => {
    const x = await isolatedVhost('isox');
    const xapi = (path: string) => `/api/${path.replace('{v}', x.path)}`;
    try {
      await mgmt('PUT', xapi(`permissions/{v}/${enc(x.publisher.user)}`), CORRECT_PERMISSIONS);
      await mgmt('PUT', xapi(`topic-permissions/{v}/${enc(x.publisher.user)}`), CORRECT_TOPIC);
      for (const q of [CONSUMER_QUEUE, DLQ])
        await mgmt('PUT', xapi(`queues/{v}/${enc(q)}`), { durable: true, auto_delete: false });
      const run = async () => {
        const r = await runCli(['--json', 'doctor', '--isolation'], {
          env: dbs.env({ FCCTL_AMQP_URL: x.amqpUrl, FCCTL_AMQP_MANAGEMENT_URL: testManagementUrl() }),
        });
        return {
          code: r.code,
          checks: Object.fromEntries(
            jsonLines(r.stdout)
              .filter((l) => l['type'] === 'check')
              .map((l) => [String(l['check']), l as { status: string; detail: string }]),
          ),
        };
      };
      await mgmt('PUT', xapi(`exchanges/{v}/${EXCHANGE}`), {
        type: 'fanout',
        durable: true,
        auto_delete: false,
        internal: false,
        arguments: {},
      });
      const fanout = await run();
      expect(fanout.code).toBe(3);
      expect(fanout.checks[ISOLATION_CHECKS.exchange]).toEqual(
        expect.objectContaining({
          status: 'fail',
          detail: `fc.answer.delivery.v2 on vhost "${x.vhost}" is a fanout exchange, not topic (it sends every snapshot to every bound queue, whatever its routing key)`,
        }),
      );
      // the publisher may configure the exchange here: its re-declare is refused 406, a failure
      expect(fanout.checks['delivery exchange']).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(/^fc\.answer\.delivery\.v2 exists but is not a durable topic exchange: .*406/),
      });

      await mgmt('DELETE', xapi(`exchanges/{v}/${EXCHANGE}`));
      await mgmt('PUT', xapi(`exchanges/{v}/${EXCHANGE}`), {
        type: 'topic',
        durable: false,
        auto_delete: true,
        internal: true,
        arguments: {},
      });
      const loose = await run();
      expect(loose.code).toBe(3);
      expect(loose.checks[ISOLATION_CHECKS.exchange]).toMatchObject({
        status: 'fail',
        detail: `fc.answer.delivery.v2 on vhost "${x.vhost}" is not durable (it is gone after a broker restart, and whoever declares it first then decides its type and arguments); auto-delete (it goes with its last binding, and whoever declares it first then decides its type and arguments); internal (clients cannot publish to it)`,
      });
    } finally {
      await x.drop();
    }
  });

  test('a least-privilege publisher (configure nothing): plain doctor passes, saying the exchange was not re-declared; --probe --isolation exit 0', async () => {
    await setPermissions({ configure: '^$', write: '^fc\\.answer\\.delivery\\.v2$', read: '^$' });
    try {
      const plain = await runCli(['--json', 'doctor'], { env: dbs.env({ FCCTL_AMQP_URL: iso.amqpUrl }) });
      const checks = Object.fromEntries(
        jsonLines(plain.stdout)
          .filter((l) => l['type'] === 'check')
          .map((l) => [String(l['check']), l]),
      );
      expect({ code: plain.code, stderr: plain.stderr }).toEqual({ code: 0, stderr: '' });
      expect(checks['delivery exchange']).toMatchObject({
        status: 'ok',
        detail:
          'fc.answer.delivery.v2 exists; its type and durability were not verified: the publisher may not configure it (re-declaring it was refused, 403 ACCESS_REFUSED), as seed 000 §6 asks; doctor --isolation verifies them through the management API',
      });
      const full = await doctor({}, ['--probe']);
      expect({ code: full.code, stderr: full.stderr, notOk: notOk(full.checks) }).toEqual({
        code: 0,
        stderr: '',
        notOk: [],
      });
      expect(full.checks['delivery exchange']!.status).toBe('ok');
      expect(full.checks['mandatory return probe']!.status).toBe('ok');
      expect(full.checks[ISOLATION_CHECKS.permissions]!.detail).toContain(
        'configure nothing; write only fc.answer.delivery.v2; read nothing',
      );
      expect(full.checks[ISOLATION_CHECKS.exchange]!.detail).toBe(
        'fc.answer.delivery.v2: topic, durable, not auto-delete, not internal',
      );
    } finally {
      await setPermissions(CORRECT_PERMISSIONS);
    }
  });

  test('a missing dlq, then a non-durable one, is named', async () => {
    await deleteQueue(DLQ);
    try {
      const missing = await doctor();
      expect(missing.code).toBe(3);
      expect(notOk(missing.checks)).toEqual([[ISOLATION_CHECKS.queues, 'fail']]);
      expect(missing.checks[ISOLATION_CHECKS.queues]!.detail).toBe(`${DLQ} does not exist on vhost "${iso.vhost}"`);
      await declareQueue(DLQ, false);
      const transient = await doctor();
      expect(notOk(transient.checks)).toEqual([[ISOLATION_CHECKS.queues, 'fail']]);
      expect(transient.checks[ISOLATION_CHECKS.queues]!.detail).toBe(
        `${DLQ} is not durable (it and its messages are lost when the broker restarts)`,
      );
    } finally {
      await deleteQueue(DLQ);
      await declareQueue(DLQ);
    }
  });

  test('--consumer-queue names another queue: its missing queues are named, and the bindings to other queues', async () => {
    const r = await doctor({}, ['--consumer-queue', 'svc-other.q']);
    expect(notOk(r.checks)).toEqual([
      [ISOLATION_CHECKS.bindings, 'fail'],
      [ISOLATION_CHECKS.queues, 'fail'],
    ]);
    expect(r.checks[ISOLATION_CHECKS.bindings]!.detail).toContain(
      `→ queue ${CONSUMER_QUEUE}: queue ${CONSUMER_QUEUE} is not the consumer's (its name does not start with svc-other.q)`,
    );
    expect(r.checks[ISOLATION_CHECKS.queues]!.detail).toBe(
      `svc-other.q does not exist on vhost "${iso.vhost}"; svc-other.q.dlq does not exist on vhost "${iso.vhost}"`,
    );
  });

  test('an alternate-exchange policy (invisible to AMQP) is named', async () => {
    await mgmt('PUT', api('policies/{v}/spill'), {
      pattern: '^fc\\.answer\\.',
      definition: { 'alternate-exchange': 'amq.fanout' },
      'apply-to': 'exchanges',
      priority: 0,
    });
    await expectFailsAlone(
      ISOLATION_CHECKS.alternateExchange,
      'policy "spill" (pattern "^fc\\\\.answer\\\\.") gives it alternate-exchange "amq.fanout": unroutable messages go there instead of being returned (no NO_ROUTE, no return probe)',
      () => mgmt('DELETE', api('policies/{v}/spill')),
    );
  });

  test('several items broken at once: each is named, exit 3', async () => {
    // the publisher's read .* fails its permissions and makes it a reader of the exchange
    await setPermissions({ configure: '.*', write: '.*', read: '.*' });
    await mgmt('DELETE', api(`topic-permissions/{v}/${enc(iso.publisher.user)}`));
    await declareQueue('audit-all');
    await bind('audit-all', '#');
    await deleteQueue(DLQ);
    await mgmt('PUT', api('policies/{v}/spill'), {
      pattern: '.*',
      definition: { 'alternate-exchange': 'amq.fanout' },
      'apply-to': 'all',
    });
    try {
      const r = await doctor();
      expect(r.code).toBe(3);
      expect(notOk(r.checks)).toEqual(
        ITEMS.filter((i) => i !== ISOLATION_CHECKS.vhost && i !== ISOLATION_CHECKS.exchange).map((i) => [i, 'fail']),
      );
      expect(r.checks[ISOLATION_CHECKS.readers]!.detail).toContain(
        `the publisher "${iso.publisher.user}" (read ".*"): it must read nothing`,
      );
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

  test('without the FC database the bindings cannot be checked against the registry: fail saying so', async () => {
    const r = await runCli(['--json', 'doctor', '--isolation'], {
      env: dbs.env({
        FCCTL_FC_DATABASE_URL: '',
        FCCTL_AMQP_URL: iso.amqpUrl,
        FCCTL_AMQP_MANAGEMENT_URL: testManagementUrl(),
      }),
    });
    expect(r.code).toBe(3);
    const line = jsonLines(r.stdout).find((l) => l['check'] === ISOLATION_CHECKS.bindings);
    expect(line).toMatchObject({
      status: 'fail',
      detail:
        'the registered app keys could not be read (FC database not configured), so no key was checked against application_info',
    });
  });

  test('a management user without the administrator tag: one failed line naming the tag; a wrong password: the credentials, never the password', async () => {
    const monitor = await iso.user('mon', 'monitoring');
    const r = await doctor({ FCCTL_AMQP_MANAGEMENT_URL: managementUrlAs(monitor.user, monitor.password) });
    expect(r.code).toBe(3);
    expect(ITEMS.filter((i) => r.checks[i] !== undefined)).toEqual([]);
    expect(r.checks[ISOLATION_CHECKS.api]).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(
        new RegExp(
          `user "${monitor.user}" may not read .*Not administrator user.*needs a user with the administrator tag`,
        ),
      ),
    });
    expect(r.stdout + r.stderr).not.toContain(monitor.password);

    const wrong = await doctor({ FCCTL_AMQP_MANAGEMENT_URL: managementUrlAs(undefined, 'wrong-SECRET-pw') });
    expect(wrong.code).toBe(3);
    expect(wrong.checks[ISOLATION_CHECKS.api]!.detail).toMatch(
      /:\*\*\*@127\.0\.0\.1:\d+\/?: the management API refused the credentials of user "[^"]+" \(HTTP 401\)$/,
    );
    expect(wrong.stdout + wrong.stderr).not.toContain('wrong-SECRET-pw');
  });

  test('an unreachable management API is one failed line, password masked', async () => {
    // a port nothing listens on (fetch refuses port 1 itself, as a "bad port")
    const { createServer } = await import('node:net');
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as { port: number }).port;
    await new Promise((r) => server.close(r));
    const r = await doctor({ FCCTL_AMQP_MANAGEMENT_URL: `http://mon:pw-SECRET-9@127.0.0.1:${port}/` });
    expect(r.code).toBe(3);
    expect(r.checks[ISOLATION_CHECKS.api]).toMatchObject({
      status: 'fail',
      detail: `cannot reach the RabbitMQ management API at http://mon:***@127.0.0.1:${port}/: ECONNREFUSED`,
    });
    expect(r.stdout + r.stderr).not.toContain('pw-SECRET-9');
  });
});

describe('ManagementClient', () => {
  test('refuses a URL that is not http(s) (UsageError, password masked)', () => {
    for (const url of ['amqp://u:pw-SECRET@127.0.0.1:5672', 'ftp://h/', 'not a url']) {
      let err: unknown;
      try {
        new ManagementClient(url);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UsageError);
      expect(String((err as Error).message)).toMatch(
        /^amqpManagementUrl (must start with http:\/\/ or https:\/\/|is not a valid URL)/,
      );
      expect(String((err as Error).message)).not.toContain('pw-SECRET');
    }
  });

  test("reads as the URL's user; a missing object is null, not an error", async () => {
    const client = new ManagementClient(testManagementUrl());
    expect(await client.vhostExists('fcctl-test-no-such-vhost')).toBe(false);
    expect(await client.exchange('fcctl-test-no-such-vhost', EXCHANGE)).toBeNull();
    expect(await client.queue('fcctl-test-no-such-vhost', CONSUMER_QUEUE)).toBeNull();
    expect(await client.bindingsFrom('fcctl-test-no-such-vhost', EXCHANGE)).toEqual([]);
    await expect(new ManagementClient(managementUrlAs(undefined, 'bad-pw')).vhostExists('/')).rejects.toBeInstanceOf(
      EnvironmentError,
    );
  });

  test('a timeout is an EnvironmentError naming it', async () => {
    // a listener that accepts and never answers
    const { createServer } = await import('node:net');
    const server = createServer(() => undefined).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as { port: number }).port;
    try {
      await expect(
        new ManagementClient(`http://u:p@127.0.0.1:${port}`, { timeoutMs: 200 }).vhostExists('v'),
      ).rejects.toThrow('did not answer within 0.2 s (reading vhost v)');
    } finally {
      server.close();
    }
  });
});
