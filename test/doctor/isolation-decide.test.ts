import { describe, expect, it } from 'vitest';
import type { Policy, QueueInfo } from '../../src/lib/amqp/management.js';
import {
  alternateExchangeCheck,
  bindingProblem,
  bindingsCheck,
  CONSUMER_QUEUE,
  decideIsolation,
  exactNames,
  type IsolationFacts,
  ISOLATION_CHECKS,
  isolationVhostCheck,
  judgePermission,
  permissionsCheck,
  provablePrefixes,
  publisherOf,
  queuesCheck,
  resourceSamples,
  topicPermissionsCheck,
  topLevelAlternatives,
} from '../../src/lib/doctor/isolation.js';
import { RETURN_PROBE_ROUTING_KEY } from '../../src/lib/amqp/connect.js';

const EXCHANGE = 'fc.answer.delivery.v2';
const DLQ = `${CONSUMER_QUEUE}.dlq`;
const durable = (name: string, extra: Partial<QueueInfo> = {}): QueueInfo => ({ name, durable: true, autoDelete: false, exclusive: false, type: 'classic', ...extra });
const policy = (name: string, pattern: string, definition: Record<string, unknown>, extra: Partial<Policy> = {}): Policy => ({ name, pattern, applyTo: 'exchanges', priority: 0, definition, ...extra });

