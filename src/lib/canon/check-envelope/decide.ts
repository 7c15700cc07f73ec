/**
 * Checks a v2 delivery envelope body against SPEC §4: the closed set of 15 members, their types,
 * the snapshot's member set, the content hash recomputed over the snapshot's own bytes, and the
 * routing-key parts. Pure: bytes in, problems out. Used by `fcctl canon check-envelope` and by
 * `repair-authoritative --envelope FILE`.
 */
import { canonicalize } from '../index.js';
import { checkSnapshot, PROTOCOL_VERSION, routingKeyFor } from '../../deliveries/envelope.js';
import { INT64_MAX, INT64_MIN } from '../../ids.js';

/**
 * The 15 members of a v2 envelope, in the order fcctl writes them (SPEC §4).
 *
 * @example
 * ENVELOPE_MEMBERS.length; // 15
 */
export const ENVELOPE_MEMBERS = [
  'protocolVersion',
  'eventId',
  'eventType',
  'sourceAppKey',
  'consumerAppKey',
  'consumerSchoolId',
  'grantVersion',
  'formUuid',
  'formVersion',
  'answerUuid',
  'answerRevision',
  'isDeleted',
  'contentHash',
  'occurredAt',
  'snapshot',
] as const;

/**
 * The kinds of problem, a closed set. `INVALID_ROUTING_KEY`, `SNAPSHOT_INVALID` and
 * `SNAPSHOT_HASH_MISMATCH` are the reasons `deliveries send` records for the same faults.
 *
 * @example
 * const fatal = (code: EnvelopeProblemCode) => code !== 'EXTRA_MEMBER';
 */
export type EnvelopeProblemCode =
  | 'NOT_AN_OBJECT' // the body is JSON but not an object
  | 'DUPLICATE_MEMBER' // an envelope member name appears twice
  | 'MISSING_MEMBER' // one of the 15 is absent
  | 'EXTRA_MEMBER' // a member outside the 15
  | 'INVALID_MEMBER' // a member of the wrong type or value (protocol version, event type, integer, …)
  | 'INVALID_ROUTING_KEY' // consumerAppKey or consumerSchoolId cannot form the routing key
  | 'SNAPSHOT_INVALID' // snapshot not an object, refused by fc.canon.v1, or not the closed member set
  | 'SNAPSHOT_HASH_MISMATCH'; // contentHash is not the hash of the snapshot

/**
 * One problem; `member` names the envelope member concerned, when there is one.
 *
 * @example
 * const p: EnvelopeProblem = { code: 'EXTRA_MEMBER', member: 'debug', detail: 'member "debug" is not in the closed set of 15' };
 */
export interface EnvelopeProblem {
  readonly code: EnvelopeProblemCode;
  readonly member?: string;
  readonly detail: string;
}

/**
 * An envelope that passed every check, its values as they were written: integers as their decimal
 * text (never a JS number), the snapshot as its exact JSON text.
 *
 * @example
 * if (r.kind === 'checked' && r.envelope) console.log(r.envelope.routingKey, r.envelope.answerRevision);
 */
export interface CheckedEnvelope {
  readonly protocolVersion: string;
  readonly eventId: string;
  readonly eventType: 'created' | 'updated' | 'tombstoned';
  readonly sourceAppKey: string;
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly grantVersion: string;
  readonly formUuid: string;
  readonly formVersion: string;
  readonly answerUuid: string;
  readonly answerRevision: string;
  readonly isDeleted: boolean;
  readonly contentHash: string;
  readonly occurredAt: string;
  /** the snapshot member's JSON text, byte for byte as in the body */
  readonly snapshotJson: string;
  readonly routingKey: string;
}

/**
 * The verdict: `not-json` (not UTF-8 or not RFC 8259 JSON at all; the position is 1-based), or
 * `checked` with every problem found, in a stable order (structure, members, routing key,
 * snapshot). `envelope` is set only when there is no problem. `recomputedHash` is the snapshot's
 * fc.canon.v1 hash (numbers exact) when it could be computed.
 *
 * @example
 * const r: EnvelopeCheck = checkEnvelope(body);
 * const poison = r.kind === 'not-json' || r.problems.length > 0;
 */
