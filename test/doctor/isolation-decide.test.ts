import { describe, expect, it } from 'vitest';
import type { ExchangeInfo, Policy, QueueInfo, UserPermissions } from '../../src/lib/amqp/management.js';
import { redeclareCheck } from '../../src/lib/doctor/decide.js';
import {
  alternateExchangeCheck,
  bindingDestinationProblem,
  bindingProblem,
  bindingsCheck,
  decideIsolation,
  deliveryExchangeCheck,
  isolationVhostCheck,
  permissionsCheck,
  externalWithoutUser,
  publisherOf,
  queuesCheck,
  readersCheck,
  topicPermissionsCheck,
} from '../../src/lib/doctor/isolation/decide.js';
import {
  exactNames,
  judgePermission,
  outsideAlternatives,
  provablePrefixes,
  readsExchange,
  resourceSamples,
  topLevelAlternatives,
} from '../../src/lib/doctor/isolation/permissions.js';
import { CONSUMER_QUEUE, type IsolationFacts, ISOLATION_CHECKS } from '../../src/lib/doctor/isolation/types.js';
import { RETURN_PROBE_ROUTING_KEY } from '../../src/lib/amqp/connect.js';
import { ISOLATION_ITEMS } from '../helpers/isolation.js';

const EXCHANGE = 'fc.answer.delivery.v2';
const DLQ = `${CONSUMER_QUEUE}.dlq`;
const durable = (name: string, extra: Partial<QueueInfo> = {}): QueueInfo => ({
  name,
  durable: true,
  autoDelete: false,
  exclusive: false,
  type: 'classic',
  ...extra,
});
const policy = (
  name: string,
  pattern: string,
  definition: Record<string, unknown>,
  extra: Partial<Policy> = {},
): Policy => ({ name, pattern, applyTo: 'exchanges', priority: 0, definition, ...extra });
const topicExchange = (extra: Partial<ExchangeInfo> = {}): ExchangeInfo => ({
  name: EXCHANGE,
  type: 'topic',
  durable: true,
  autoDelete: false,
  internal: false,
  arguments: {},
  policy: null,
  ...extra,
});
const perm = (user: string, read: string, configure = '^$', write = '^$'): UserPermissions => ({
  user,
  configure,
  write,
  read,
});
/** the svc-hall consumer's own permissions (seed 000 §6): its prefix, and read on the exchange to bind */
const CONSUMER_READ = '^(svc-hall\\.fc\\.answer\\.snapshot\\.v2.*|fc\\.answer\\.delivery\\.v2)$';

/** The correct setup of the README: every item passes. */
function correct(): IsolationFacts {
  return {
    vhost: 'fcctl-prod',
    vhostExists: true,
    publisher: 'fc-publisher',
    consumerQueue: CONSUMER_QUEUE,
    permissions: { configure: '^fc\\.answer\\.delivery\\.v2$', write: '^fc\\.answer\\.delivery\\.v2$', read: '^$' },
    topicPermissions: [{ exchange: EXCHANGE, write: '^fc\\.snapshot\\.v2\\.', read: '' }],
    exchange: topicExchange(),
    policies: [],
    operatorPolicies: [],
    bindings: [
      {
        source: EXCHANGE,
        destination: CONSUMER_QUEUE,
        destinationType: 'queue',
        routingKey: 'fc.snapshot.v2.svchall.*',
      },
      {
        source: EXCHANGE,
        destination: `${CONSUMER_QUEUE}.school17`,
        destinationType: 'queue',
        routingKey: 'fc.snapshot.v2.c2.17',
      },
    ],
    queues: { [CONSUMER_QUEUE]: durable(CONSUMER_QUEUE), [DLQ]: durable(DLQ) },
    appKeys: { ok: true, keys: ['100021', 'svchall', 'c2'] },
    vhostPermissions: [
      perm('fc-publisher', '^$', '^fc\\.answer\\.delivery\\.v2$', '^fc\\.answer\\.delivery\\.v2$'),
      perm(
        'svc-hall',
        CONSUMER_READ,
        '^svc-hall\\.fc\\.answer\\.snapshot\\.v2',
        '^svc-hall\\.fc\\.answer\\.snapshot\\.v2',
      ),
      perm('ops', '.*', '.*', '.*'),
    ],
    userTags: { ops: ['administrator'], 'svc-hall': [] },
    consumerUsers: ['svc-hall'],
    managementUser: 'ops',
  };
}

describe('publisherOf: the user and vhost amqplib reads from an AMQP URL', () => {
  it.each([
    ['amqp://pub:pw@mq:5672/fcctl', { user: 'pub', vhost: 'fcctl' }],
    ['amqp://pub:pw@mq:5672', { user: 'pub', vhost: '/' }],
    ['amqp://pub:pw@mq:5672/', { user: 'pub', vhost: '/' }],
    ['amqp://pub:pw@mq:5672/%2F', { user: 'pub', vhost: '/' }],
    ['amqp://p%40b:pw@mq/v%2Fx', { user: 'p@b', vhost: 'v/x' }],
    ['amqp://mq/fcctl', { user: 'guest', vhost: 'fcctl' }],
    ['amqps://u@mq/a%20b', { user: 'u', vhost: 'a b' }],
  ])('%s', (url, expected) => {
    expect(publisherOf(url)).toEqual(expected);
  });
  it('not a URL: null', () => {
    expect(publisherOf('*')).toBeNull();
    expect(publisherOf('amqp://u@mq/%E0%A4%A')).toBeNull();
  });
});

describe('externalWithoutUser: --isolation cannot know an EXTERNAL login the URL does not name', () => {
  it.each([
    ['amqps://mq/fcctl?certfile=/c&keyfile=/k&auth_mechanism=external', true],
    ['amqps://mq/fcctl?certfile=/c&keyfile=/k&auth_mechanism=EXTERNAL', true],
    ['amqps://fcctl-client@mq/fcctl?certfile=/c&keyfile=/k&auth_mechanism=external', false],
    ['amqps://mq/fcctl?certfile=/c&keyfile=/k', false],
    ['amqp://mq/fcctl', false],
    ['*', false],
  ])('%s: %s', (url, expected) => {
    expect(externalWithoutUser(url)).toBe(expected);
  });
  it("with the login as the URL's user, that user is the publisher checked", () => {
    expect(publisherOf('amqps://fcctl-client@mq/fcctl?auth_mechanism=external')).toEqual({
      user: 'fcctl-client',
      vhost: 'fcctl',
    });
  });
});

