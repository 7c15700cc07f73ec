/**
 * Inputs of `projection repair-authoritative`, validated completely before anything connects: a
 * bad flag, envelope or plan line is exit 2 naming it, and nothing is read from or written to a
 * database (SPEC §2, §6). The checks are pure (text in, items out); {@link readRepairInputs}
 * reads the files they check.
 */
import { createHash } from 'node:crypto';
import { canonicalize } from '../../canon/index.js';
import { UsageError } from '../../cli/exit.js';
import { readInput } from '../../files/input.js';
import type { Io } from '../../cli/io.js';
import { checkEnvelope } from '../../canon/check-envelope/decide.js';
import {
  idProblem,
  isContentHash,
  isSchoolId,
  isTokenRunId,
  isUuid,
  MAX_RUN_ID_LENGTH,
  revisionOf,
} from '../../ids.js';
import { REPAIR_CATEGORIES, type Category } from '../../reconcile/diff/decide.js';
import { LineError } from '../../files/record-file.js';
import type { PlanLine } from '../../reconcile/diff/types.js';
import type { AuthoritativeSnapshot, Triple } from './decide.js';
import { MISSING } from './decide.js';

/** One answer to repair: from the flags (`line` 0) or a plan line. */
export interface RepairItem {
  readonly line: number;
  readonly answerUuid: string;
  readonly schId: string;
  /** the local triple as read before (all null: observed missing) */
  readonly expected: Triple;
  /** from a plan: its category and the FC values `reconcile diff` saw (evidence only) */
  readonly plan?: {
    readonly category: Category;
    readonly formUuid: string;
    readonly fcRevision: string;
    readonly fcContentHash: string;
    readonly fcIsDeleted: boolean;
  };
}

/** Most lines one plan may hold; larger plans are split (one `reconcile diff` per school and form). */
export const MAX_PLAN_ITEMS = 500_000;
/** Largest envelope file read (a snapshot is a few KB; the MQ message limit is far below this). */
export const MAX_ENVELOPE_BYTES = 16 * 1024 * 1024;
/** Largest plan file read (about 330 bytes a line). */
export const MAX_PLAN_BYTES = 256 * 1024 * 1024;

/**
 * A refused value as a message shows it: JSON of a scalar, cut to 64 characters; only the kind of
 * an object or array (a hostile plan line may hold megabytes, or nesting too deep to serialize).
 * @example shown({ a: 1 }) // 'an object'
 */
function shown(value: unknown): string {
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'an array' : 'an object';
  if (typeof value === 'string' && value.length > 64) return `${JSON.stringify(value.slice(0, 64)).slice(0, -1)}…"`;
  // JSON has no Infinity (1e309 parses to it): JSON.stringify would show null
  return typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value));
}

/**
 * An answer or form uuid: the 8-4-4-4-12 hex form (the lookup is exact, so case is kept).
 * @example checkUuid('nope', 0, '--answer') // throws LineError('--answer "nope" is not a UUID')
 */
export function checkUuid(value: unknown, line: number, name: string): string {
  if (!isUuid(value)) throw new LineError(line, `${name} ${shown(value)} is not a UUID`);
  return value;
}

/**
 * A school id: a positive whole number within BIGINT, as decimal text (a JSON number is accepted).
 * @example checkSchool('5', 0, '--school') // '5'
 */
export function checkSchool(value: unknown, line: number, name: string): string {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (!isSchoolId(text)) throw new LineError(line, `${name} ${shown(value)} is not a positive whole number`);
  return text;
}

/**
 * A revision: a whole number ≥ 0 within BIGINT (digit text or a safe JSON number), canonical.
 * @example checkRevision('007', 0, '--expected-revision') // '7'
 */
export function checkRevision(value: unknown, line: number, name: string): string {
  const revision = revisionOf(value);
  if (revision === null) throw new LineError(line, `${name} ${shown(value)} is not a whole number ≥ 0`);
  return revision;
}

/**
 * A content hash: 64 lowercase hex digits.
 * @example checkHash('ABC', 0, '--expected-hash') // throws
 */
export function checkHash(value: unknown, line: number, name: string): string {
  if (!isContentHash(value)) throw new LineError(line, `${name} must be 64 lowercase hex digits`);
  return value;
}

/**
 * `--expected-is-deleted`: `0` or `1`.
 * @example checkIsDeletedFlag('1') // true
 */