/** The correct setup of the README: every item passes. */
function correct(): IsolationFacts {
  return {
    vhost: 'fcctl-prod',
    vhostExists: true,
    publisher: 'fc-publisher',
    consumerQueue: CONSUMER_QUEUE,
    permissions: { configure: '^fc\\.answer\\.delivery\\.v2$', write: '^fc\\.answer\\.delivery\\.v2$', read: '^$' },
    topicPermissions: [{ exchange: EXCHANGE, write: '^fc\\.snapshot\\.v2\\.', read: '' }],
    exchange: { name: EXCHANGE, type: 'topic', durable: true, arguments: {}, policy: null },
    policies: [],
    operatorPolicies: [],
    bindings: [
      { source: EXCHANGE, destination: CONSUMER_QUEUE, destinationType: 'queue', routingKey: 'fc.snapshot.v2.svchall.*' },
      { source: EXCHANGE, destination: 'other.q', destinationType: 'queue', routingKey: 'fc.snapshot.v2.c2.17' },
    ],
    queues: { [CONSUMER_QUEUE]: durable(CONSUMER_QUEUE), [DLQ]: durable(DLQ) },
    appKeys: { ok: true, keys: ['100021', 'svchall', 'c2'] },
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
    ['^fc\\.answer\\.delivery\\.v2$', '^fc\\.answer\\.delivery\\.v2$', '^$', 'ok', 'configure only fc.answer.delivery.v2; write only fc.answer.delivery.v2; read nothing'],
    ['', '^fc\\.answer\\.delivery\\.v2$', '', 'ok', 'configure nothing; write only fc.answer.delivery.v2; read nothing'],
    ['^$', '^(fc\\.answer\\.delivery\\.v2)$', '^$', 'ok', 'configure nothing'],
    ['.*', '.*', '.*', 'fail', 'configure ".*" also matches svc-hall.fc.answer.snapshot.v2, svc-hall.fc.answer.snapshot.v2.dlq, amq.default'],
    ['^$', '.*', '^$', 'fail', 'write ".*" also matches svc-hall.fc.answer.snapshot.v2'],
    ['^$', '^fc\\.answer\\.delivery\\.v2$', '.*', 'fail', 'read ".*" also matches fc.answer.delivery.v2, svc-hall.fc.answer.snapshot.v2'],
    ['^$', '^fc\\.answer\\.delivery\\.v2$', '^fc\\.answer\\.delivery\\.v2$', 'fail', 'read "^fc\\\\.answer\\\\.delivery\\\\.v2$" covers fc.answer.delivery.v2 (must match nothing: read on the exchange lets its holder bind a queue to it)'],
    ['^$', '^fc\\.answer\\.delivery\\.v2', '^$', 'fail', 'write "^fc\\\\.answer\\\\.delivery\\\\.v2" also matches fc.answer.delivery.v2x, fc.answer.delivery.v2.dlx'],
    ['^$', 'fc\\.answer\\.delivery\\.v2$', '^$', 'fail', 'also matches xfc.answer.delivery.v2'],
    ['^$', '^fc.answer.delivery.v2$', '^$', 'fail', 'also matches fc_answer_delivery_v2, fc-answer-delivery-v2'],
    ['^$', '^amq\\.', '^$', 'fail', 'write "^amq\\\\." also matches amq.default'],
    ['^$', '^amq\\.', '^$', 'fail', 'does not match fc.answer.delivery.v2 (the publisher cannot publish)'],
    ['^$', '^$', '^$', 'fail', 'write "^$" does not cover fc.answer.delivery.v2 (the publisher cannot publish)'],
    ['^$', '^(fc\\.answer\\.delivery\\.v2|evil)$', '^$', 'fail', 'write "^(fc\\\\.answer\\\\.delivery\\\\.v2|evil)$" covers evil (may cover only fc.answer.delivery.v2)'],
    ['^(fc\\.answer\\.delivery\\.v2|svc-hall\\.fc\\.answer\\.snapshot\\.v2)$', '^fc\\.answer\\.delivery\\.v2$', '^$', 'fail', 'configure "^(fc\\\\.answer\\\\.delivery\\\\.v2|svc-hall\\\\.fc\\\\.answer\\\\.snapshot\\\\.v2)$" covers svc-hall.fc.answer.snapshot.v2'],
    ['^$', '^fc\\.answer\\.delivery\\.v2$|^amq\\.topic$', '^$', 'fail', 'covers amq.topic'],
    // no sample is wrong, but the form proves nothing: warn
    ['^$', '^fc\\.answer\\.delivery\\.v[2]$', '^$', 'warn', 'matches no sample name it must not, but its form does not prove it covers only fc.answer.delivery.v2 (write ^fc\\.answer\\.delivery\\.v2$)'],
    ['^$', '^fc\\.answer\\.delivery\\.v2$', '^nothing[-]here$', 'warn', 'read "^nothing[-]here$" matches no sample name it must not'],
    ['^$', '^fc\\.answer\\.delivery\\.v2$', '^nothing-here$', 'fail', 'read "^nothing-here$" covers nothing-here'],
    ['^$', '(?i)^fc\\.answer\\.delivery\\.v2$', '^$', 'warn', 'write "(?i)^fc\\\\.answer\\\\.delivery\\\\.v2$" is not judged (JavaScript cannot compile it)'],
  ] as const)('configure %j write %j read %j → %s', (configure, write, read, status, says) => {
    const r = permissionsCheck({ publisher: 'pub', vhost: 'v', consumerQueue: CONSUMER_QUEUE, permissions: { configure, write, read } });
    expect(r.check).toBe(ISOLATION_CHECKS.permissions);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
    expect(r.detail.startsWith('publisher "pub" on vhost "v": ')).toBe(true);
  });

  it('a failing detail names only the failing operations', () => {
    const r = permissionsCheck({ publisher: 'pub', vhost: 'v', consumerQueue: CONSUMER_QUEUE, permissions: { configure: '^$', write: '^fc\\.answer\\.delivery\\.v2$', read: '.*' } });
    expect(r.detail).not.toContain('configure');
    expect(r.detail).not.toContain('write');
    expect(r.detail).toContain('(and ');
  });

  it('no permissions on the vhost: fail, the publisher cannot publish', () => {
    expect(permissionsCheck({ publisher: 'pub', vhost: 'v', consumerQueue: CONSUMER_QUEUE, permissions: null })).toEqual({
      check: ISOLATION_CHECKS.permissions,
      status: 'fail',
      detail: 'publisher "pub" on vhost "v" has no permissions (it cannot publish to fc.answer.delivery.v2)',
    });
  });

  it('the samples follow --consumer-queue', () => {
    const r = permissionsCheck({ publisher: 'pub', vhost: 'v', consumerQueue: 'mine.q', permissions: { configure: '^$', write: '^fc\\.answer\\.delivery\\.v2$|^mine', read: '^$' } });
    expect(r.detail).toContain('also matches mine.q, mine.q.dlq');
    expect(samples).toContain(DLQ);
  });

  it('judgePermission: read of the empty name only is nothing', () => {
    expect(judgePermission('read', '^$', { allowed: [], required: [], samples })).toEqual({ status: 'ok', text: 'read nothing' });
  });
});