describe('regex forms', () => {
  it.each([
    ['', ['']],
    ['^$', ['']],
    ['^fc\\.answer\\.delivery\\.v2$', [EXCHANGE]],
    ['^(fc\\.answer\\.delivery\\.v2|other)$', [EXCHANGE, 'other']],
    ['^(?:a|b)$', ['a', 'b']],
    ['^a$|^b$', ['a', 'b']],
    ['^a\\-b_c$', ['a-b_c']],
    ['.*', null],
    ['^fc\\.answer\\.delivery\\.v2', null],
    ['fc\\.answer\\.delivery\\.v2$', null],
    ['^fc.answer.delivery.v2$', null],
    ['^a\\$', null],
    ['^a$|b', null],
    ['^(a)(b)$', null],
    ['^a?$', null],
    ['^\\d$', null],
    ['^[a]$', null],
    ['^(a|b$', null],
  ])('exactNames(%j) = %j', (re, names) => {
    expect(exactNames(re)).toEqual(names);
  });

  it.each([
    ['a|b(c|d)', ['a', 'b(c|d)']],
    ['a\\|b', ['a\\|b']],
    ['[|]|x', ['[|]', 'x']],
    ['[]|]|x', ['[]|]', 'x']],
    ['(a|b', null],
    ['a)|b', null],
    ['[abc', null],
  ])('topLevelAlternatives(%j) = %j', (re, parts) => {
    expect(topLevelAlternatives(re)).toEqual(parts);
  });

  it.each([
    ['^fc\\.snapshot\\.v2\\.', ['fc.snapshot.v2.']],
    ['^fc\\.snapshot\\.v2\\.[^.]+\\.[0-9]+$', ['fc.snapshot.v2.']],
    ['^fc\\.snapshot\\.v2\\.?', ['fc.snapshot.v2']],
    ['^fc\\.snapshot\\.v2\\.|^x', ['fc.snapshot.v2.', 'x']],
    ['^fc.snapshot', ['fc']],
    ['fc\\.snapshot\\.v2\\.', null],
    ['^a|b', null],
  ])('provablePrefixes(%j) = %j', (re, prefixes) => {
    expect(provablePrefixes(re)).toEqual(prefixes);
  });
});

describe('publisher permissions: configure nothing or only the exchange, write only the exchange, read nothing', () => {
  const samples = resourceSamples(CONSUMER_QUEUE);
  it.each([
    // [configure, write, read, status, what the detail says]
    [
      '^fc\\.answer\\.delivery\\.v2$',
      '^fc\\.answer\\.delivery\\.v2$',
      '^$',
      'ok',
      'configure only fc.answer.delivery.v2; write only fc.answer.delivery.v2; read nothing',
    ],
    [
      '',
      '^fc\\.answer\\.delivery\\.v2$',
      '',
      'ok',
      'configure nothing; write only fc.answer.delivery.v2; read nothing',
    ],
    ['^$', '^(fc\\.answer\\.delivery\\.v2)$', '^$', 'ok', 'configure nothing'],
    [
      '.*',
      '.*',
      '.*',
      'fail',
      'configure ".*" also matches svc-hall.fc.answer.snapshot.v2, svc-hall.fc.answer.snapshot.v2.dlq, amq.default',
    ],
    ['^$', '.*', '^$', 'fail', 'write ".*" also matches svc-hall.fc.answer.snapshot.v2'],
    [
      '^$',
      '^fc\\.answer\\.delivery\\.v2$',
      '.*',
      'fail',
      'read ".*" also matches fc.answer.delivery.v2, svc-hall.fc.answer.snapshot.v2',
    ],
    [
      '^$',
      '^fc\\.answer\\.delivery\\.v2$',
      '^fc\\.answer\\.delivery\\.v2$',
      'fail',
      'read "^fc\\\\.answer\\\\.delivery\\\\.v2$" covers fc.answer.delivery.v2 (must match nothing: read on the exchange lets its holder bind a queue to it)',
    ],
    [
      '^$',
      '^fc\\.answer\\.delivery\\.v2',
      '^$',
      'fail',
      'write "^fc\\\\.answer\\\\.delivery\\\\.v2" also matches fc.answer.delivery.v2x, fc.answer.delivery.v2.dlx',
    ],
    ['^$', 'fc\\.answer\\.delivery\\.v2$', '^$', 'fail', 'also matches xfc.answer.delivery.v2'],
    ['^$', '^fc.answer.delivery.v2$', '^$', 'fail', 'also matches fc_answer_delivery_v2, fc-answer-delivery-v2'],
    ['^$', '^amq\\.', '^$', 'fail', 'write "^amq\\\\." also matches amq.default'],
    ['^$', '^amq\\.', '^$', 'fail', 'does not match fc.answer.delivery.v2 (the publisher cannot publish)'],
    ['^$', '^$', '^$', 'fail', 'write "^$" does not cover fc.answer.delivery.v2 (the publisher cannot publish)'],
    [
      '^$',
      '^(fc\\.answer\\.delivery\\.v2|evil)$',
      '^$',
      'fail',
      'write "^(fc\\\\.answer\\\\.delivery\\\\.v2|evil)$" covers evil (may cover only fc.answer.delivery.v2)',
    ],
    [
      '^(fc\\.answer\\.delivery\\.v2|svc-hall\\.fc\\.answer\\.snapshot\\.v2)$',
      '^fc\\.answer\\.delivery\\.v2$',
      '^$',
      'fail',
      'configure "^(fc\\\\.answer\\\\.delivery\\\\.v2|svc-hall\\\\.fc\\\\.answer\\\\.snapshot\\\\.v2)$" covers svc-hall.fc.answer.snapshot.v2',
    ],
    ['^$', '^fc\\.answer\\.delivery\\.v2$|^amq\\.topic$', '^$', 'fail', 'covers amq.topic'],
    // no sample is wrong, but the form proves nothing: warn
    [
      '^$',
      '^fc\\.answer\\.delivery\\.v[2]$',
      '^$',
      'warn',
      'matches no sample name it must not, but its form does not prove it covers only fc.answer.delivery.v2 (write ^fc\\.answer\\.delivery\\.v2$)',
    ],
    [
      '^$',
      '^fc\\.answer\\.delivery\\.v2$',
      '^nothing[-]here$',
      'warn',
      'read "^nothing[-]here$" matches no sample name it must not',
    ],
    ['^$', '^fc\\.answer\\.delivery\\.v2$', '^nothing-here$', 'fail', 'read "^nothing-here$" covers nothing-here'],
    [
      '^$',
      '(?i)^fc\\.answer\\.delivery\\.v2$',
      '^$',
      'warn',
      'write "(?i)^fc\\\\.answer\\\\.delivery\\\\.v2$" is not judged (JavaScript cannot compile it)',
    ],
  ] as const)('configure %j write %j read %j → %s', (configure, write, read, status, says) => {
    const r = permissionsCheck({
      publisher: 'pub',
      vhost: 'v',
      consumerQueue: CONSUMER_QUEUE,
      permissions: { configure, write, read },
    });
    expect(r.check).toBe(ISOLATION_CHECKS.permissions);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
    expect(r.detail.startsWith('publisher "pub" on vhost "v": ')).toBe(true);
  });

  it('a failing detail names only the failing operations', () => {
    const r = permissionsCheck({
      publisher: 'pub',
      vhost: 'v',
      consumerQueue: CONSUMER_QUEUE,
      permissions: { configure: '^$', write: '^fc\\.answer\\.delivery\\.v2$', read: '.*' },
    });
    expect(r.detail).not.toContain('configure');
    expect(r.detail).not.toContain('write');
    expect(r.detail).toContain('(and ');
  });

  it('no permissions on the vhost: fail, the publisher cannot publish', () => {
    expect(
      permissionsCheck({ publisher: 'pub', vhost: 'v', consumerQueue: CONSUMER_QUEUE, permissions: null }),
    ).toEqual({
      check: ISOLATION_CHECKS.permissions,
      status: 'fail',
      detail: 'publisher "pub" on vhost "v" has no permissions (it cannot publish to fc.answer.delivery.v2)',
    });
  });

  it('the samples follow --consumer-queue', () => {
    const r = permissionsCheck({
      publisher: 'pub',
      vhost: 'v',
      consumerQueue: 'mine.q',
      permissions: { configure: '^$', write: '^fc\\.answer\\.delivery\\.v2$|^mine', read: '^$' },
    });
    expect(r.detail).toContain('also matches mine.q, mine.q.dlq');
    expect(samples).toContain(DLQ);
  });

  it('judgePermission: read of the empty name only is nothing', () => {
    expect(judgePermission('read', '^$', { allowed: [], required: [], samples })).toEqual({
      status: 'ok',
      text: 'read nothing',
    });
  });
});