export type EnvelopeCheck =
  | {
      readonly kind: 'not-json';
      readonly error: {
        readonly code: string;
        readonly message: string;
        readonly line: number;
        readonly column: number;
      };
    }
  | {
      readonly kind: 'checked';
      readonly problems: readonly EnvelopeProblem[];
      readonly recomputedHash?: string;
      readonly envelope?: CheckedEnvelope;
    };

const EVENT_TYPES = ['created', 'updated', 'tombstoned'];
const HASH = /^[0-9a-f]{64}$/;
const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
/** fc.canon.v1 refusals of input that is still RFC 8259 JSON (so the body is JSON, the snapshot poison). */
const JSON_BUT_REFUSED = new Set([
  'DUPLICATE_KEY',
  'TOO_DEEP',
  'NUMBER_LITERAL_TOO_LONG',
  'NUMBER_TOO_LONG',
  'NUMBER_OUT_OF_RANGE',
]);

/**
 * Checks one envelope body (the message bytes). Never throws for bad input. The snapshot's hash
 * is recomputed over the snapshot member's own bytes — never a re-serialization of a parsed
 * value — so numbers such as `12.50` or `9007199254740993` are hashed exactly as sent.
 *
 * @example
 * const r = checkEnvelope(buildEnvelope(row, 'Asia/Shanghai'));
 * if (r.kind === 'checked') for (const p of r.problems) console.log(`${p.code}: ${p.detail}`);
 */
export function checkEnvelope(body: Uint8Array): EnvelopeCheck {
  let text: string;
  try {
    // Strict UTF-8; a leading BOM is dropped.
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
    JSON.parse(text);
  } catch (e) {
    return { kind: 'not-json', error: notJsonError(body, e as Error) };
  }
  const members = topLevelMembers(text);
  if (members === null)
    return { kind: 'checked', problems: [{ code: 'NOT_AN_OBJECT', detail: 'the envelope is not a JSON object' }] };

  // Every check adds to the same list, in the stable order: structure, members, routing key, snapshot.
  const problems: EnvelopeProblem[] = [];
  const byName = memberSetProblems(members, problems);
  const values = readMembers(byName, problems);
  const routingKey = routingKeyProblems(values, problems);
  const recomputedHash = snapshotProblems(byName.get('snapshot'), byName.get('contentHash'), problems);
  if (problems.length > 0) return { kind: 'checked', problems, ...(recomputedHash ? { recomputedHash } : {}) };
  // No problem: every member is present and of its type (the definite assertions are safe).
  const envelope = { ...values, snapshotJson: byName.get('snapshot')!, routingKey } as CheckedEnvelope;
  return { kind: 'checked', problems, recomputedHash: recomputedHash!, envelope };
}

/** The members by name (the last occurrence wins, as in JSON.parse and Jackson); duplicate, missing and extra members reported. */
function memberSetProblems(
  members: ReadonlyArray<{ name: string; raw: string }>,
  problems: EnvelopeProblem[],
): Map<string, string> {
  const byName = new Map<string, string>();
  const seen = new Set<string>();
  for (const { name, raw } of members) {
    if (byName.has(name) && !seen.has(name)) {
      seen.add(name);
      problems.push({
        code: 'DUPLICATE_MEMBER',
        member: name,
        detail: `member ${JSON.stringify(name)} appears more than once`,
      });
    }
    byName.set(name, raw);
  }
  for (const name of ENVELOPE_MEMBERS) {
    if (!byName.has(name))
      problems.push({ code: 'MISSING_MEMBER', member: name, detail: `member ${JSON.stringify(name)} is missing` });
  }
  for (const name of byName.keys()) {
    if (!(ENVELOPE_MEMBERS as readonly string[]).includes(name)) {
      problems.push({
        code: 'EXTRA_MEMBER',
        member: name,
        detail: `member ${JSON.stringify(name)} is not in the closed set of 15`,
      });
    }
  }
  return byName;
}

/** The values of the scalar members; undefined where absent or invalid (reported). */
type MemberValues = {
  -readonly [K in Exclude<keyof CheckedEnvelope, 'snapshotJson' | 'routingKey'>]: CheckedEnvelope[K] | undefined;
};