describe('publisher topic permissions: one on the exchange, allowing only fc.snapshot.v2. keys and the return probe', () => {
  const topic = (write: string, exchange = EXCHANGE) => topicPermissionsCheck({ publisher: 'pub', vhost: 'v', topicPermissions: [{ exchange, write, read: '' }] });
  it.each([
    ['^fc\\.snapshot\\.v2\\.', 'ok', 'allows only fc.snapshot.v2. keys, the return probe\'s key included'],
    ['^fc\\.snapshot\\.v2\\.[^.]+\\.[0-9]+$', 'ok', 'allows only fc.snapshot.v2. keys'],
    ['^fc\\.snapshot\\.v2\\.(fcctl-return-probe|c1|c2)\\.', 'ok', 'allows only'],
    ['.*', 'fail', 'also allows (the empty key), #, *, fc.snapshot.v2'],
    ['', 'fail', "refuses the return probe's key fc.snapshot.v2.fcctl-return-probe.0 (deliveries send publishes it before each run"],
    ['^$', 'fail', "refuses the return probe's key"],
    ['^fc\\.snapshot\\.v2\\.c1\\.', 'fail', "refuses the return probe's key"],
    ['fc\\.snapshot\\.v2\\.', 'fail', 'also allows x.fc.snapshot.v2.100021.5'],
    ['^fc\\.snapshot\\.v2', 'fail', 'also allows fc.snapshot.v2, fc.snapshot.v2x.100021.5'],
    ['^fc.snapshot.v2.', 'fail', 'fc_snapshot_v2_100021_5, fc-snapshot-v2-100021-5 (only fc.snapshot.v2. keys may be published)'],
    ['^fc\\.', 'fail', 'also allows fc.snapshot.v2, fc.snapshot.v2x.100021.5, fc.snapshot.v1.100021.5, fc.events.v1.100021.5, fc.answer.delivery.v2 (only'],
    ['^fc\\.snapshot\\.v2\\.|^audit', 'fail', 'also allows audit.all'],
    ['fcctl-return-probe|^fc\\.snapshot\\.v2\\.', 'warn', "allows the return probe's key and no sample key outside fc.snapshot.v2., but its form does not prove it"],
    ['(?<x>^fc\\.snapshot\\.v2\\.)', 'warn', 'its form does not prove it'],
    ['^fc\\.snapshot\\.v2\\.(?i)', 'warn', 'is not judged (JavaScript cannot compile it)'],
  ] as const)('topic write %j → %s', (write, status, says) => {
    const r = topic(write);
    expect(r.check).toBe(ISOLATION_CHECKS.topic);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
  });

  it('none on the exchange: fail, every routing key is allowed; another exchange\'s does not count', () => {
    const none = topicPermissionsCheck({ publisher: 'pub', vhost: 'v', topicPermissions: [] });
    expect(none.status).toBe('fail');
    expect(none.detail).toBe('publisher "pub" on vhost "v" has no topic permission on fc.answer.delivery.v2: without one every routing key may be published there; set write ^fc\\.snapshot\\.v2\\.');
    const other = topic('^fc\\.snapshot\\.v2\\.', 'amq.topic');
    expect(other.status).toBe('fail');
    expect(other.detail).toContain('(only on amq.topic)');
  });

  it('{username} and {vhost} are expanded as RabbitMQ does', () => {
    const r = topicPermissionsCheck({ publisher: 'fc', vhost: 'v', topicPermissions: [{ exchange: EXCHANGE, write: '^{username}\\.snapshot\\.v2\\.', read: '' }] });
    expect(r.status).toBe('ok');
    expect(topicPermissionsCheck({ publisher: 'x', vhost: 'v', topicPermissions: [{ exchange: EXCHANGE, write: '^{username}\\.snapshot\\.v2\\.', read: '' }] }).status).toBe('fail');
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
        { source: EXCHANGE, destination: 'audit-all', destinationType: 'queue', routingKey: '#' },
        { source: EXCHANGE, destination: 'spy.x', destinationType: 'exchange', routingKey: 'fc.snapshot.v2.stranger.*' },
      ],
    });
    expect(r).toEqual({
      check: ISOLATION_CHECKS.bindings,
      status: 'fail',
      detail: '"#" → queue audit-all: "#" matches every routing key; "fc.snapshot.v2.stranger.*" → exchange spy.x: stranger is not an app key registered in application_info',
    });
  });

  it('passes naming the keys; no bindings passes; a missing exchange fails', () => {
    expect(bindingsCheck(correct())).toEqual({ check: ISOLATION_CHECKS.bindings, status: 'ok', detail: '2 bindings on fc.answer.delivery.v2, all for registered app keys (c2, svchall)' });
    expect(bindingsCheck({ ...correct(), bindings: [] })).toMatchObject({ status: 'ok', detail: 'no bindings on fc.answer.delivery.v2' });
    expect(bindingsCheck({ ...correct(), exchange: null })).toMatchObject({ status: 'fail', detail: 'fc.answer.delivery.v2 does not exist on vhost "fcctl-prod"' });
  });

  it('app keys that could not be read: fail saying so, and still name a bad form', () => {
    const f = { ...correct(), appKeys: { ok: false, reason: 'FC database not configured' } as const };
    expect(bindingsCheck(f)).toMatchObject({ status: 'fail', detail: 'the registered app keys could not be read (FC database not configured), so no key was checked against application_info' });
    const r = bindingsCheck({ ...f, bindings: [{ source: EXCHANGE, destination: 'q', destinationType: 'queue', routingKey: 'fc.snapshot.v2.*.5' }] });
    expect(r.detail).toMatch(/^"fc\.snapshot\.v2\.\*\.5" → queue q: a wildcard in place of the app key.*; the registered app keys could not be read/);
  });
});