describe('publisher topic permissions: one on the exchange, allowing only fc.snapshot.v2. keys and the return probe', () => {
  const topic = (write: string, exchange = EXCHANGE) =>
    topicPermissionsCheck({ publisher: 'pub', vhost: 'v', topicPermissions: [{ exchange, write, read: '' }] });
  it.each([
    ['^fc\\.snapshot\\.v2\\.', 'ok', "allows only fc.snapshot.v2. keys, the return probe's key included"],
    ['^fc\\.snapshot\\.v2\\.[^.]+\\.[0-9]+$', 'ok', 'allows only fc.snapshot.v2. keys'],
    ['^fc\\.snapshot\\.v2\\.(fcctl-return-probe|c1|c2)\\.', 'ok', 'allows only'],
    ['.*', 'fail', 'also allows (the empty key), #, *, fc.snapshot.v2'],
    [
      '',
      'fail',
      "refuses the return probe's key fc.snapshot.v2.fcctl-return-probe.0 (deliveries send publishes it before each run",
    ],
    ['^$', 'fail', "refuses the return probe's key"],
    ['^fc\\.snapshot\\.v2\\.c1\\.', 'fail', "refuses the return probe's key"],
    ['fc\\.snapshot\\.v2\\.', 'fail', 'also allows x.fc.snapshot.v2.100021.5'],
    ['^fc\\.snapshot\\.v2', 'fail', 'also allows fc.snapshot.v2, fc.snapshot.v2x.100021.5'],
    [
      '^fc.snapshot.v2.',
      'fail',
      'fc_snapshot_v2_100021_5, fc-snapshot-v2-100021-5 (only fc.snapshot.v2. keys may be published)',
    ],
    [
      '^fc\\.',
      'fail',
      'also allows fc.snapshot.v2, fc.snapshot.v2x.100021.5, fc.snapshot.v1.100021.5, fc.events.v1.100021.5, fc.answer.delivery.v2 (only',
    ],
    ['^fc\\.snapshot\\.v2\\.|^audit', 'fail', 'also allows audit.all'],
    // a top-level alternative whose literal start departs from the prefix fails, whatever the samples say
    [
      '^fc\\.snapshot\\.v2\\.|^amq\\.',
      'fail',
      'its top-level alternative "^amq\\\\." allows keys starting "amq.", outside fc.snapshot.v2. (only fc.snapshot.v2. keys may be published)',
    ],
    ['^amq\\.|^fc\\.snapshot\\.v2\\.', 'fail', 'its top-level alternative "^amq\\\\." allows keys starting "amq."'],
    [
      '^fc\\.snapshot\\.v2\\.|^fc\\.snapshot\\.v3\\.',
      'fail',
      'its top-level alternative "^fc\\\\.snapshot\\\\.v3\\\\." allows keys starting "fc.snapshot.v3."',
    ],
    ['^fc\\.snapshot\\.v2\\.|^amq$', 'fail', 'allows keys starting "amq"'],
    ['^fc\\.snapshot\\.v2\\.|^amq?', 'fail', 'allows keys starting "am"'],
    [
      '^fc\\.snapshot\\.v2\\.|^x|^y\\.',
      'fail',
      'its top-level alternatives "^x" allows keys starting "x", "^y\\\\." allows keys starting "y."',
    ],
    // a literal start inside the prefix (or longer than it) proves nothing outside it
    ['^fc\\.snapshot\\.v2\\.|^fc\\.snapshot\\.v2\\.c1\\.', 'ok', 'allows only fc.snapshot.v2. keys'],
    // no literal start: not proven either way; no sample is wrong → warn
    ['^fc\\.snapshot\\.v2\\.|^(amq)\\.', 'warn', 'its form does not prove it'],
    [
      'fcctl-return-probe|^fc\\.snapshot\\.v2\\.',
      'warn',
      "allows the return probe's key and no sample key outside fc.snapshot.v2., but its form does not prove it",
    ],
    ['(?<x>^fc\\.snapshot\\.v2\\.)', 'warn', 'its form does not prove it'],
    ['^fc\\.snapshot\\.v2\\.(?i)', 'warn', 'is not judged (JavaScript cannot compile it)'],
  ] as const)('topic write %j → %s', (write, status, says) => {
    const r = topic(write);
    expect(r.check).toBe(ISOLATION_CHECKS.topic);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
    if (status !== 'fail') expect(r.detail).not.toContain('top-level alternative');
  });

  it.each([
    ['^fc\\.snapshot\\.v2\\.', []],
    ['^fc\\.snapshot\\.v2\\.|^amq\\.', [{ alternative: '^amq\\.', literal: 'amq.' }]],
    ['^fc\\.|^fc\\.snapshot', []],
    ['^f', []],
    ['^fc_snapshot', [{ alternative: '^fc_snapshot', literal: 'fc_snapshot' }]],
    ['^fc\\.snapshot\\.v2x', [{ alternative: '^fc\\.snapshot\\.v2x', literal: 'fc.snapshot.v2x' }]],
    ['amq\\.|^b', [{ alternative: '^b', literal: 'b' }]],
    ['^(amq)\\.', []],
    ['^$', []],
    ['^[a]', []],
    ['(a|b', []],
  ] as const)('outsideAlternatives(%j) = %j', (re, expected) => {
    expect(outsideAlternatives(re)).toEqual(expected);
  });

  it("none on the exchange: fail, every routing key is allowed; another exchange's does not count", () => {
    const none = topicPermissionsCheck({ publisher: 'pub', vhost: 'v', topicPermissions: [] });
    expect(none.status).toBe('fail');
    expect(none.detail).toBe(
      'publisher "pub" on vhost "v" has no topic permission on fc.answer.delivery.v2: without one every routing key may be published there; set write ^fc\\.snapshot\\.v2\\.',
    );
    const other = topic('^fc\\.snapshot\\.v2\\.', 'amq.topic');
    expect(other.status).toBe('fail');
    expect(other.detail).toContain('(only on amq.topic)');
  });

  it('{username} and {vhost} are expanded as RabbitMQ does', () => {
    const r = topicPermissionsCheck({
      publisher: 'fc',
      vhost: 'v',
      topicPermissions: [{ exchange: EXCHANGE, write: '^{username}\\.snapshot\\.v2\\.', read: '' }],
    });
    expect(r.status).toBe('ok');
    expect(
      topicPermissionsCheck({
        publisher: 'x',
        vhost: 'v',
        topicPermissions: [{ exchange: EXCHANGE, write: '^{username}\\.snapshot\\.v2\\.', read: '' }],
      }).status,
    ).toBe('fail');
  });

  it('the probe key is what the relay publishes', () => {
    expect(RETURN_PROBE_ROUTING_KEY).toBe('fc.snapshot.v2.fcctl-return-probe.0');
  });
});