export function checkIsDeletedFlag(value: unknown): boolean {
  if (value === '0') return false;
  if (value === '1') return true;
  throw new LineError(0, `--expected-is-deleted ${shown(value)} must be 0 or 1`);
}

/**
 * A proof id (an audit reference such as the reconcile task id, never a credential): 1–128
 * characters, no control characters, no surrounding spaces.
 * @example checkProofId('reconcile-2026-11-30-5', 0) // 'reconcile-2026-11-30-5'
 */
export function checkProofId(value: unknown, line: number, name = '--proof-id'): string {
  const problem = idProblem(value);
  if (problem !== null) throw new LineError(line, `${name} ${problem}`);
  return value as string;
}

/**
 * A run id: 1–64 characters of letters, digits and `. _ : -`.
 * @example checkRunId('nightly-2026-11-30') // 'nightly-2026-11-30'
 */
export function checkRunId(value: unknown): string {
  if (!isTokenRunId(value))
    throw new LineError(0, `--run-id must be 1–${MAX_RUN_ID_LENGTH} letters, digits or . _ : -`);
  return value;
}

/** The expected triple from the command line: all three flags, or `--expect-missing` alone. */
export function expectedFromFlags(flags: {
  revision?: unknown;
  hash?: unknown;
  isDeleted?: unknown;
  missing: boolean;
}): Triple {
  const given = [flags.revision, flags.hash, flags.isDeleted].filter((v) => v !== undefined).length;
  if (flags.missing) {
    if (given > 0)
      throw new LineError(
        0,
        '--expect-missing cannot be combined with --expected-revision, --expected-hash or --expected-is-deleted',
      );
    return MISSING;
  }
  if (given < 3)
    throw new LineError(
      0,
      'give --expected-revision, --expected-hash and --expected-is-deleted (the local row as read), or --expect-missing',
    );
  return {
    revision: checkRevision(flags.revision, 0, '--expected-revision'),
    hash: checkHash(flags.hash, 0, '--expected-hash'),
    isDeleted: checkIsDeletedFlag(flags.isDeleted),
  };
}

const PLAN_MEMBERS: ReadonlyArray<keyof PlanLine> = [
  'category',
  'answerUuid',
  'schId',
  'formUuid',
  'expectedRevision',
  'expectedHash',
  'expectedIsDeleted',
  'fcRevision',
  'fcContentHash',
  'fcIsDeleted',
];

function planItem(line: number, o: Record<string, unknown>): RepairItem {
  for (const m of PLAN_MEMBERS)
    if (!(m in o)) throw new LineError(line, `member ${m} is missing (is this a repair-plan.jsonl of reconcile diff?)`);
  const category = o['category'];
  if (typeof category !== 'string' || !(REPAIR_CATEGORIES as readonly string[]).includes(category)) {
    throw new LineError(
      line,
      `category ${shown(category)} is not one a repair plan holds (${REPAIR_CATEGORIES.join(', ')})`,
    );
  }
  const answerUuid = checkUuid(o['answerUuid'], line, 'answerUuid');
  const schId = checkSchool(o['schId'], line, 'schId');
  const formUuid = checkUuid(o['formUuid'], line, 'formUuid');
  const nulls = [o['expectedRevision'], o['expectedHash'], o['expectedIsDeleted']].filter((v) => v === null).length;
  let expected: Triple;
  if (nulls === 3) expected = MISSING;
  else if (nulls > 0)
    throw new LineError(
      line,
      'expectedRevision, expectedHash and expectedIsDeleted must be all null (missing) or all set',
    );
  else {
    const isDeleted = o['expectedIsDeleted'];
    if (typeof isDeleted !== 'boolean') throw new LineError(line, 'expectedIsDeleted must be true, false or null');
    expected = {
      revision: checkRevision(o['expectedRevision'], line, 'expectedRevision'),
      hash: checkHash(o['expectedHash'], line, 'expectedHash'),
      isDeleted,
    };
  }
  if ((category === 'MISSING_LOCAL') !== (expected.revision === null)) {
    throw new LineError(
      line,
      category === 'MISSING_LOCAL'
        ? 'a MISSING_LOCAL line must have a null expected triple'
        : `a ${category} line must have an expected triple`,
    );
  }
  const fcIsDeleted = o['fcIsDeleted'];
  if (typeof fcIsDeleted !== 'boolean') throw new LineError(line, 'fcIsDeleted must be true or false');
  return {
    line,
    answerUuid,
    schId,
    expected,
    plan: {
      category: category as Category,
      formUuid,
      fcRevision: checkRevision(o['fcRevision'], line, 'fcRevision'),
      fcContentHash: checkHash(o['fcContentHash'], line, 'fcContentHash'),
      fcIsDeleted,
    },
  };
}

