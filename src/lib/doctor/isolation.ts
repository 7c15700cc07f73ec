/**
 * `doctor --isolation`: the broker isolation table of seed 000 §6, decided — pure functions over
 * facts read from the RabbitMQ management API and the FC registry (`isolation-inspect.ts` reads
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
 * How permission regexes are judged. RabbitMQ matches them unanchored (Erlang `re`, PCRE) against a
 * resource's name, and reads '' as "nothing" (it stands for `^$`; no resource is named '': the
 * default exchange is checked as `amq.default`). A regex is **proven** when its form fixes the names
 * it admits: '' or `^$` (none), `^name$` with only escaped punctuation, alternatives of those
 * (`^(a|b)$`, `^a$|^b$`). Any other regex is tested against sample names
 * ({@link resourceSamples}: the exchange, the consumer queues, the `amq.*` exchanges, a server-named
 * queue, neighbours such as `fc.answer.delivery.v2x`, `fc.events.v1`, and the exchange's name with
 * its dots replaced, which catches an unescaped `.`). A sample it must not match → `fail`; a name it
 * must match and does not → `fail`; no sample wrong but the form proves nothing → `warn` (it could
 * still admit a name no sample has: write the exact anchored name). JavaScript runs the regexes;
 * the simple forms used for permissions mean the same in both dialects, and one JavaScript cannot
 * compile is `warn` (not judged).
 *
 * Topic permissions: RabbitMQ checks a routing key against the write pattern of the publisher's topic
 * permission **for that exchange**; with none, every routing key is allowed. `{username}` and
 * `{vhost}` in a pattern are expanded first, as RabbitMQ does. The pattern is proven when every top-
 * level alternative is `^` followed by literal text starting `fc.snapshot.v2.`; otherwise tested
 * against sample keys (`fc.snapshot.v1.…`, `x.fc.snapshot.v2.…`, `#`, `fc.snapshot.v2x.…`, the empty
 * key, …) as above; a top-level alternative `^` + literal text that departs from `fc.snapshot.v2.`
 * (`^amq\.`, `^fc\.snapshot\.v3`) provably allows keys outside the prefix and fails whatever the
 * samples say. It must allow {@link RETURN_PROBE_ROUTING_KEY}: `deliveries send` publishes that
 * probe before each run and sends nothing when the probe is refused.
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
import { DELIVERY_EXCHANGE, RETURN_PROBE_ROUTING_KEY } from '../amqp/connect.js';
import type {
  BindingInfo,
  ExchangeInfo,
  Permissions,
  Policy,
  QueueInfo,
  TopicPermission,
  UserPermissions,
} from '../amqp/management.js';
import type { CheckResult } from './checks.js';

/** The prefix of every v2 routing key (SPEC §4). */
export const ROUTING_KEY_PREFIX = 'fc.snapshot.v2.';

/** The svc-hall consumer queue (seed 000 §6); its dead-letter queue is this name plus `.dlq`. */
export const CONSUMER_QUEUE = 'svc-hall.fc.answer.snapshot.v2';
export const DLQ_SUFFIX = '.dlq';

/** The names of the items, in the order they are reported. */
export const ISOLATION_CHECKS = {
  vhost: 'isolation: vhost',
  exchange: 'isolation: delivery exchange',
  permissions: 'isolation: publisher permissions',
  topic: 'isolation: publisher topic permissions',
  bindings: 'isolation: bindings',
  readers: 'isolation: who can read the exchange',
  queues: 'isolation: consumer queues',
  alternateExchange: 'isolation: alternate exchange',
  /** reported instead of the items when the management API could not be read */
  api: 'isolation: management API',
} as const;

/** The registered app keys (`application_info.app_key`), or why they could not be read. */
export type AppKeys =
  | { readonly ok: true; readonly keys: readonly string[] }
  | { readonly ok: false; readonly reason: string };