describe('bindings: exactly fc.snapshot.v2.<registered key>.* or .<school>', () => {
  const registered = new Set(['c1', 'c2']);
  it.each([
    ['fc.snapshot.v2.c1.*', null],
    ['fc.snapshot.v2.c1.5', null],
    ['fc.snapshot.v2.c2.9007199254740993', null],
    ['#', '"#" matches every routing key'],
    ['*.snapshot.v2.c1.*', 'a leading wildcard matches keys of every prefix'],
    ['#.c1.*', 'a leading wildcard'],
    ['*', 'a leading wildcard'],
    ['fc.snapshot.v2.#', "a wildcard in place of the app key matches every consumer's snapshots"],
    ['fc.snapshot.v2.*.5', "a wildcard in place of the app key matches every consumer's snapshots"],
    ['fc.snapshot.v2.*.*', 'a wildcard in place of the app key'],
    ['fc.snapshot.v2.c1.#', '"#" matches any number of words'],
    ['fc.#', '"#" matches any number of words'],
    ['fc.snapshot.v2.c1', 'not fc.snapshot.v2.<key>.* or fc.snapshot.v2.<key>.<school>'],
    ['fc.snapshot.v2.c1.0', 'not fc.snapshot.v2.<key>.* or'],
    ['fc.snapshot.v2.c1.05', 'not fc.snapshot.v2.<key>.* or'],
    ['fc.snapshot.v2.c1.-5', 'not fc.snapshot.v2.<key>.* or'],
    ['fc.snapshot.v2.c1.5.*', 'not fc.snapshot.v2.<key>.* or'],
    ['fc.snapshot.v2.c1.*.x', 'not fc.snapshot.v2.<key>.* or'],
    ['fc.snapshot.v1.c1.*', 'not fc.snapshot.v2.<key>.* or'],
    ['', 'not fc.snapshot.v2.<key>.* or'],
    ['fc.snapshot.v2.c 1.*', 'not fc.snapshot.v2.<key>.* or'],
    ['fc.snapshot.v2.zz.*', 'zz is not an app key registered in application_info'],
    ['fc.snapshot.v2.C1.5', 'C1 is not an app key registered in application_info'],
    ['fc.snapshot.v2.fcctl-return-probe.*', "binds the return probe's key"],
    ['fc.snapshot.v2.fcctl-return-probe.0', "binds the return probe's key"],
  ])('%j → %j', (key, problem) => {
    const got = bindingProblem(key, registered);
    if (problem === null) expect(got).toBeNull();
    else expect(got).toContain(problem);
  });

  it('keys unknown: only the form is judged', () => {
    expect(bindingProblem('fc.snapshot.v2.zz.*', null)).toBeNull();
    expect(bindingProblem('#', null)).toContain('"#"');
  });

  it('names every offending binding with its destination; the good ones pass', () => {
    const f = correct();
    const r = bindingsCheck({
      ...f,
      bindings: [
        ...f.bindings,
        { source: EXCHANGE, destination: `${CONSUMER_QUEUE}.audit`, destinationType: 'queue', routingKey: '#' },
        {
          source: EXCHANGE,
          destination: 'spy.x',
          destinationType: 'exchange',
          routingKey: 'fc.snapshot.v2.stranger.*',
        },
      ],
    });
    expect(r).toEqual({
      check: ISOLATION_CHECKS.bindings,
      status: 'fail',
      detail:
        '"#" → queue svc-hall.fc.answer.snapshot.v2.audit: "#" matches every routing key; "fc.snapshot.v2.stranger.*" → exchange spy.x: stranger is not an app key registered in application_info, and an exchange-to-exchange binding sends snapshots on to wherever exchange spy.x routes them (bind only the consumer\'s queues)',
    });
  });

  it.each<[string, 'queue' | 'exchange', string | null]>([
    [CONSUMER_QUEUE, 'queue', null],
    [DLQ, 'queue', null],
    [`${CONSUMER_QUEUE}.school5`, 'queue', null],
    [`${CONSUMER_QUEUE}x`, 'queue', null],
    [
      'rogue.q',
      'queue',
      "queue rogue.q is not the consumer's (its name does not start with svc-hall.fc.answer.snapshot.v2)",
    ],
    ['svc-hall.fc.answer.snapshot.v', 'queue', "queue svc-hall.fc.answer.snapshot.v is not the consumer's"],
    [`x${CONSUMER_QUEUE}`, 'queue', "is not the consumer's"],
    ['SVC-HALL.fc.answer.snapshot.v2', 'queue', "is not the consumer's"],
    ['amq.gen-Xq3vN0Jd1LWS2Jq7dD6fMg', 'queue', "is not the consumer's"],
    [
      'spy.fanout',
      'exchange',
      'an exchange-to-exchange binding sends snapshots on to wherever exchange spy.fanout routes them',
    ],
    // an exchange named like the consumer queue is still an exchange
    [
      CONSUMER_QUEUE,
      'exchange',
      'an exchange-to-exchange binding sends snapshots on to wherever exchange svc-hall.fc.answer.snapshot.v2 routes them',
    ],
  ])('destination %s %s → %j', (destination, destinationType, problem) => {
    const got = bindingDestinationProblem({ destination, destinationType }, CONSUMER_QUEUE);
    if (problem === null) expect(got).toBeNull();
    else expect(got).toContain(problem);
  });

  it('a registered key to a rogue queue, and an exchange-to-exchange binding from the exchange, fail named with destination and type', () => {
    const f = correct();
    const r = bindingsCheck({
      ...f,
      bindings: [
        ...f.bindings,
        { source: EXCHANGE, destination: 'rogue.q', destinationType: 'queue', routingKey: 'fc.snapshot.v2.svchall.*' },
        {
          source: EXCHANGE,
          destination: 'spy.fanout',
          destinationType: 'exchange',
          routingKey: 'fc.snapshot.v2.c2.17',
        },
      ],
    });
    expect(r).toEqual({
      check: ISOLATION_CHECKS.bindings,
      status: 'fail',
      detail:
        '"fc.snapshot.v2.svchall.*" → queue rogue.q: queue rogue.q is not the consumer\'s (its name does not start with svc-hall.fc.answer.snapshot.v2); "fc.snapshot.v2.c2.17" → exchange spy.fanout: an exchange-to-exchange binding sends snapshots on to wherever exchange spy.fanout routes them (bind only the consumer\'s queues)',
    });
  });

  it('the destination follows --consumer-queue', () => {
    const f = { ...correct(), consumerQueue: 'mine' };
    expect(
      bindingsCheck({
        ...f,
        bindings: [
          { source: EXCHANGE, destination: 'mine.a', destinationType: 'queue', routingKey: 'fc.snapshot.v2.c2.*' },
        ],
      }),
    ).toMatchObject({
      status: 'ok',
      detail: '1 binding on fc.answer.delivery.v2, all to mine* queues and for registered app keys (c2)',
    });
    expect(bindingsCheck(f)).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining(
        `→ queue ${CONSUMER_QUEUE}: queue ${CONSUMER_QUEUE} is not the consumer's (its name does not start with mine)`,
      ),
    });
  });

  it('passes naming the keys; no bindings passes; a missing exchange fails', () => {
    expect(bindingsCheck(correct())).toEqual({
      check: ISOLATION_CHECKS.bindings,
      status: 'ok',
      detail:
        '2 bindings on fc.answer.delivery.v2, all to svc-hall.fc.answer.snapshot.v2* queues and for registered app keys (c2, svchall)',
    });
    expect(bindingsCheck({ ...correct(), bindings: [] })).toMatchObject({
      status: 'ok',
      detail: 'no bindings on fc.answer.delivery.v2',
    });
    expect(bindingsCheck({ ...correct(), exchange: null })).toMatchObject({
      status: 'fail',
      detail: 'fc.answer.delivery.v2 does not exist on vhost "fcctl-prod"',
    });
  });

  it('app keys that could not be read: fail saying so, and still name a bad form', () => {
    const f = { ...correct(), appKeys: { ok: false, reason: 'FC database not configured' } as const };
    expect(bindingsCheck(f)).toMatchObject({
      status: 'fail',
      detail:
        'the registered app keys could not be read (FC database not configured), so no key was checked against application_info',
    });
    const r = bindingsCheck({
      ...f,
      bindings: [{ source: EXCHANGE, destination: 'q', destinationType: 'queue', routingKey: 'fc.snapshot.v2.*.5' }],
    });
    expect(r.detail).toMatch(
      /^"fc\.snapshot\.v2\.\*\.5" → queue q: a wildcard in place of the app key.*; the registered app keys could not be read/,
    );
  });
});