/** Each scalar member checked for its type and value, in the closed set's order. */
function readMembers(byName: ReadonlyMap<string, string>, problems: EnvelopeProblem[]): MemberValues {
  const raw = (name: string) => byName.get(name);
  const invalid = (member: string, expected: string) =>
    problems.push({
      code: 'INVALID_MEMBER',
      member,
      detail: `${member} must be ${expected}, got ${shown(raw(member) ?? '')}`,
    });
  /** the member's string value, or undefined (reported) when present and not a string */
  const str = (member: string, accept: (s: string) => boolean, expected: string): string | undefined => {
    const r = raw(member);
    if (r === undefined) return undefined;
    const value = r.startsWith('"') ? (JSON.parse(r) as string) : undefined;
    if (value === undefined || !accept(value)) {
      invalid(member, expected);
      return undefined;
    }
    return value;
  };
  /** the member's integer literal (decimal text), or undefined (reported) */
  const int = (member: string, expected = 'an integer (64-bit)'): string | undefined => {
    const r = raw(member);
    if (r === undefined) return undefined;
    if (!INTEGER.test(r) || BigInt(r) < INT64_MIN || BigInt(r) > INT64_MAX) {
      invalid(member, expected);
      return undefined;
    }
    return r;
  };
  const v: Partial<MemberValues> = {};
  v.protocolVersion = str('protocolVersion', (s) => s === PROTOCOL_VERSION, JSON.stringify(PROTOCOL_VERSION));
  v.eventId = str('eventId', (s) => s.length >= 1 && s.length <= 36, 'a string of 1 to 36 characters');
  v.eventType = str('eventType', (s) => EVENT_TYPES.includes(s), 'one of created, updated, tombstoned') as
    | CheckedEnvelope['eventType']
    | undefined;
  v.sourceAppKey = str('sourceAppKey', (s) => s !== '', 'a non-empty string');
  v.consumerAppKey = str('consumerAppKey', () => true, 'a string');
  v.consumerSchoolId = int('consumerSchoolId', 'a positive integer');
  v.grantVersion = int('grantVersion');
  v.formUuid = str('formUuid', (s) => s !== '', 'a non-empty string');
  v.formVersion = int('formVersion');
  v.answerUuid = str('answerUuid', (s) => s !== '', 'a non-empty string');
  v.answerRevision = int('answerRevision');
  const isDeletedRaw = raw('isDeleted');
  if (isDeletedRaw !== undefined && isDeletedRaw !== 'true' && isDeletedRaw !== 'false')
    invalid('isDeleted', 'true or false');
  v.isDeleted = isDeletedRaw === 'true';
  v.contentHash = str('contentHash', (s) => HASH.test(s), '64 lowercase hex digits');
  v.occurredAt = str('occurredAt', (s) => s !== '', 'a non-empty string');
  return v as MemberValues;
}

/** Routing key: each part on its own, so a bad key and a bad school are two lines; the key when both are good, else ''. */
function routingKeyProblems(
  v: Pick<MemberValues, 'consumerAppKey' | 'consumerSchoolId'>,
  problems: EnvelopeProblem[],
): string {
  let keyOk = false;
  let schoolOk = false;
  if (v.consumerAppKey !== undefined) {
    const rk = routingKeyFor(v.consumerAppKey, 1);
    if (!rk.ok) problems.push({ code: 'INVALID_ROUTING_KEY', member: 'consumerAppKey', detail: rk.detail });
    keyOk = rk.ok;
  }
  if (v.consumerSchoolId !== undefined) {
    const rk = routingKeyFor('x', v.consumerSchoolId);
    if (!rk.ok) problems.push({ code: 'INVALID_ROUTING_KEY', member: 'consumerSchoolId', detail: rk.detail });
    schoolOk = rk.ok;
  }
  return keyOk && schoolOk ? `fc.snapshot.v2.${v.consumerAppKey}.${v.consumerSchoolId}` : '';
}

