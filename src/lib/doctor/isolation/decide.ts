/**
 * `doctor --isolation`: the broker isolation table of seed 000 §6, decided — pure functions over
 * facts read from the RabbitMQ management API and the FC registry (`store.ts` reads
 * them). One {@link CheckResult} per item, each detail naming exactly what is wrong.
 *
 * | item | passes when |
 * |---|---|
 * | `isolation: vhost` | the publisher's vhost (the path of FCCTL_AMQP_URL) is not `/` and exists |
 * | `isolation: delivery exchange` | `fc.answer.delivery.v2` exists, is a topic exchange, durable, not auto-delete, not internal |
 * | `isolation: publisher permissions` | configure covers nothing or only `fc.answer.delivery.v2`; write covers it and nothing else; read covers nothing |
 * | `isolation: publisher topic permissions` | a topic permission on `fc.answer.delivery.v2` whose write pattern allows only `fc.snapshot.v2.` keys, the return probe's key included |
 * | `isolation: bindings` | every binding from the exchange is `fc.snapshot.v2.<key>.*` or `fc.snapshot.v2.<key>.<school>`, key registered in `application_info`, to a queue whose name starts with the consumer queue's (`--consumer-queue`: seed 000 §6's `svc-hall.fc.answer.snapshot.v2*`), never to an exchange |
 * | `isolation: who can read the exchange` | every user whose read permission on the vhost matches `fc.answer.delivery.v2` (and who can therefore bind a queue to it) is allowed: see below |
 * | `isolation: consumer queues` | `svc-hall.fc.answer.snapshot.v2` and its `.dlq` exist, durable, neither auto-delete nor exclusive |
 * | `isolation: alternate exchange` | no `alternate-exchange` on the exchange: not as an argument, not from an applied policy or operator policy |
 *
 * Who can read the exchange. Binding a queue (or an exchange) to the delivery exchange needs `read`
 * on it, so every user whose read regex on the vhost matches `fc.answer.delivery.v2` (RabbitMQ's
 * reading: unanchored, '' matches nothing) can route snapshots to a queue of their own (seed 000 §6:
 * no queue an unauthorised consumer can bind). Each such user is judged, the rest are not named:
 * - the publisher: `fail` (it must read nothing; `--consumer-user` cannot name it);
 * - a user named by `--consumer-user`: allowed;
 * - the management API's own user (the one doctor reads as, an administrator): allowed, and named;
 * - without `--consumer-user`: every other reader is a `warn` (doctor cannot tell the consumer's user
 *   from another), and the item is `ok` only when there is none;
 * - with it: another user tagged `administrator` is a `warn` (an administrator can give itself any
 *   permission through the management API anyway, so naming it is all doctor can do), any other
 *   user is a `fail`;
 * - a read regex JavaScript cannot compile is a `warn` (not judged) for anyone not allowed.
 */
import { DELIVERY_EXCHANGE, RETURN_PROBE_ROUTING_KEY } from '../../amqp/connect.js';
import type { BindingInfo, Policy } from '../../amqp/management.js';
import type { CheckResult } from '../decide.js';
import {
  compile,
  expandTopicPattern,
  judgePermission,
  listOf,
  outsideAlternatives,
  provablePrefixes,
  quote,
  readsExchange,
  resourceSamples,
  type Status,
  TOPIC_SAMPLES_OUTSIDE,
} from './permissions.js';
import { DLQ_SUFFIX, type IsolationFacts, ISOLATION_CHECKS, ROUTING_KEY_PREFIX } from './types.js';

/**
 * The publisher's user and vhost as amqplib reads an AMQP URL: no path or `/` is the vhost `/`, the
 * path is percent-decoded; no user and no password is `guest`. Null when it is not a URL.
 * @example publisherOf('amqp://pub:pw@mq:5672/fcctl') // { user: 'pub', vhost: 'fcctl' }
 */
export function publisherOf(amqpUrl: string): { user: string; vhost: string } | null {
  let url: URL;
  try {
    url = new URL(amqpUrl);
  } catch {
    return null;
  }
  const path = url.pathname;
  let vhost: string;
  let user: string;
  try {
    vhost = path === '' || path === '/' ? '/' : decodeURIComponent(path.slice(1));
    user = url.username === '' && url.password === '' ? 'guest' : decodeURIComponent(url.username);
  } catch {
    return null;
  }
  return { user, vhost };
}