describe('delivery exchange: topic, durable, not auto-delete, not internal', () => {
  it.each<[string, Partial<ExchangeInfo>, 'ok' | 'fail', string]>([
    ['a durable topic exchange', {}, 'ok', 'fc.answer.delivery.v2: topic, durable, not auto-delete, not internal'],
    [
      'a fanout',
      { type: 'fanout' },
      'fail',
      'fc.answer.delivery.v2 on vhost "v" is a fanout exchange, not topic (it sends every snapshot to every bound queue, whatever its routing key)',
    ],
    [
      'a headers exchange',
      { type: 'headers' },
      'fail',
      'is a headers exchange, not topic (it routes by headers and ignores the routing key)',
    ],
    [
      'a direct exchange',
      { type: 'direct' },
      'fail',
      'is a direct exchange, not topic (v2 routing keys and bindings are topic patterns)',
    ],
    ['a plugin type', { type: 'x-consistent-hash' }, 'fail', 'is a x-consistent-hash exchange, not topic'],
    ['no type at all', { type: '' }, 'fail', 'is a (typeless) exchange, not topic'],
    [
      'not durable',
      { durable: false },
      'fail',
      'fc.answer.delivery.v2 on vhost "v" is not durable (it is gone after a broker restart, and whoever declares it first then decides its type and arguments)',
    ],
    ['auto-delete', { autoDelete: true }, 'fail', 'is auto-delete (it goes with its last binding'],
    ['internal', { internal: true }, 'fail', 'is internal (clients cannot publish to it)'],
    [
      'everything wrong',
      { type: 'fanout', durable: false, autoDelete: true, internal: true },
      'fail',
      'is a fanout exchange, not topic (it sends every snapshot to every bound queue, whatever its routing key); not durable (it is gone after a broker restart, and whoever declares it first then decides its type and arguments); auto-delete (it goes with its last binding, and whoever declares it first then decides its type and arguments); internal (clients cannot publish to it)',
    ],
  ])('%s', (_name, change, status, says) => {
    const r = deliveryExchangeCheck({ vhost: 'v', exchange: topicExchange(change) });
    expect(r.check).toBe(ISOLATION_CHECKS.exchange);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
  });
  it('a missing exchange fails', () => {
    expect(deliveryExchangeCheck({ vhost: 'v', exchange: null })).toEqual({
      check: ISOLATION_CHECKS.exchange,
      status: 'fail',
      detail: 'fc.answer.delivery.v2 does not exist on vhost "v"',
    });
  });
});