/**
 * Parses and validates a plan (`repair-plan.jsonl` of `reconcile diff`, {@link PlanLine}): one
 * JSON object a line (blank lines skipped, CRLF accepted). Refused, with the line: not JSON, a
 * missing member, a category outside MISSING_LOCAL/STALE_LOCAL/HASH_CONFLICT (so `local-ahead.jsonl`
 * or `retire-candidates.jsonl` are refused), a non-UUID, a school ≤ 0, a bad revision or hash, a
 * half-null triple, a triple that does not fit the category, the same answer and school twice,
 * another school than `school` when given, more than {@link MAX_PLAN_ITEMS} lines. An empty plan
 * is valid: nothing to repair.
 * @example parsePlan('{"category":"MISSING_LOCAL",…}\n').length // 1
 */
export function parsePlan(text: string, school?: string): RepairItem[] {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const items: RepairItem[] = [];
  const seen = new Map<string, number>();
  const lines = body.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    const t = lines[i]!.replace(/\r$/, '');
    if (t.trim() === '') continue;
    if (items.length >= MAX_PLAN_ITEMS) throw new LineError(line, `more than ${MAX_PLAN_ITEMS} items; split the plan`);
    let value: unknown;
    try {
      value = JSON.parse(t);
    } catch (err) {
      throw new LineError(line, `malformed JSON: ${(err as Error).message.split('\n')[0]}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new LineError(line, 'not a JSON object');
    const it = planItem(line, value as Record<string, unknown>);
    if (school !== undefined && it.schId !== school)
      throw new LineError(line, `school ${it.schId} is not --school ${school}`);
    const key = `${it.answerUuid.toLowerCase()} ${it.schId}`;
    const first = seen.get(key);
    if (first !== undefined)
      throw new LineError(line, `answer ${it.answerUuid} at school ${it.schId} is already on line ${first}`);
    seen.set(key, line);
    items.push(it);
  }
  return items;
}

/**
 * The authoritative snapshot of an `--envelope FILE`: checked exactly as `canon check-envelope`
 * does (any problem refuses the file), then its answer, school and consumer must be the flags'
 * and its uuids well-formed. The snapshot stored is the canonical text (the hash covers it; a
 * top-level `intent` member is not part of it).
 * @throws {LineError} naming every problem found (exit 2)
 * @example authoritativeFromEnvelope(bytes, { answerUuid, schId: '5', consumerAppKey: '100100' }).revision
 */
export function authoritativeFromEnvelope(
  body: Uint8Array,
  want: { readonly answerUuid: string; readonly schId: string; readonly consumerAppKey: string },
): AuthoritativeSnapshot {
  const r = checkEnvelope(body);
  if (r.kind === 'not-json')
    throw new LineError(
      0,
      `--envelope is not JSON: ${r.error.code}: ${r.error.message} (line ${r.error.line}, column ${r.error.column})`,
    );
  if (r.problems.length > 0 || !r.envelope) {
    throw new LineError(0, `--envelope refused: ${r.problems.map((p) => `${p.code}: ${p.detail}`).join('; ')}`);
  }
  const e = r.envelope;
  const problems: string[] = [];
  if (!isUuid(e.answerUuid)) problems.push(`answerUuid ${shown(e.answerUuid)} is not a UUID`);
  if (!isUuid(e.formUuid)) problems.push(`formUuid ${shown(e.formUuid)} is not a UUID`);
  if (e.answerUuid !== want.answerUuid)
    problems.push(`answerUuid ${shown(e.answerUuid)} is not --answer ${want.answerUuid}`);
  if (e.consumerSchoolId !== want.schId)
    problems.push(`consumerSchoolId ${e.consumerSchoolId} is not --school ${want.schId}`);
  if (e.consumerAppKey !== want.consumerAppKey)
    problems.push(`consumerAppKey ${shown(e.consumerAppKey)} is not --consumer ${want.consumerAppKey}`);
  if (BigInt(e.answerRevision) < 0n || BigInt(e.formVersion) < 0n)
    problems.push('answerRevision and formVersion must be ≥ 0');
  const snapshot = JSON.parse(e.snapshotJson) as Record<string, unknown>;
  if (String(snapshot['schId']) !== want.schId)
    problems.push(`snapshot schId ${String(snapshot['schId'])} is not --school ${want.schId}`);
  if (problems.length > 0) throw new LineError(0, `--envelope refused: ${problems.join('; ')}`);
  // checkEnvelope hashed these very bytes: they canonicalize.
  const canon = canonicalize(e.snapshotJson);
  if (!canon.ok || canon.hash !== e.contentHash)
    throw new LineError(0, '--envelope refused: the snapshot does not canonicalize to contentHash');
  return {
    source: 'envelope',
    eventId: e.eventId,
    answerUuid: e.answerUuid,
    schId: e.consumerSchoolId,
    formUuid: e.formUuid,
    formVersion: e.formVersion,
    revision: e.answerRevision,
    contentHash: e.contentHash,
    isDeleted: e.isDeleted,
    grantVersion: e.grantVersion,
    snapshotJson: canon.canonical.toString('utf8'),
  };
}

/** Every input of a run, read and checked: exit 2 before anything connects. */
export interface RepairInputs {
  readonly items: RepairItem[];
  readonly envelope?: AuthoritativeSnapshot;
  /** SHA-256 of the plan or envelope file as read, for the evidence */
  readonly sha256: string | null;
}

/** What {@link readRepairInputs} reads: one answer from the flags (maybe with an envelope file), or a plan file. */
export interface RepairInputSource {
  readonly consumerAppKey: string;
  readonly schId?: string;
  readonly single?: { readonly answerUuid: string; readonly expected: Triple; readonly envelope?: string };
  readonly plan?: string;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A line error of an input as exit 2, the message prefixed. */
export function usage<T>(f: () => T, prefix = ''): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(`${prefix}${err.message}`);
    throw err;
  }
}

/**
 * Reads and checks every input (`-`: standard input): the one answer of the flags, with the
 * snapshot of its `--envelope` file, or every line of the plan. Exit 2 naming what is wrong.
 * @example const { items } = await readRepairInputs({ consumerAppKey: '100100', plan: 'run/repair-plan.jsonl' }, io)
 */
export async function readRepairInputs(source: RepairInputSource, io: Io): Promise<RepairInputs> {
  if (source.single) {
    const s = source.single;
    const item: RepairItem = { line: 0, answerUuid: s.answerUuid, schId: source.schId!, expected: s.expected };
    if (s.envelope === undefined) return { items: [item], sha256: null };
    const bytes = await readInput(s.envelope, io, MAX_ENVELOPE_BYTES);
    const envelope = usage(() =>
      authoritativeFromEnvelope(bytes, {
        answerUuid: s.answerUuid,
        schId: source.schId!,
        consumerAppKey: source.consumerAppKey,
      }),
    );
    return { items: [item], envelope, sha256: sha256(bytes) };
  }
  const bytes = await readInput(source.plan, io, MAX_PLAN_BYTES);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`--plan ${source.plan}: not UTF-8 text`);
  }
  return { items: usage(() => parsePlan(text, source.schId), `--plan ${source.plan}: `), sha256: sha256(bytes) };
}

/**
 * The one answer of single mode from its flags (`--answer`, `--expected-*` or `--expect-missing`,
 * `--envelope`), checked; exit 2 naming the flag.
 * @example singleAnswerOf({ answer: uuid, expectMissing: true }).expected // MISSING
 */
export function singleAnswerOf(flags: SingleAnswerFlags): NonNullable<RepairInputSource['single']> {
  return usage(() => ({
    answerUuid: checkUuid(flags.answer, 0, '--answer'),
    expected: expectedFromFlags({
      revision: flags.expectedRevision,
      hash: flags.expectedHash,
      isDeleted: flags.expectedIsDeleted,
      missing: flags.expectMissing === true,
    }),
    ...(flags.envelope !== undefined ? { envelope: flags.envelope } : {}),
  }));
}

/** The single-answer flags as commander parses them (named, so a misspelt flag is a compile error). */
export interface SingleAnswerFlags {
  readonly answer?: string | undefined;
  readonly expectedRevision?: string | undefined;
  readonly expectedHash?: string | undefined;
  readonly expectedIsDeleted?: string | undefined;
  readonly expectMissing?: boolean | undefined;
  readonly envelope?: string | undefined;
}
