/**
 * Replay requests from the command line or a `--from` file (CSV with a header, or JSON lines),
 * validated completely before anything connects: a bad file is exit 2 with one line naming the
 * line number, and nothing is written (SPEC §2). Pure but for {@link readReplayFile}.
 */
import { UsageError } from '../../cli/exit.js';
import { readFromText } from '../../files/input.js';
import { LineError, readRecords } from '../../files/record-file.js';
import { idProblem, isUuid, revisionOf } from '../../ids.js';
import { checkOperationPrefix, failedFilterOf } from '../failed/decide.js';
import type { FailedFilter } from '../failed/sql.js';

/** One replay request as read; `line` is the 1-based line it starts on (0 for the command line). */
export interface ReplayItem {
  readonly line: number;
  readonly answerUuid: string;
  readonly expectedRevision: string;
  readonly operationId: string;
}

/** Most items one file may hold; larger incidents are split into several files. */
export const MAX_REPLAY_ITEMS = 100_000;
const COLUMNS = ['answerUuid', 'expectedRevision', 'operationId'] as const;

/**
 * Checks an answer uuid: the 8-4-4-4-12 hex form; the lookup is exact, so case is kept.
 * @example checkAnswerUuid('nope', 3) // throws LineError('line 3: answerUuid "nope" is not a UUID')
 */
export function checkAnswerUuid(value: unknown, line: number, name = 'answerUuid'): string {
  if (!isUuid(value)) throw new LineError(line, `${name} ${JSON.stringify(value)} is not a UUID`);
  return value;
}

/**
 * Checks a revision: a whole number ≥ 0 (a JSON number or decimal text), returned canonical.
 * @example checkRevision('007', 2) // '7'
 */
export function checkRevision(value: unknown, line: number, name = 'expectedRevision'): string {
  const canon = revisionOf(value);
  if (canon === null) throw new LineError(line, `${name} ${JSON.stringify(value)} is not a whole number ≥ 0`);
  return canon;
}

/**
 * Checks an operation id: 1–128 characters, no control characters, no surrounding spaces.
 * @example checkOperationId('INC-42-1', 0) // 'INC-42-1'
 */
export function checkOperationId(value: unknown, line: number, name = 'operationId'): string {
  const problem = idProblem(value);
  if (problem !== null) throw new LineError(line, `${name} ${problem}`);
  return value as string;
}

function item(line: number, fields: Readonly<Record<string, unknown>>): ReplayItem {
  for (const c of COLUMNS)
    if (fields[c] === undefined || fields[c] === null) throw new LineError(line, `${c} is missing`);
  return {
    line,
    answerUuid: checkAnswerUuid(fields['answerUuid'], line),
    expectedRevision: checkRevision(fields['expectedRevision'], line),
    operationId: checkOperationId(fields['operationId'], line),
  };
}

/**
 * Parses and validates a `--from` file: JSON lines when the first non-blank character is `{`,
 * otherwise CSV with a header naming `answerUuid`, `expectedRevision`, `operationId` (other
 * columns ignored). Refused, with the line: malformed CSV or JSON, a missing column or member, a
 * non-UUID, a revision that is not a whole number, an operation id empty, over 128 characters or
 * with control characters, the same operation id for other parameters, no items, too many items.
 * @example parseReplayFile('answerUuid,expectedRevision,operationId\n…,3,inc-42-1\n')
 */
export function parseReplayFile(text: string): ReplayItem[] {
  const items = readRecords(
    text,
    COLUMNS.map((c) => ({ csv: c, json: c })),
  ).records.map(({ line, values }) => item(line, Object.fromEntries(COLUMNS.map((c, i) => [c, values[i]]))));
  if (items.length === 0) throw new LineError(0, 'the file holds no replay items');
  if (items.length > MAX_REPLAY_ITEMS)
    throw new LineError(items[MAX_REPLAY_ITEMS]!.line, `more than ${MAX_REPLAY_ITEMS} items; split the file`);
  const seen = new Map<string, ReplayItem>();
  for (const it of items) {
    const first = seen.get(it.operationId);
    if (!first) seen.set(it.operationId, it);
    else if (first.answerUuid !== it.answerUuid || first.expectedRevision !== it.expectedRevision) {
      throw new LineError(
        it.line,
        `operation id ${JSON.stringify(it.operationId)} is used on line ${first.line} for another answer or revision`,
      );
    }
  }
  return items;
}