describe("who can read the exchange: only --consumer-user, the management API's user; administrators warn; the publisher never", () => {
  it.each([
    ['', false],
    ['^$', false],
    ['.*', true],
    ['^fc\\.answer\\.delivery\\.v2$', true],
    ['fc\\.answer', true],
    ['delivery', true],
    ['^fc\\.answer\\.delivery\\.v2x$', false],
    ['^svc-hall\\.', false],
    [CONSUMER_READ, true],
    ['(?i)^FC', null],
  ] as const)('readsExchange(%j) = %j', (read, reads) => {
    expect(readsExchange(read)).toBe(reads);
  });

  const TAGS = { ops: ['administrator'], mgmt: ['administrator', 'monitoring'], mon: ['monitoring'], 'svc-hall': [] };
  const readers = (vhostPermissions: UserPermissions[], consumerUsers: string[] = ['svc-hall']) =>
    readersCheck({
      vhost: 'v',
      publisher: 'pub',
      vhostPermissions,
      userTags: TAGS,
      consumerUsers,
      managementUser: 'mgmt',
    });
  const LEAD = 'users on vhost "v" who can read fc.answer.delivery.v2, and so bind a queue to it: ';
  const HINT =
    "; no --consumer-user given: name the consumer's user(s) with --consumer-user (then any other reader fails, an administrator warns)";
  it.each<[string, UserPermissions[], string[], 'ok' | 'warn' | 'fail', string]>([
    [
      'nobody has permissions',
      [],
      ['svc-hall'],
      'ok',
      'no user on vhost "v" can read fc.answer.delivery.v2, so none can bind a queue to it',
    ],
    [
      'no reader: publisher read nothing, consumer reads only its queues',
      [perm('pub', '^$'), perm('svc-hall', '^svc-hall\\.'), perm('x', '')],
      ['svc-hall'],
      'ok',
      'no user on vhost "v" can read fc.answer.delivery.v2, so none can bind a queue to it (--consumer-user "svc-hall" cannot read it)',
    ],
    [
      'no reader and no --consumer-user',
      [perm('pub', '^$')],
      [],
      'ok',
      'no user on vhost "v" can read fc.answer.delivery.v2, so none can bind a queue to it',
    ],
    [
      'the consumer user',
      [perm('pub', '^$'), perm('svc-hall', CONSUMER_READ)],
      ['svc-hall'],
      'ok',
      `${LEAD}consumer user "svc-hall" (read "${CONSUMER_READ.replaceAll('\\', '\\\\')}")`,
    ],
    [
      "the management API's own user",
      [perm('mgmt', '.*')],
      ['svc-hall'],
      'ok',
      `${LEAD}the management API's own user "mgmt" (administrator, read ".*") (--consumer-user "svc-hall" cannot read it)`,
    ],
    [
      "the management API's own user, no --consumer-user",
      [perm('mgmt', '.*')],
      [],
      'ok',
      `${LEAD}the management API's own user "mgmt" (administrator, read ".*")`,
    ],
    [
      'two consumer users',
      [perm('svc-hall', '.*'), perm('svc-hall-2', 'fc\\.answer')],
      ['svc-hall', 'svc-hall-2'],
      'ok',
      `${LEAD}consumer user "svc-hall" (read ".*"); consumer user "svc-hall-2" (read "fc\\\\.answer")`,
    ],
    // without --consumer-user: doctor cannot tell the consumer from anyone else
    [
      'a reader, no --consumer-user',
      [perm('svc-hall', CONSUMER_READ)],
      [],
      'warn',
      `${LEAD}"svc-hall" (read "${CONSUMER_READ.replaceAll('\\', '\\\\')}")${HINT}`,
    ],
    [
      'an administrator, no --consumer-user',
      [perm('ops', '.*')],
      [],
      'warn',
      `${LEAD}"ops" (administrator, read ".*")${HINT}`,
    ],
    // with it: another user fails, an administrator warns
    [
      'a second user with .* .* .*',
      [perm('svc-hall', CONSUMER_READ), perm('rogue', '.*', '.*', '.*')],
      ['svc-hall'],
      'fail',
      `${LEAD}"rogue" (read ".*") is not a --consumer-user; consumer user "svc-hall"`,
    ],
    [
      'a monitoring user is no administrator',
      [perm('mon', '.*')],
      ['svc-hall'],
      'fail',
      `${LEAD}"mon" (read ".*") is not a --consumer-user`,
    ],
    [
      'another administrator',
      [perm('ops', '.*')],
      ['svc-hall'],
      'warn',
      `${LEAD}"ops" (administrator, read ".*") is not a --consumer-user (an administrator can give itself any permission anyway; take away its permissions on this vhost if it does not need them)`,
    ],
    // the publisher never, even named as a consumer user
    [
      'the publisher reads',
      [perm('pub', '.*')],
      ['svc-hall'],
      'fail',
      `${LEAD}the publisher "pub" (read ".*"): it must read nothing (see isolation: publisher permissions)`,
    ],
    [
      'the publisher reads, named by --consumer-user',
      [perm('pub', '^fc\\.answer\\.delivery\\.v2$')],
      ['pub'],
      'fail',
      'the publisher "pub" (read "^fc\\\\.answer\\\\.delivery\\\\.v2$"): it must read nothing',
    ],
    [
      'the publisher reads, no --consumer-user',
      [perm('pub', '.*')],
      [],
      'fail',
      'the publisher "pub" (read ".*"): it must read nothing',
    ],
    // a regex JavaScript cannot compile is not judged
    [
      'an uncompilable read regex',
      [perm('odd', '(?i)^FC')],
      ['svc-hall'],
      'warn',
      `${LEAD}"odd" (read "(?i)^FC", not judged: JavaScript cannot compile it): check by hand that it does not match fc.answer.delivery.v2`,
    ],
    [
      'an uncompilable read regex of the publisher',
      [perm('pub', '(?i)^FC')],
      ['svc-hall'],
      'warn',
      'the publisher "pub" (read "(?i)^FC", not judged: JavaScript cannot compile it): it must read nothing',
    ],
    [
      'an uncompilable read regex of a consumer user',
      [perm('svc-hall', '(?i)^FC')],
      ['svc-hall'],
      'ok',
      'consumer user "svc-hall" (read "(?i)^FC", not judged',
    ],
    // the worst decides; failures are named first, then warnings, then the allowed ones
    [
      'everyone at once',
      [
        perm('mgmt', '.*'),
        perm('svc-hall', CONSUMER_READ),
        perm('ops', '.*'),
        perm('rogue', 'delivery'),
        perm('pub', '^$'),
        perm('quiet', '^other$'),
      ],
      ['svc-hall'],
      'fail',
      `${LEAD}"rogue" (read "delivery") is not a --consumer-user; "ops" (administrator, read ".*") is not a --consumer-user (an administrator can give itself any permission anyway; take away its permissions on this vhost if it does not need them); the management API's own user "mgmt" (administrator, read ".*"); consumer user "svc-hall"`,
    ],
  ])('%s', (_name, permissions, consumers, status, says) => {
    const r = readers(permissions, consumers);
    expect(r.check).toBe(ISOLATION_CHECKS.readers);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
    // a user whose read does not match the exchange is never named
    expect(r.detail).not.toContain('"quiet"');
    expect(r.detail).not.toContain('"x"');
  });

  it('a user who cannot read the exchange is not named, whatever else it may do', () => {
    const r = readers([perm('svc-hall', CONSUMER_READ), perm('writer', '^$', '.*', '.*')]);
    expect(r).toEqual({
      check: ISOLATION_CHECKS.readers,
      status: 'ok',
      detail: `${LEAD}consumer user "svc-hall" (read ${JSON.stringify(CONSUMER_READ)})`,
    });
  });
});