/** Everything the decision needs, read from the management API and the FC database. */
export interface IsolationFacts {
  readonly vhost: string;
  readonly vhostExists: boolean;
  /** the publisher: the user of FCCTL_AMQP_URL */
  readonly publisher: string;
  readonly consumerQueue: string;
  /** null: the publisher has no permissions on the vhost */
  readonly permissions: Permissions | null;
  readonly topicPermissions: readonly TopicPermission[];
  /** null: the delivery exchange does not exist */
  readonly exchange: ExchangeInfo | null;
  readonly policies: readonly Policy[];
  readonly operatorPolicies: readonly Policy[];
  /** the bindings whose source is the delivery exchange */
  readonly bindings: readonly BindingInfo[];
  /** the consumer queue and its dlq by name; null: it does not exist */
  readonly queues: Readonly<Record<string, QueueInfo | null>>;
  readonly appKeys: AppKeys;
  /** every user with permissions on the vhost, the publisher included */
  readonly vhostPermissions: readonly UserPermissions[];
  /** the tags of the users of `vhostPermissions` by name (a user missing here has none) */
  readonly userTags: Readonly<Record<string, readonly string[]>>;
  /** the consumer's users (`--consumer-user`), who may read the exchange; empty: not given */
  readonly consumerUsers: readonly string[];
  /** the user the management API is read as */
  readonly managementUser: string;
}

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

// --- regexes ------------------------------------------------------------------------------------

/**
 * The top-level alternatives of a regex (`a|b(c|d)` → `['a', 'b(c|d)']`), skipping escapes and
 * character classes; null when its groups do not balance.
 * @example topLevelAlternatives('^a$|^b$') // ['^a$', '^b$']
 */