/**
 * With `auth_mechanism=external` the broker takes the login from the client certificate and the
 * URL's user is never sent: only a user written in the URL says which account --isolation checks
 * (without one it would check `guest`).
 * @example externalWithoutUser('amqps://mq/fcctl?certfile=/c&keyfile=/k&auth_mechanism=external') // true
 */
export function externalWithoutUser(amqpUrl: string): boolean {
  try {
    const url = new URL(amqpUrl);
    return url.searchParams.get('auth_mechanism')?.toLowerCase() === 'external' && url.username === '';
  } catch {
    return false;
  }
}

const WORST: readonly Status[] = ['fail', 'warn', 'ok'];
const worst = (statuses: readonly Status[]): Status => WORST.find((s) => statuses.includes(s)) ?? 'ok';

// --- publisher permissions --------------------------------------------------------------------

/** Item 3: the publisher's configure, write and read permissions on the vhost. */
export function permissionsCheck(
  f: Pick<IsolationFacts, 'publisher' | 'vhost' | 'permissions' | 'consumerQueue'>,
): CheckResult {
  const check = ISOLATION_CHECKS.permissions;
  const who = `publisher ${quote(f.publisher)} on vhost ${quote(f.vhost)}`;
  if (f.permissions === null)
    return { check, status: 'fail', detail: `${who} has no permissions (it cannot publish to ${DELIVERY_EXCHANGE})` };
  const samples = resourceSamples(f.consumerQueue);
  const only = [DELIVERY_EXCHANGE];
  const verdicts = [
    judgePermission('configure', f.permissions.configure, { allowed: only, required: [], samples }),
    judgePermission('write', f.permissions.write, { allowed: only, required: only, samples }),
    judgePermission('read', f.permissions.read, { allowed: [], required: [], samples }),
  ];
  const status = worst(verdicts.map((v) => v.status));
  const shown = status === 'ok' ? verdicts : verdicts.filter((v) => v.status !== 'ok');
  return { check, status, detail: `${who}: ${shown.map((v) => v.text).join('; ')}` };
}

// --- topic permissions --------------------------------------------------------------------------

/** Item 4: the publisher's topic permission on the delivery exchange. */
export function topicPermissionsCheck(
  f: Pick<IsolationFacts, 'publisher' | 'vhost' | 'topicPermissions'>,
): CheckResult {
  const check = ISOLATION_CHECKS.topic;
  const who = `publisher ${quote(f.publisher)} on vhost ${quote(f.vhost)}`;
  const entry = f.topicPermissions.find((t) => t.exchange === DELIVERY_EXCHANGE);
  if (entry === undefined) {
    const others = f.topicPermissions.map((t) => t.exchange);
    return {
      check,
      status: 'fail',
      detail: `${who} has no topic permission on ${DELIVERY_EXCHANGE}${others.length ? ` (only on ${listOf(others)})` : ''}: without one every routing key may be published there; set write ^fc\\.snapshot\\.v2\\.`,
    };
  }
  const re = expandTopicPattern(entry.write, f);
  const shown = `topic write ${quote(entry.write)} on ${DELIVERY_EXCHANGE}`;
  // '' stands for '^$' (only the empty routing key), as for resource permissions
  const rx = compile(re === '' ? '^$' : re);
  if (rx === null)
    return {
      check,
      status: 'warn',
      detail: `${who}: ${shown} is not judged (JavaScript cannot compile it): check by hand that it allows only ${ROUTING_KEY_PREFIX} keys and ${RETURN_PROBE_ROUTING_KEY}`,
    };
  const problems: string[] = [];
  if (!rx.test(RETURN_PROBE_ROUTING_KEY)) {
    problems.push(
      `${shown} refuses the return probe's key ${RETURN_PROBE_ROUTING_KEY} (deliveries send publishes it before each run and sends nothing when it is refused)`,
    );
  }
  const outside = TOPIC_SAMPLES_OUTSIDE.filter((k) => rx.test(k));
  if (outside.length)
    problems.push(
      `${shown} also allows ${listOf(outside.map((k) => (k === '' ? '(the empty key)' : k)))} (only ${ROUTING_KEY_PREFIX} keys may be published)`,
    );
  const departing = re === '' ? [] : outsideAlternatives(re);
  if (departing.length) {
    const each = departing.map((a) => `${quote(a.alternative)} allows keys starting ${quote(a.literal)}`);
    problems.push(
      `${shown}: its top-level alternative${departing.length === 1 ? '' : 's'} ${listOf(each)}, outside ${ROUTING_KEY_PREFIX} (only ${ROUTING_KEY_PREFIX} keys may be published)`,
    );
  }
  if (problems.length) return { check, status: 'fail', detail: `${who}: ${problems.join('; ')}` };
  const prefixes = re === '' ? null : provablePrefixes(re);
  if (prefixes?.every((p) => p.startsWith(ROUTING_KEY_PREFIX))) {
    return {
      check,
      status: 'ok',
      detail: `${who}: ${shown} allows only ${ROUTING_KEY_PREFIX} keys, the return probe's key included`,
    };
  }
  return {
    check,
    status: 'warn',
    detail: `${who}: ${shown} allows the return probe's key and no sample key outside ${ROUTING_KEY_PREFIX}, but its form does not prove it (start it with ^fc\\.snapshot\\.v2\\.)`,
  };
}