describe('consumer queues: the queue and its .dlq exist and are durable', () => {
  const queues = (q: QueueInfo | null, dlq: QueueInfo | null) => queuesCheck({ vhost: 'v', consumerQueue: CONSUMER_QUEUE, queues: { [CONSUMER_QUEUE]: q, [DLQ]: dlq } });
  it.each([
    [durable(CONSUMER_QUEUE), durable(DLQ), 'ok', 'svc-hall.fc.answer.snapshot.v2 (classic, durable) and svc-hall.fc.answer.snapshot.v2.dlq (classic, durable) exist'],
    [durable(CONSUMER_QUEUE, { type: 'quorum' }), durable(DLQ, { type: '' }), 'ok', '(quorum, durable) and svc-hall.fc.answer.snapshot.v2.dlq (queue, durable) exist'],
    [durable(CONSUMER_QUEUE), null, 'fail', 'svc-hall.fc.answer.snapshot.v2.dlq does not exist on vhost "v"'],
    [null, null, 'fail', 'svc-hall.fc.answer.snapshot.v2 does not exist on vhost "v"; svc-hall.fc.answer.snapshot.v2.dlq does not exist on vhost "v"'],
    [durable(CONSUMER_QUEUE), durable(DLQ, { durable: false }), 'fail', 'svc-hall.fc.answer.snapshot.v2.dlq is not durable (it and its messages are lost when the broker restarts)'],
    [durable(CONSUMER_QUEUE, { autoDelete: true }), durable(DLQ), 'fail', 'svc-hall.fc.answer.snapshot.v2 is auto-delete'],
    [durable(CONSUMER_QUEUE, { exclusive: true, durable: false }), durable(DLQ), 'fail', 'is not durable (it and its messages are lost when the broker restarts), exclusive (it goes with its connection)'],
  ] as const)('%#: %s', (q, dlq, status, detail) => {
    const r = queues(q, dlq);
    expect(r.check).toBe(ISOLATION_CHECKS.queues);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(detail);
  });
  it('follows --consumer-queue', () => {
    expect(queuesCheck({ vhost: 'v', consumerQueue: 'mine', queues: { mine: durable('mine') } }).detail).toBe('mine.dlq does not exist on vhost "v"');
  });
});

