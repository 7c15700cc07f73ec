/**
 * `doctor --isolation`: the analysis of RabbitMQ permission regexes (pure), used by the publisher
 * permission, topic permission and reader items of `decide.ts`.
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
 */
import { DELIVERY_EXCHANGE } from '../../amqp/connect.js';
import type { CheckResult } from '../decide.js';
import { DLQ_SUFFIX, ROUTING_KEY_PREFIX } from './types.js';

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
export function compile(re: string): RegExp | null {
  try {
    return new RegExp(re);
  } catch {
    return null;
  }
}

export const quote = (s: string) => JSON.stringify(s);

/** `a, b, c (and 4 more)` */
export function listOf(items: readonly string[], max = 6): string {
  const shown = items.slice(0, max).join(', ');
  return items.length > max ? `${shown} (and ${items.length - max} more)` : shown;
}

export type Status = CheckResult['status'];

// --- resource permissions -----------------------------------------------------------------------

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
export function expandTopicPattern(re: string, f: { publisher: string; vhost: string }): string {
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

// --- read on the exchange -----------------------------------------------------------------------

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