// --- bindings -----------------------------------------------------------------------------------

const BINDING_FORM = /^fc\.snapshot\.v2\.([^.*#\s\u0000-\u001f\u007f]+)\.(\*|[1-9][0-9]*)$/;
const PROBE_KEY = RETURN_PROBE_ROUTING_KEY.split('.')[3]!;

/**
 * Why one binding key on the delivery exchange breaks isolation, or null when it is allowed: exactly
 * `fc.snapshot.v2.<key>.*` or `fc.snapshot.v2.<key>.<positive integer>` with a registered key
 * (`registered` null: keys unknown, only the form is judged).
 * @example bindingProblem('#', new Set(['k1'])) // '"#" matches every routing key'
 * @example bindingProblem('fc.snapshot.v2.k1.*', new Set(['k1'])) // null
 */
export function bindingProblem(routingKey: string, registered: ReadonlySet<string> | null): string | null {
  if (routingKey.startsWith(`${ROUTING_KEY_PREFIX}${PROBE_KEY}.`)) {
    return `binds the return probe's key: the probe would be routed instead of returned, and deliveries send refuses to send`;
  }
  const m = BINDING_FORM.exec(routingKey);
  if (m === null) {
    if (routingKey === '#') return '"#" matches every routing key';
    if (/^[*#](\.|$)/.test(routingKey)) return 'a leading wildcard matches keys of every prefix';
    if (/^fc\.snapshot\.v2\.[*#](\.|$)/.test(routingKey))
      return "a wildcard in place of the app key matches every consumer's snapshots";
    if (routingKey.split('.').includes('#')) return '"#" matches any number of words';
    return `not ${ROUTING_KEY_PREFIX}<key>.* or ${ROUTING_KEY_PREFIX}<key>.<school>`;
  }
  const key = m[1]!;
  if (registered !== null && !registered.has(key)) return `${key} is not an app key registered in application_info`;
  return null;
}

/**
 * Why a binding's destination breaks isolation, or null when it is allowed: a queue whose name starts
 * with the consumer queue's (seed 000 §6: the consumer's queues are `svc-hall.fc.answer.snapshot.v2*`),
 * never an exchange (an exchange-to-exchange binding sends snapshots on to wherever that exchange routes).
 * @example bindingDestinationProblem({ destination: 'rogue.q', destinationType: 'queue' }, 'svc-hall.fc.answer.snapshot.v2') // 'queue rogue.q is not …'
 */
export function bindingDestinationProblem(
  b: Pick<BindingInfo, 'destination' | 'destinationType'>,
  consumerQueue: string,
): string | null {
  if (b.destinationType === 'exchange')
    return `an exchange-to-exchange binding sends snapshots on to wherever exchange ${b.destination} routes them (bind only the consumer's queues)`;
  if (!b.destination.startsWith(consumerQueue))
    return `queue ${b.destination} is not the consumer's (its name does not start with ${consumerQueue})`;
  return null;
}

/** Item 5: the bindings whose source is the delivery exchange: their keys and their destinations. */
export function bindingsCheck(
  f: Pick<IsolationFacts, 'vhost' | 'exchange' | 'bindings' | 'appKeys' | 'consumerQueue'>,
): CheckResult {
  const check = ISOLATION_CHECKS.bindings;
  if (f.exchange === null)
    return { check, status: 'fail', detail: `${DELIVERY_EXCHANGE} does not exist on vhost ${quote(f.vhost)}` };
  const registered = f.appKeys.ok ? new Set(f.appKeys.keys) : null;
  const wrong = f.bindings.flatMap((b) => {
    const problems = [bindingProblem(b.routingKey, registered), bindingDestinationProblem(b, f.consumerQueue)].filter(
      (p): p is string => p !== null,
    );
    return problems.length === 0
      ? []
      : [`${quote(b.routingKey)} → ${b.destinationType} ${b.destination}: ${problems.join(', and ')}`];
  });
  const unknown = f.appKeys.ok
    ? []
    : [
        `the registered app keys could not be read (${f.appKeys.reason}), so no key was checked against application_info`,
      ];
  if (wrong.length || unknown.length) return { check, status: 'fail', detail: [...wrong, ...unknown].join('; ') };
  if (f.bindings.length === 0) return { check, status: 'ok', detail: `no bindings on ${DELIVERY_EXCHANGE}` };
  const keys = [...new Set(f.bindings.map((b) => BINDING_FORM.exec(b.routingKey)![1]!))].sort();
  return {
    check,
    status: 'ok',
    detail: `${f.bindings.length} binding${f.bindings.length === 1 ? '' : 's'} on ${DELIVERY_EXCHANGE}, all to ${f.consumerQueue}* queues and for registered app keys (${listOf(keys)})`,
  };
}

// --- who can read the exchange ---------------------------------------------------------------------

/** The management tag of a user who may do anything through the management API. */
export const ADMINISTRATOR_TAG = 'administrator';

/**
 * Item 6: the users who can read the delivery exchange, and so bind a queue to it (the rule is in
 * this file's header). Each is named with its read regex; the allowed ones last.
 */
export function readersCheck(
  f: Pick<IsolationFacts, 'vhost' | 'publisher' | 'vhostPermissions' | 'userTags' | 'consumerUsers' | 'managementUser'>,
): CheckResult {
  const check = ISOLATION_CHECKS.readers;
  const consumers = new Set(f.consumerUsers);
  const given = consumers.size > 0;
  const verdicts: Array<{ status: Status; text: string }> = [];
  for (const p of f.vhostPermissions) {
    const reads = readsExchange(p.read);
    if (reads === false) continue;
    const admin = (f.userTags[p.user] ?? []).includes(ADMINISTRATOR_TAG);
    const who = `${quote(p.user)} (${admin ? 'administrator, ' : ''}read ${quote(p.read)}${reads === null ? ', not judged: JavaScript cannot compile it' : ''})`;
    if (p.user === f.publisher) {
      verdicts.push({
        status: reads === null ? 'warn' : 'fail',
        text: `the publisher ${who}: it must read nothing (see ${ISOLATION_CHECKS.permissions})`,
      });
    } else if (consumers.has(p.user)) {
      verdicts.push({ status: 'ok', text: `consumer user ${who}` });
    } else if (p.user === f.managementUser) {
      verdicts.push({ status: 'ok', text: `the management API's own user ${who}` });
    } else if (reads === null) {
      verdicts.push({ status: 'warn', text: `${who}: check by hand that it does not match ${DELIVERY_EXCHANGE}` });
    } else if (!given) {
      verdicts.push({ status: 'warn', text: who });
    } else if (admin) {
      verdicts.push({
        status: 'warn',
        text: `${who} is not a --consumer-user (an administrator can give itself any permission anyway; take away its permissions on this vhost if it does not need them)`,
      });
    } else {
      verdicts.push({ status: 'fail', text: `${who} is not a --consumer-user` });
    }
  }
  const where = `on vhost ${quote(f.vhost)}`;
  const unreadable = f.consumerUsers.filter(
    (u) => !f.vhostPermissions.some((p) => p.user === u && readsExchange(p.read) !== false),
  );
  const note = unreadable.length ? ` (--consumer-user ${listOf(unreadable.map(quote))} cannot read it)` : '';
  if (verdicts.length === 0)
    return {
      check,
      status: 'ok',
      detail: `no user ${where} can read ${DELIVERY_EXCHANGE}, so none can bind a queue to it${note}`,
    };
  const status = worst(verdicts.map((v) => v.status));
  // failures first, then warnings, then the allowed readers
  const ordered = WORST.flatMap((s) => verdicts.filter((v) => v.status === s));
  const hint =
    !given && verdicts.some((v) => v.status === 'warn')
      ? `; no --consumer-user given: name the consumer's user(s) with --consumer-user (then any other reader fails, an administrator warns)`
      : '';
  return {
    check,
    status,
    detail: `users ${where} who can read ${DELIVERY_EXCHANGE}, and so bind a queue to it: ${ordered.map((v) => v.text).join('; ')}${hint}${note}`,
  };
}

// --- delivery exchange ------------------------------------------------------------------------------

/**
 * Item 2: the delivery exchange as the management API shows it: a topic exchange (a fanout sends every
 * snapshot to every bound queue, a headers exchange ignores the routing key), durable and not
 * auto-delete (once it is gone, whoever declares it first decides its type and arguments), not
 * internal (clients could not publish to it).
 */
export function deliveryExchangeCheck(f: Pick<IsolationFacts, 'vhost' | 'exchange'>): CheckResult {
  const check = ISOLATION_CHECKS.exchange;
  if (f.exchange === null)
    return { check, status: 'fail', detail: `${DELIVERY_EXCHANGE} does not exist on vhost ${quote(f.vhost)}` };
  const e = f.exchange;
  const why: Record<string, string> = {
    fanout: 'it sends every snapshot to every bound queue, whatever its routing key',
    headers: 'it routes by headers and ignores the routing key',
  };
  const wrong = [
    ...(e.type === 'topic'
      ? []
      : [
          `a ${e.type || '(typeless)'} exchange, not topic (${why[e.type] ?? 'v2 routing keys and bindings are topic patterns'})`,
        ]),
    ...(e.durable
      ? []
      : [
          'not durable (it is gone after a broker restart, and whoever declares it first then decides its type and arguments)',
        ]),
    ...(e.autoDelete
      ? [
          'auto-delete (it goes with its last binding, and whoever declares it first then decides its type and arguments)',
        ]
      : []),
    ...(e.internal ? ['internal (clients cannot publish to it)'] : []),
  ];
  if (wrong.length)
    return { check, status: 'fail', detail: `${DELIVERY_EXCHANGE} on vhost ${quote(f.vhost)} is ${wrong.join('; ')}` };
  return { check, status: 'ok', detail: `${DELIVERY_EXCHANGE}: topic, durable, not auto-delete, not internal` };
}

// --- queues -------------------------------------------------------------------------------------

/** Item 7: the consumer queue and its dead-letter queue. */
export function queuesCheck(f: Pick<IsolationFacts, 'vhost' | 'consumerQueue' | 'queues'>): CheckResult {
  const check = ISOLATION_CHECKS.queues;
  const names = [f.consumerQueue, `${f.consumerQueue}${DLQ_SUFFIX}`];
  const problems: string[] = [];
  const good: string[] = [];
  for (const name of names) {
    const q = f.queues[name] ?? null;
    if (q === null) {
      problems.push(`${name} does not exist on vhost ${quote(f.vhost)}`);
      continue;
    }
    const wrong = [
      ...(q.durable ? [] : ['not durable (it and its messages are lost when the broker restarts)']),
      ...(q.autoDelete ? ['auto-delete (it goes when its last consumer does)'] : []),
      ...(q.exclusive ? ['exclusive (it goes with its connection)'] : []),
    ];
    if (wrong.length) problems.push(`${name} is ${wrong.join(', ')}`);
    else good.push(`${name} (${q.type || 'queue'}, durable)`);
  }
  return problems.length
    ? { check, status: 'fail', detail: problems.join('; ') }
    : { check, status: 'ok', detail: `${good.join(' and ')} exist` };
}

// --- alternate exchange -------------------------------------------------------------------------

const AE = 'alternate-exchange';
const appliesToExchanges = (p: Policy) => p.applyTo === 'exchanges' || p.applyTo === 'all';

/** Whether a policy's pattern matches a name (JavaScript's reading of it; false when it cannot compile). */
function patternMatches(p: Policy, name: string): boolean {
  return compile(p.pattern)?.test(name) ?? false;
}

/**
 * Item 8: no alternate exchange on the delivery exchange. With one, an unroutable message goes there
 * instead of being returned: `mandatory` returns never happen (NO_ROUTE is never seen, the return
 * probe fails) and snapshots reach whatever that exchange routes to. A policy is invisible to AMQP,
 * which is why it is read here: the applied policy (the exchange names it), every operator policy
 * whose pattern matches (RabbitMQ 3.10 refuses `alternate-exchange` in an operator policy; they are
 * read anyway, for brokers and plugins that allow it), and — as `warn` — a matching policy that a
 * higher-priority one shadows now (removing that one would apply it).
 */
export function alternateExchangeCheck(
  f: Pick<IsolationFacts, 'vhost' | 'exchange' | 'policies' | 'operatorPolicies'>,
): CheckResult {
  const check = ISOLATION_CHECKS.alternateExchange;
  if (f.exchange === null)
    return { check, status: 'fail', detail: `${DELIVERY_EXCHANGE} does not exist on vhost ${quote(f.vhost)}` };
  const problems: string[] = [];
  const argument = f.exchange.arguments[AE];
  if (argument !== undefined) problems.push(`${DELIVERY_EXCHANGE} was declared with ${AE} ${quote(String(argument))}`);
  const applied = f.exchange.policy === null ? undefined : f.policies.find((p) => p.name === f.exchange!.policy);
  if (applied && applied.definition[AE] !== undefined) {
    problems.push(
      `policy ${quote(applied.name)} (pattern ${quote(applied.pattern)}) gives it ${AE} ${quote(String(applied.definition[AE]))}`,
    );
  }
  for (const p of f.operatorPolicies) {
    if (p.definition[AE] !== undefined && appliesToExchanges(p) && patternMatches(p, DELIVERY_EXCHANGE)) {
      problems.push(
        `operator policy ${quote(p.name)} (pattern ${quote(p.pattern)}) gives it ${AE} ${quote(String(p.definition[AE]))}`,
      );
    }
  }
  if (problems.length) {
    return {
      check,
      status: 'fail',
      detail: `${problems.join('; ')}: unroutable messages go there instead of being returned (no NO_ROUTE, no return probe)`,
    };
  }
  const latent = f.policies.filter(
    (p) =>
      p !== applied && p.definition[AE] !== undefined && appliesToExchanges(p) && patternMatches(p, DELIVERY_EXCHANGE),
  );
  if (latent.length) {
    return {
      check,
      status: 'warn',
      detail: `${latent.map((p) => `policy ${quote(p.name)} (pattern ${quote(p.pattern)}, priority ${p.priority}) matches ${DELIVERY_EXCHANGE} with ${AE} ${quote(String(p.definition[AE]))}`).join('; ')}; ${applied ? `policy ${quote(applied.name)} applies now instead` : 'none applies now'}, removing it would apply the alternate exchange`,
    };
  }
  return {
    check,
    status: 'ok',
    detail: `no ${AE} on ${DELIVERY_EXCHANGE}: no argument${applied ? `, applied policy ${quote(applied.name)} sets none` : ', no policy applies'}`,
  };
}

// --- vhost and the whole table ------------------------------------------------------------------

/** Item 1: a vhost of its own (seed 000 §6: no plain-text snapshots on a vhost shared across applications). */
export function isolationVhostCheck(f: Pick<IsolationFacts, 'vhost' | 'vhostExists'>): CheckResult {
  const check = ISOLATION_CHECKS.vhost;
  if (f.vhost === '/')
    return {
      check,
      status: 'fail',
      detail:
        'FCCTL_AMQP_URL uses the default vhost "/": v2 snapshots need a vhost of their own, shared by form-center and svc-hall only (seed 000 §6)',
    };
  if (!f.vhostExists) return { check, status: 'fail', detail: `vhost ${quote(f.vhost)} does not exist on the broker` };
  return { check, status: 'ok', detail: `vhost ${quote(f.vhost)}` };
}

/**
 * The whole table: one result per item, in {@link ISOLATION_CHECKS} order.
 * @example decideIsolation(facts).filter((r) => r.status === 'fail').map((r) => r.check)
 */
export function decideIsolation(f: IsolationFacts): CheckResult[] {
  return [
    isolationVhostCheck(f),
    deliveryExchangeCheck(f),
    permissionsCheck(f),
    topicPermissionsCheck(f),
    bindingsCheck(f),
    readersCheck(f),
    queuesCheck(f),
    alternateExchangeCheck(f),
  ];
}