describe('plain doctor: re-declaring the existing delivery exchange', () => {
  it.each<[string, Parameters<typeof redeclareCheck>[1], 'ok' | 'fail', string]>([
    ['done', { ok: true }, 'ok', 'fc.answer.delivery.v2 exists, topic, durable'],
    [
      'refused 403: a least-privilege publisher',
      {
        ok: false,
        code: 403,
        message: 'Channel closed by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - access to exchange …"',
      },
      'ok',
      'fc.answer.delivery.v2 exists; its type and durability were not verified: the publisher may not configure it (re-declaring it was refused, 403 ACCESS_REFUSED), as seed 000 §6 asks; doctor --isolation verifies them through the management API',
    ],
    [
      '406: another type',
      {
        ok: false,
        code: 406,
        message: 'Channel closed by server: 406 (PRECONDITION-FAILED) with message "inequivalent arg \'type\'"',
      },
      'fail',
      'fc.answer.delivery.v2 exists but is not a durable topic exchange: Channel closed by server: 406 (PRECONDITION-FAILED)',
    ],
    [
      'no code: the connection went',
      { ok: false, code: undefined, message: 'Connection closed' },
      'fail',
      'fc.answer.delivery.v2 exists but could not be re-declared to check its type and durability: Connection closed',
    ],
    [
      'another code',
      { ok: false, code: 320, message: 'CONNECTION_FORCED' },
      'fail',
      'could not be re-declared to check its type and durability: CONNECTION_FORCED',
    ],
  ])('%s', (_name, outcome, status, detail) => {
    expect(redeclareCheck(EXCHANGE, outcome)).toEqual({
      check: 'delivery exchange',
      status,
      detail: expect.stringContaining(detail),
    });
  });
});

describe('consumer queues: the queue and its .dlq exist and are durable', () => {
  const queues = (q: QueueInfo | null, dlq: QueueInfo | null) =>
    queuesCheck({ vhost: 'v', consumerQueue: CONSUMER_QUEUE, queues: { [CONSUMER_QUEUE]: q, [DLQ]: dlq } });
  it.each([
    [
      durable(CONSUMER_QUEUE),
      durable(DLQ),
      'ok',
      'svc-hall.fc.answer.snapshot.v2 (classic, durable) and svc-hall.fc.answer.snapshot.v2.dlq (classic, durable) exist',
    ],
    [
      durable(CONSUMER_QUEUE, { type: 'quorum' }),
      durable(DLQ, { type: '' }),
      'ok',
      '(quorum, durable) and svc-hall.fc.answer.snapshot.v2.dlq (queue, durable) exist',
    ],
    [durable(CONSUMER_QUEUE), null, 'fail', 'svc-hall.fc.answer.snapshot.v2.dlq does not exist on vhost "v"'],
    [
      null,
      null,
      'fail',
      'svc-hall.fc.answer.snapshot.v2 does not exist on vhost "v"; svc-hall.fc.answer.snapshot.v2.dlq does not exist on vhost "v"',
    ],
    [
      durable(CONSUMER_QUEUE),
      durable(DLQ, { durable: false }),
      'fail',
      'svc-hall.fc.answer.snapshot.v2.dlq is not durable (it and its messages are lost when the broker restarts)',
    ],
    [
      durable(CONSUMER_QUEUE, { autoDelete: true }),
      durable(DLQ),
      'fail',
      'svc-hall.fc.answer.snapshot.v2 is auto-delete',
    ],
    [
      durable(CONSUMER_QUEUE, { exclusive: true, durable: false }),
      durable(DLQ),
      'fail',
      'is not durable (it and its messages are lost when the broker restarts), exclusive (it goes with its connection)',
    ],
  ] as const)('%#: %s', (q, dlq, status, detail) => {
    const r = queues(q, dlq);
    expect(r.check).toBe(ISOLATION_CHECKS.queues);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(detail);
  });
  it('follows --consumer-queue', () => {
    expect(queuesCheck({ vhost: 'v', consumerQueue: 'mine', queues: { mine: durable('mine') } }).detail).toBe(
      'mine.dlq does not exist on vhost "v"',
    );
  });
});