export function topLevelAlternatives(re: string): string[] | null {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < re.length; i++) {
    const c = re[i];
    if (c === '\\') {
      i++;
    } else if (c === '[') {
      // a class ends at the first unescaped `]` that is not its first member
      let j = i + 1;
      if (re[j] === '^') j++;
      if (re[j] === ']') j++;
      while (j < re.length && re[j] !== ']') j += re[j] === '\\' ? 2 : 1;
      if (j >= re.length) return null;
      i = j;
    } else if (c === '(') {
      depth++;
    } else if (c === ')') {
      if (--depth < 0) return null;
    } else if (c === '|' && depth === 0) {
      out.push(re.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) return null;
  out.push(re.slice(start));
  return out;
}

const META = new Set(['.', '^', '$', '|', '?', '*', '+', '(', ')', '[', ']', '{', '}']);

/**
 * Splits the literal start of a regex fragment into characters: plain characters and escaped
 * punctuation (`\.`); stops at the first metacharacter or class escape (`\d`). `rest` is what
 * follows. A literal character followed by a quantifier is not part of the literal start.
 */
function literalStart(fragment: string): { literal: string; rest: string } {
  const chars: string[] = [];
  const ends: number[] = [];
  let i = 0;
  while (i < fragment.length) {
    const c = fragment[i]!;
    if (c === '\\') {
      const next = fragment[i + 1];
      if (next === undefined || /[A-Za-z0-9]/.test(next)) break;
      chars.push(next);
      i += 2;
    } else if (META.has(c)) {
      break;
    } else {
      chars.push(c);
      i += 1;
    }
    ends.push(i);
  }
  // `ab?` admits `a`: a quantified last character is not certain
  if (chars.length > 0 && /^[?*+{]/.test(fragment.slice(i))) {
    chars.pop();
    ends.pop();
  }
  const end = ends.at(-1) ?? 0;
  return { literal: chars.join(''), rest: fragment.slice(end) };
}

/** The text a fragment stands for when it is literal through and through, else null. */
function literalOf(fragment: string): string | null {
  const { literal, rest } = literalStart(fragment);
  return rest === '' ? literal : null;
}

/** `(…)` or `(?:…)` enclosing the whole fragment → its inside; else null. */
function groupInside(fragment: string): string | null {
  const open = fragment.startsWith('(?:') ? 3 : fragment.startsWith('(') && !fragment.startsWith('(?') ? 1 : 0;
  if (open === 0 || !fragment.endsWith(')') || fragment.endsWith('\\)')) return null;
  const inside = fragment.slice(open, -1);
  // the first group must close at the very end: its inside balances on its own
  return topLevelAlternatives(inside) === null ? null : inside;
}

/** Strips `^` … `$` from an alternative; null when it is not anchored at both ends. */
function anchored(alt: string): string | null {
  if (!alt.startsWith('^') || !alt.endsWith('$')) return null;
  const body = alt.slice(1, -1);
  // `\$` at the end is an escaped dollar, not an anchor
  const slashes = /\\*$/.exec(body)![0].length;
  return slashes % 2 === 0 ? body : null;
}

/**
 * The exact names a permission regex admits, when its form proves them: '' and `^$` (only the
 * empty name), `^lit$`, `^(a|b)$`, `^(?:a|b)$`, `^a$|^b$`; null for any other form.
 * @example exactNames('^fc\\.answer\\.delivery\\.v2$') // ['fc.answer.delivery.v2']
 * @example exactNames('.*') // null
 */
export function exactNames(re: string): string[] | null {
  if (re === '') return [''];
  const alternatives = topLevelAlternatives(re);
  if (alternatives === null) return null;
  const names: string[] = [];
  for (const alt of alternatives) {
    const body = anchored(alt);
    if (body === null) return null;
    const inside = groupInside(body);
    for (const part of inside === null ? [body] : topLevelAlternatives(inside)!) {
      const name = literalOf(part);
      if (name === null) return null;
      names.push(name);
    }
  }
  return [...new Set(names)];
}

/**
 * The literal prefixes a regex's matches provably start with: one per top-level alternative, each
 * `^` then literal text (the part before any metacharacter); null when an alternative is not
 * anchored at the start.
 * @example provablePrefixes('^fc\\.snapshot\\.v2\\.') // ['fc.snapshot.v2.']
 */
export function provablePrefixes(re: string): string[] | null {
  const alternatives = topLevelAlternatives(re);
  if (alternatives === null) return null;
  const prefixes: string[] = [];
  for (const alt of alternatives) {
    if (!alt.startsWith('^')) return null;
    prefixes.push(literalStart(alt.slice(1)).literal);
  }
  return prefixes;
}

/** A RabbitMQ regex as a JavaScript one; null when JavaScript cannot compile it. */
function compile(re: string): RegExp | null {
  try {
    return new RegExp(re);
  } catch {
    return null;
  }
}

const quote = (s: string) => JSON.stringify(s);

/** `a, b, c (and 4 more)` */
function listOf(items: readonly string[], max = 6): string {
  const shown = items.slice(0, max).join(', ');
  return items.length > max ? `${shown} (and ${items.length - max} more)` : shown;
}

type Status = CheckResult['status'];
const WORST: readonly Status[] = ['fail', 'warn', 'ok'];
const worst = (statuses: readonly Status[]): Status => WORST.find((s) => statuses.includes(s)) ?? 'ok';

// --- publisher permissions --------------------------------------------------------------------

/**
 * Names a publisher's configure/write/read regexes are tested against when their form proves
 * nothing: the exchange, the consumer queues, the broker's own exchanges, a server-named queue,
 * other exchanges and near misses of the exchange's name.
 * @example resourceSamples('svc-hall.fc.answer.snapshot.v2').includes('amq.topic') // true
 */
export function resourceSamples(consumerQueue: string): string[] {
  return [
    DELIVERY_EXCHANGE,
    consumerQueue,
    `${consumerQueue}${DLQ_SUFFIX}`,
    'amq.default',
    'amq.direct',
    'amq.fanout',
    'amq.topic',
    'amq.headers',
    'amq.match',
    'amq.rabbitmq.trace',
    'amq.gen-Xq3vN0Jd1LWS2Jq7dD6fMg',
    'fc.events.v1',
    'fc.answer.delivery.v1',
    'fc.answer.delivery.v2x',
    'fc.answer.delivery.v2.dlx',
    'xfc.answer.delivery.v2',
    'fc_answer_delivery_v2',
    'fc-answer-delivery-v2',
    'other-app.queue',
    'x',
  ];
}

/**
 * One permission regex against what it may cover: `allowed` names it may admit, `required` ones it
 * must. The text starts with the operation (`write ".*" also matches …`).
 * @example judgePermission('write', '^fc\\.answer\\.delivery\\.v2$', { allowed: ['fc.answer.delivery.v2'], required: ['fc.answer.delivery.v2'], samples: [] }).status // 'ok'
 */
export function judgePermission(
  op: 'configure' | 'write' | 'read',
  re: string,
  rule: {
    readonly allowed: readonly string[];
    readonly required: readonly string[];
    readonly samples: readonly string[];
  },
): { status: Status; text: string } {
  const allowed = new Set(rule.allowed);
  const must =
    op === 'read'
      ? 'must match nothing: read on the exchange lets its holder bind a queue to it'
      : `may cover only ${listOf(rule.allowed) || 'nothing'}`;
  const exact = exactNames(re);
  if (exact !== null) {
    // no resource is named '': '^$' grants nothing
    const names = exact.filter((n) => n !== '');
    const extra = names.filter((n) => !allowed.has(n));
    const missing = rule.required.filter((n) => !names.includes(n));
    const problems = [
      ...(extra.length ? [`${op} ${quote(re)} covers ${listOf(extra)} (${must})`] : []),
      ...(missing.length
        ? [
            `${op} ${quote(re)} does not cover ${listOf(missing)}${op === 'write' ? ' (the publisher cannot publish)' : ''}`,
          ]
        : []),
    ];
    if (problems.length) return { status: 'fail', text: problems.join('; ') };
    return { status: 'ok', text: `${op} ${names.length ? `only ${listOf(names)}` : 'nothing'}` };
  }
  const rx = compile(re);
  if (rx === null)
    return {
      status: 'warn',
      text: `${op} ${quote(re)} is not judged (JavaScript cannot compile it): check by hand that it ${must}`,
    };
  const extra = rule.samples.filter((s) => rx.test(s) && !allowed.has(s));
  const missing = rule.required.filter((n) => !rx.test(n));
  const problems = [
    ...(extra.length ? [`${op} ${quote(re)} also matches ${listOf(extra)} (${must})`] : []),
    ...(missing.length
      ? [
          `${op} ${quote(re)} does not match ${listOf(missing)}${op === 'write' ? ' (the publisher cannot publish)' : ''}`,
        ]
      : []),
  ];
  if (problems.length) return { status: 'fail', text: problems.join('; ') };
  const exactForm = rule.allowed.length ? `^${rule.allowed[0]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$` : '^$';
  return {
    status: 'warn',
    text: `${op} ${quote(re)} matches no sample name it must not, but its form does not prove it covers only ${listOf(rule.allowed) || 'nothing'} (write ${exactForm})`,
  };
}

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

/** Routing keys a topic write pattern must refuse: everything outside `fc.snapshot.v2.`. */
export const TOPIC_SAMPLES_OUTSIDE: readonly string[] = [
  '',
  '#',
  '*',
  'fc.snapshot.v2',
  'fc.snapshot.v2x.100021.5',
  'fc.snapshot.v1.100021.5',
  'fc_snapshot_v2_100021_5',
  'fc-snapshot-v2-100021-5',
  'x.fc.snapshot.v2.100021.5',
  'fc.events.v1.100021.5',
  'fc.answer.delivery.v2',
  'audit.all',
];

/** Expands the variables RabbitMQ expands in topic permission patterns. */
function expandTopicPattern(re: string, f: { publisher: string; vhost: string }): string {
  return re.replaceAll('{username}', f.publisher).replaceAll('{vhost}', f.vhost);
}

/** Whether literal text a key starts with proves the key is outside `prefix`: they differ before either ends. */
function departsFrom(literal: string, prefix: string): boolean {
  const n = Math.min(literal.length, prefix.length);
  return literal.slice(0, n) !== prefix.slice(0, n);
}

/**
 * The top-level alternatives of a topic pattern that provably allow only keys outside
 * `fc.snapshot.v2.`: `^` then literal text departing from the prefix. `^fc\.` is not one (its keys
 * may be inside), nor is an alternative without `^` or without a literal start.
 * @example outsideAlternatives('^fc\\.snapshot\\.v2\\.|^amq\\.') // [{ alternative: '^amq\\.', literal: 'amq.' }]
 */
export function outsideAlternatives(re: string): Array<{ alternative: string; literal: string }> {
  return (topLevelAlternatives(re) ?? []).flatMap((alternative) => {
    if (!alternative.startsWith('^')) return [];
    const { literal } = literalStart(alternative.slice(1));
    return literal !== '' && departsFrom(literal, ROUTING_KEY_PREFIX) ? [{ alternative, literal }] : [];
  });
}

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
 * Whether a read regex covers the delivery exchange, as RabbitMQ matches it (unanchored; '' is
 * nothing); null when JavaScript cannot compile it.
 * @example readsExchange('.*') // true
 * @example readsExchange('^svc-hall\\.') // false
 */
export function readsExchange(read: string): boolean | null {
  if (read === '') return false;
  const rx = compile(read);
  return rx === null ? null : rx.test(DELIVERY_EXCHANGE);
}

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