describe('alternate exchange: neither an argument nor a policy', () => {
  const exchange = (args: Record<string, unknown> = {}, applied: string | null = null) => ({ name: EXCHANGE, type: 'topic', durable: true, arguments: args, policy: applied });
  const ae = (f: Partial<IsolationFacts>) => alternateExchangeCheck({ vhost: 'v', exchange: exchange(), policies: [], operatorPolicies: [], ...f });
  it.each<[string, Partial<IsolationFacts>, string, string]>([
    ['nothing', {}, 'ok', 'no alternate-exchange on fc.answer.delivery.v2: no argument, no policy applies'],
    ['an applied policy without one', { exchange: exchange({}, 'ha'), policies: [policy('ha', '.*', { 'federation-upstream-set': 'all' })] }, 'ok', 'applied policy "ha" sets none'],
    ['an argument', { exchange: exchange({ 'alternate-exchange': 'spill' }) }, 'fail', 'fc.answer.delivery.v2 was declared with alternate-exchange "spill": unroutable messages go there instead of being returned'],
    ['the applied policy', { exchange: exchange({}, 'ae'), policies: [policy('ae', '^fc\\.', { 'alternate-exchange': 'amq.fanout' })] }, 'fail', 'policy "ae" (pattern "^fc\\\\.") gives it alternate-exchange "amq.fanout"'],
    ['an operator policy', { operatorPolicies: [policy('op', '^fc', { 'alternate-exchange': 'x' }, { applyTo: 'all' })] }, 'fail', 'operator policy "op" (pattern "^fc") gives it alternate-exchange "x"'],
    ['an operator policy for queues only', { operatorPolicies: [policy('op', '^fc', { 'alternate-exchange': 'x' }, { applyTo: 'queues' })] }, 'ok', 'no argument'],
    ['an operator policy of another pattern', { operatorPolicies: [policy('op', '^svc', { 'alternate-exchange': 'x' })] }, 'ok', 'no argument'],
    ['a policy shadowed by a higher priority', { exchange: exchange({}, 'ha'), policies: [policy('ha', '.*', {}, { priority: 5 }), policy('ae', '^fc', { 'alternate-exchange': 'x' })] }, 'warn', 'policy "ae" (pattern "^fc", priority 0) matches fc.answer.delivery.v2 with alternate-exchange "x"; policy "ha" applies now instead'],
    ['a policy for queues with one', { policies: [policy('q', '.*', { 'alternate-exchange': 'x' }, { applyTo: 'queues' })] }, 'ok', 'no policy applies'],
    ['both argument and policy', { exchange: exchange({ 'alternate-exchange': 'a' }, 'ae'), policies: [policy('ae', '.*', { 'alternate-exchange': 'b' })] }, 'fail', 'declared with alternate-exchange "a"; policy "ae" (pattern ".*") gives it alternate-exchange "b"'],
  ])('%s → %s', (_name, facts, status, says) => {
    const r = ae(facts);
    expect(r.check).toBe(ISOLATION_CHECKS.alternateExchange);
    expect(r.status).toBe(status);
    expect(r.detail).toContain(says);
  });
  it('a missing exchange fails', () => {
    expect(ae({ exchange: null })).toMatchObject({ status: 'fail', detail: 'fc.answer.delivery.v2 does not exist on vhost "v"' });
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

  it('the correct setup: six items, in order, every one ok', () => {
    const results = decideIsolation(correct());
    expect(results.map((r) => r.check)).toEqual([
      ISOLATION_CHECKS.vhost,
      ISOLATION_CHECKS.permissions,
      ISOLATION_CHECKS.topic,
      ISOLATION_CHECKS.bindings,
      ISOLATION_CHECKS.queues,
      ISOLATION_CHECKS.alternateExchange,
    ]);
    expect(results.filter((r) => r.status !== 'ok')).toEqual([]);
  });

  it('each broken item fails alone', () => {
    const broken: Array<[string, Partial<IsolationFacts>]> = [
      [ISOLATION_CHECKS.vhost, { vhost: '/' }],
      [ISOLATION_CHECKS.permissions, { permissions: { configure: '.*', write: '.*', read: '.*' } }],
      [ISOLATION_CHECKS.topic, { topicPermissions: [] }],
      [ISOLATION_CHECKS.bindings, { bindings: [{ source: EXCHANGE, destination: 'q', destinationType: 'queue', routingKey: '#' }] }],
      [ISOLATION_CHECKS.queues, { queues: { [CONSUMER_QUEUE]: durable(CONSUMER_QUEUE) } }],
      [ISOLATION_CHECKS.alternateExchange, { exchange: { name: EXCHANGE, type: 'topic', durable: true, arguments: { 'alternate-exchange': 'x' }, policy: null } }],
    ];
    for (const [item, change] of broken) {
      const failed = decideIsolation({ ...correct(), ...change }).filter((r) => r.status !== 'ok');
      expect(failed.map((r) => [r.check, r.status])).toEqual([[item, 'fail']]);
    }
  });
});