/**
 * Reads and validates a `--from` file ({@link readFromText}, {@link parseReplayFile}): a bad line
 * is exit 2 naming the file and the line.
 * @example const items = await readReplayFile('incident-42.csv', io.stdin)
 */
export async function readReplayFile(from: string, stdin: AsyncIterable<unknown>): Promise<ReplayItem[]> {
  const text = await readFromText(from, stdin);
  try {
    return parseReplayFile(text);
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(`--from ${from}: ${err.message}`);
    throw err;
  }
}

/** The one request of `--answer/--expected-revision/--operation-id`. */
export type SingleReplay = Omit<ReplayItem, 'line'>;

/** Checks a single-request flag with the file's rules, naming the flag (exit 2). */
function flag<T>(check: (v: unknown, line: number, name: string) => T, value: unknown, name: string): T {
  try {
    return check(value, 0, name);
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(err.message);
    throw err;
  }
}

/** `--failed`: every matching FAILED/DEAD row, each under the operation id `P:<eventId>`. */
export interface FailedReplay {
  readonly filter: FailedFilter;
  readonly operationPrefix: string;
}

/** The flags {@link replaySource} reads. */
export interface ReplaySourceFlags {
  readonly answer?: unknown;
  readonly expectedRevision?: unknown;
  readonly operationId?: unknown;
  readonly from?: string;
  readonly failed?: boolean;
  readonly operationPrefix?: unknown;
  readonly state?: string;
  readonly reason?: string;
}

/** `--failed` with its `--operation-prefix`, `--state`, `--reason`, checked (a LineError otherwise). */
function failedSource(o: ReplaySourceFlags, singleFlags: readonly string[]): { failed: FailedReplay } {
  if (o.from !== undefined || singleFlags.length > 0)
    throw new LineError(0, '--failed cannot be combined with --from, --answer, --expected-revision or --operation-id');
  if (o.operationPrefix === undefined)
    throw new LineError(
      0,
      '--failed needs --operation-prefix P: each row is replayed under the operation id P:<eventId>',
    );
  return {
    failed: {
      operationPrefix: checkOperationPrefix(o.operationPrefix),
      filter: failedFilterOf({ state: o.state, reason: o.reason }),
    },
  };
}

/**
 * Where the requests come from: `--from FILE`, all three single-request flags, or `--failed`
 * with `--operation-prefix` (and `--state`/`--reason`), one of them (exit 2 otherwise); the single
 * request checked with the file's rules.
 * @example replaySource({ from: 'x.csv' }) // { from: 'x.csv' }
 */
export function replaySource(
  o: ReplaySourceFlags,
): { from: string } | { single: SingleReplay } | { failed: FailedReplay } {
  const singleFlags = (['answer', 'expectedRevision', 'operationId'] as const).filter((k) => o[k] !== undefined);
  if (o.failed === true) {
    try {
      return failedSource(o, singleFlags);
    } catch (err) {
      throw err instanceof LineError ? new UsageError(err.message) : err;
    }
  }
  if (o.operationPrefix !== undefined || o.state !== undefined || o.reason !== undefined)
    throw new UsageError('--operation-prefix, --state and --reason apply only with --failed');
  if (o.from !== undefined && singleFlags.length > 0)
    throw new UsageError('--from cannot be combined with --answer, --expected-revision or --operation-id');
  if (o.from === undefined && singleFlags.length < 3) {
    throw new UsageError(
      'give --answer, --expected-revision and --operation-id for one replay, --from FILE for a batch, or --failed --operation-prefix P for every FAILED/DEAD row',
    );
  }
  if (o.from !== undefined) return { from: o.from };
  return {
    single: {
      answerUuid: flag(checkAnswerUuid, o.answer, '--answer'),
      expectedRevision: flag(checkRevision, o.expectedRevision, '--expected-revision'),
      operationId: flag(checkOperationId, o.operationId, '--operation-id'),
    },
  };
}