/** Snapshot: its own bytes, hashed exactly; the member set through the same check `send` runs. The recomputed hash, when it could be computed. */
function snapshotProblems(
  snapshotJson: string | undefined,
  contentHashRaw: string | undefined,
  problems: EnvelopeProblem[],
): string | undefined {
  if (snapshotJson === undefined) return undefined;
  if (!snapshotJson.startsWith('{')) {
    problems.push({
      code: 'SNAPSHOT_INVALID',
      member: 'snapshot',
      detail: `snapshot must be a JSON object, got ${shown(snapshotJson)}`,
    });
    return undefined;
  }
  const canon = canonicalize(snapshotJson);
  if (!canon.ok) {
    problems.push({
      code: 'SNAPSHOT_INVALID',
      member: 'snapshot',
      detail: `${canon.error.code}: ${canon.error.message}`,
    });
    return undefined;
  }
  const members = checkSnapshot(snapshotJson, canon.hash);
  if (!members.ok) problems.push({ code: 'SNAPSHOT_INVALID', member: 'snapshot', detail: members.detail });
  const givenHash = contentHashRaw?.startsWith('"') ? (JSON.parse(contentHashRaw) as string) : undefined;
  if (givenHash !== undefined && givenHash !== canon.hash) {
    problems.push({
      code: 'SNAPSHOT_HASH_MISMATCH',
      member: 'contentHash',
      detail: `contentHash ${JSON.stringify(givenHash)} is not the snapshot's hash ${canon.hash}`,
    });
  }
  return canon.hash;
}

/** Why the body is not JSON, with fc.canon.v1's code and position where it has one. */
function notJsonError(body: Uint8Array, e: Error): { code: string; message: string; line: number; column: number } {
  const r = canonicalize(body);
  if (!r.ok && !JSON_BUT_REFUSED.has(r.error.code)) return r.error;
  // The strict reader stopped at something JSON allows before reaching the real fault.
  return { code: 'SYNTAX', message: String(e.message).split('\n')[0] ?? 'not JSON', line: 1, column: 1 };
}

/** A raw value for a message: whitespace collapsed, at most 60 characters. */
function shown(raw: string): string {
  const flat = raw.replace(/\s+/g, ' ');
  return flat.length > 60 ? `${flat.slice(0, 60)}…` : flat;
}

// ---------------------------------------------------------------- raw member scan

/**
 * The top-level members of a JSON text already known to be valid, in order, each with its value's
 * exact source text; null when the root is not an object. Nothing below the top level is parsed.
 */
function topLevelMembers(text: string): Array<{ name: string; raw: string }> | null {
  let i = skipWs(text, 0);
  if (text.charCodeAt(i) !== 0x7b) return null; // {
  const members: Array<{ name: string; raw: string }> = [];
  i = skipWs(text, i + 1);
  if (text.charCodeAt(i) === 0x7d) return members; // }
  for (;;) {
    const keyEnd = stringEnd(text, i);
    const name = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipWs(text, skipWs(text, keyEnd) + 1); // past ':'
    const valueStart = i;
    i = valueEnd(text, i);
    members.push({ name, raw: text.slice(valueStart, i) });
    i = skipWs(text, i);
    if (text.charCodeAt(i) !== 0x2c) return members; // not ',': '}'
    i = skipWs(text, i + 1);
  }
}

function skipWs(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** Index just after the string that opens at `i`. */
function stringEnd(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const c = text.charCodeAt(j);
    if (c === 0x5c)
      j += 2; // backslash: skip the escaped character
    else if (c === 0x22) return j + 1;
    else j++;
  }
}

/** Index just after the value that starts at `i`. */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === 0x22) return stringEnd(text, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    let j = i;
    for (;;) {
      const d = text.charCodeAt(j);
      if (d === 0x22) {
        j = stringEnd(text, j);
        continue;
      }
      if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return j + 1;
      }
      j++;
    }
  }
  let j = i;
  for (;;) {
    const d = text.charCodeAt(j);
    if (
      Number.isNaN(d) ||
      d === 0x2c ||
      d === 0x7d ||
      d === 0x5d ||
      d === 0x20 ||
      d === 0x0a ||
      d === 0x0d ||
      d === 0x09
    )
      return j;
    j++;
  }
}