describe('alternate exchange: neither an argument nor a policy', () => {
  const exchange = (args: Record<string, unknown> = {}, applied: string | null = null) =>
    topicExchange({ arguments: args, policy: applied });
  const ae = (f: Partial<IsolationFacts>) =>
    alternateExchangeCheck({ vhost: 'v', exchange: exchange(), policies: [], operatorPolicies: [], ...f });
  it.each<[string, Partial<IsolationFacts>, string, string]>([
    ['nothing', {}, 'ok', 'no alternate-exchange on fc.answer.delivery.v2: no argument, no policy applies'],
    [
      'an applied policy without one',
      { exchange: exchange({}, 'ha'), policies: [policy('ha', '.*', { 'federation-upstream-set': 'all' })] },
      'ok',
      'applied policy "ha" sets none',
    ],
    [
      'an argument',
      { exchange: exchange({ 'alternate-exchange': 'spill' }) },
      'fail',
      'fc.answer.delivery.v2 was declared with alternate-exchange "spill": unroutable messages go there instead of being returned',
    ],
    [
      'the applied policy',
      { exchange: exchange({}, 'ae'), policies: [policy('ae', '^fc\\.', { 'alternate-exchange': 'amq.fanout' })] },
      'fail',
      'policy "ae" (pattern "^fc\\\\.") gives it alternate-exchange "amq.fanout"',
    ],
    [
      'an operator policy',
      { operatorPolicies: [policy('op', '^fc', { 'alternate-exchange': 'x' }, { applyTo: 'all' })] },
      'fail',
      'operator policy "op" (pattern "^fc") gives it alternate-exchange "x"',
    ],
    [
      'an operator policy for queues only',
      { operatorPolicies: [policy('op', '^fc', { 'alternate-exchange': 'x' }, { applyTo: 'queues' })] },
      'ok',
      'no argument',
    ],
    [
      'an operator policy of another pattern',
      { operatorPolicies: [policy('op', '^svc', { 'alternate-exchange': 'x' })] },
      'ok',
      'no argument',
    ],
    [
      'a policy shadowed by a higher priority',
      {
        exchange: exchange({}, 'ha'),
        policies: [policy('ha', '.*', {}, { priority: 5 }), policy('ae', '^fc', { 'alternate-exchange': 'x' })],
      },
      'warn',
      'policy "ae" (pattern "^fc", priority 0) matches fc.answer.delivery.v2 with alternate-exchange "x"; policy "ha" applies now instead',
    ],
    [
      'a policy for queues with one',
      { policies: [policy('q', '.*', { 'alternate-exchange': 'x' }, { applyTo: 'queues' })] },
      'ok',
      'no policy applies',
    ],
    [
      'both argument and policy',
      {
        exchange: exchange({ 'alternate-exchange': 'a' }, 'ae'),
        policies: [policy('ae', '.*', { 'alternate-exchange': 'b' })],
      },
      'fail',
      'declared with alternate-exchange "a"; policy "ae" (pattern ".*") gives it alternate-exchange "b"',
    ],
  ])('%s → %s', (_name, facts, status, says) => {
    const r = ae(facts);
    expect(r.check).toBe(ISOLATION_CHECKS.alternateExchange);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
  });
  it('a missing exchange fails', () => {
    expect(ae({ exchange: null })).toMatchObject({
      status: 'fail',
      detail: 'fc.answer.delivery.v2 does not exist on vhost "v"',
    });
  });
});

describe('vhost and the whole table', () => {
  it.each([
    ['/', true, 'fail', 'FCCTL_AMQP_URL uses the default vhost "/"'],
    ['fcctl', false, 'fail', 'vhost "fcctl" does not exist on the broker'],
    ['fcctl', true, 'ok', 'vhost "fcctl"'],
  ] as const)('vhost %j (exists: %s) → %s', (vhost, vhostExists, status, says) => {
    const r = isolationVhostCheck({ vhost, vhostExists });
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
  });

  it('the correct setup: eight items, in order, every one ok', () => {
    const results = decideIsolation(correct());
    expect(results.map((r) => r.check)).toEqual(ISOLATION_ITEMS);
    expect(results.filter((r) => r.status !== 'ok')).toEqual([]);
  });

  it('each broken item fails alone', () => {
    const broken: Array<[string, Partial<IsolationFacts>]> = [
      [ISOLATION_CHECKS.vhost, { vhost: '/' }],
      [ISOLATION_CHECKS.exchange, { exchange: topicExchange({ type: 'fanout' }) }],
      [ISOLATION_CHECKS.exchange, { exchange: topicExchange({ durable: false }) }],
      [ISOLATION_CHECKS.exchange, { exchange: topicExchange({ autoDelete: true }) }],
      [ISOLATION_CHECKS.exchange, { exchange: topicExchange({ internal: true }) }],
      [ISOLATION_CHECKS.permissions, { permissions: { configure: '.*', write: '.*', read: '^$' } }],
      [ISOLATION_CHECKS.topic, { topicPermissions: [] }],
      [
        ISOLATION_CHECKS.topic,
        { topicPermissions: [{ exchange: EXCHANGE, write: '^fc\\.snapshot\\.v2\\.|^amq\\.', read: '' }] },
      ],
      [
        ISOLATION_CHECKS.bindings,
        { bindings: [{ source: EXCHANGE, destination: CONSUMER_QUEUE, destinationType: 'queue', routingKey: '#' }] },
      ],
      [
        ISOLATION_CHECKS.bindings,
        {
          bindings: [
            {
              source: EXCHANGE,
              destination: 'rogue.q',
              destinationType: 'queue',
              routingKey: 'fc.snapshot.v2.svchall.*',
            },
          ],
        },
      ],
      [
        ISOLATION_CHECKS.bindings,
        {
          bindings: [
            {
              source: EXCHANGE,
              destination: 'spy.fanout',
              destinationType: 'exchange',
              routingKey: 'fc.snapshot.v2.svchall.*',
            },
          ],
        },
      ],
      [
        ISOLATION_CHECKS.readers,
        { vhostPermissions: [...correct().vhostPermissions, perm('rogue', '.*', '.*', '.*')] },
      ],
      [ISOLATION_CHECKS.queues, { queues: { [CONSUMER_QUEUE]: durable(CONSUMER_QUEUE) } }],
      [ISOLATION_CHECKS.alternateExchange, { exchange: topicExchange({ arguments: { 'alternate-exchange': 'x' } }) }],
    ];
    for (const [item, change] of broken) {
      const failed = decideIsolation({ ...correct(), ...change }).filter((r) => r.status !== 'ok');
      expect(failed.map((r) => [r.check, r.status])).toEqual([[item, 'fail']]);
    }
  });
});
