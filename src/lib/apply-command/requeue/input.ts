/**
 * What `apply-command requeue` is asked for, from its flags or a `--from` file, validated
 * completely before anything connects: bad input is exit 2 with one line (naming the line of a
 * file), and nothing is written (SPEC §2).
 *
 * `--from` format: CSV with a header naming `biz_type` and `biz_id` (other columns ignored, RFC
 * 4180 quoting), or JSON lines (the first non-blank character is `{`) with string members
 * `bizType` and `bizId` (other members ignored: the `row` lines of `apply-command scan --format
 * json` qualify). A JSON line whose `type` member is present and is not `"row"` (the `summary`
 * line of such a listing) is skipped, so a listing can be fed back whole. Each key at most once;
 * 1 to 100,000 keys. {@link readSelection} reads the file (or standard input); the rest is pure.
 */
import { UsageError } from '../../cli/exit.js';
import { readFromText } from '../../files/input.js';
import { LineError, readRecords } from '../../files/record-file.js';
import { isTidy } from '../../ids.js';
import { isReasonCode } from '../resolve-unknown/decide.js';
import type { BizKey, RequeueSelection } from './decide.js';

/** Most keys one file may hold; larger incidents are split into several files. */
export const MAX_REQUEUE_ITEMS = 100_000;
/** Widths of `flow_apply_command.biz_type` / `biz_id`: a longer key can match no command. */
export const BIZ_TYPE_WIDTH = 32;
export const BIZ_ID_WIDTH = 64;

/**
 * Checks one part of a business key: a string of 1 to `width` characters, no control characters,
 * no surrounding spaces (a stray space in a file would match nothing, silently).
 * @example checkKeyPart('honor_apply', 'biz_type', 32, 3) // 'honor_apply'
 */
export function checkKeyPart(value: unknown, name: string, width: number, line: number): string {
  if (typeof value !== 'string' || value === '') throw new LineError(line, `${name} is missing or empty`);
  if ([...value].length > width)
    throw new LineError(line, `${name} is longer than ${width} characters (the column's width)`);
  if (!isTidy(value))
    throw new LineError(
      line,
      `${name} ${JSON.stringify(value.slice(0, 80))} holds control characters or surrounding spaces`,
    );
  return value;
}

/**
 * Checks a `--reason`: one of the codes fcctl writes before the ':' of `last_error`.
 * @example checkReason('UNEXPECTED_BRANCH') // 'UNEXPECTED_BRANCH'
 */
export function checkReason(value: string): string {
  if (!isReasonCode(value)) {
    throw new LineError(
      0,
      `${JSON.stringify(value.slice(0, 80))} is not a reason code fcctl writes (OWNERSHIP_MISMATCH, UNEXPECTED_BRANCH, INVALID_COMMAND, or LOOKUP_/APPLY_ with TIMEOUT, NETWORK, MALFORMED, HTTP_<status>)`,
    );
  }
  return value;
}

/** The selection the flags ask for, before a `--from` file is read. */
export type RequeueTarget =
  | { readonly kind: 'key'; readonly key: BizKey }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'dead'; readonly reason: string | null };

/**
 * The one selection the flags give: `--biz-type` with `--biz-id`, or `--from`, or `--dead`
 * (with `--reason` only there).
 * @example requeueTargetOf({ dead: true, reason: 'UNEXPECTED_BRANCH' }) // { kind: 'dead', reason: 'UNEXPECTED_BRANCH' }
 */
export function requeueTargetOf(f: {
  readonly bizType?: string;
  readonly bizId?: string;
  readonly from?: string;
  readonly dead?: boolean;
  readonly reason?: string;
}): RequeueTarget {
  const named = f.bizType !== undefined || f.bizId !== undefined;
  const given = [named, f.from !== undefined, f.dead === true].filter(Boolean).length;
  if (given === 0)
    throw new LineError(
      0,
      'give --biz-type and --biz-id for one command, --from FILE for a list, or --dead for the DEAD rows',
    );
  if (given > 1) throw new LineError(0, '--biz-type/--biz-id, --from and --dead are three ways to select: give one');
  if (f.reason !== undefined && f.dead !== true) throw new LineError(0, '--reason applies only with --dead');
  if (f.dead) return { kind: 'dead', reason: f.reason === undefined ? null : checkReason(f.reason) };
  if (f.from !== undefined) return { kind: 'file', path: f.from };
  if (f.bizType === undefined || f.bizId === undefined) throw new LineError(0, '--biz-type and --biz-id go together');
  return {
    kind: 'key',
    key: {
      bizType: checkKeyPart(f.bizType, '--biz-type', BIZ_TYPE_WIDTH, 0),
      bizId: checkKeyPart(f.bizId, '--biz-id', BIZ_ID_WIDTH, 0),
    },
  };
}

type Line = BizKey & { readonly line: number };

/**
 * Parses and validates a `--from` file (format in this module's comment). Refused, with the
 * line: malformed CSV or JSON, a header without the two columns, a missing, empty, too long or
 * untidy key part, the same key twice, no keys, more than {@link MAX_REQUEUE_ITEMS}.
 * @example parseRequeueFile('biz_type,biz_id\nhonor_apply,A-1\n') // [{ line: 2, bizType: 'honor_apply', bizId: 'A-1' }]
 */
export function parseRequeueFile(text: string): Line[] {
  const { format, records: all } = readRecords(text, [
    { csv: 'biz_type', json: 'bizType' },
    { csv: 'biz_id', json: 'bizId' },
  ]);
  // JSON lines: the `type` member read by line (a second, cheap pass); a listing's summary line names no command
  const types =
    format === 'json'
      ? new Map(readRecords(text, [{ csv: 'type', json: 'type' }]).records.map((r) => [r.line, r.values[0]]))
      : null;
  const records = types ? all.filter(({ line }) => types.get(line) === undefined || types.get(line) === 'row') : all;
  const [typeName, idName] = format === 'csv' ? ['biz_type', 'biz_id'] : ['bizType', 'bizId'];
  const keys: Line[] = records.map(({ line, values }) => ({
    line,
    bizType: checkKeyPart(values[0], typeName, BIZ_TYPE_WIDTH, line),
    bizId: checkKeyPart(values[1], idName, BIZ_ID_WIDTH, line),
  }));
  if (keys.length === 0) throw new LineError(0, 'the file names no command');
  if (keys.length > MAX_REQUEUE_ITEMS)
    throw new LineError(keys[MAX_REQUEUE_ITEMS]!.line, `more than ${MAX_REQUEUE_ITEMS} commands; split the file`);
  const seen = new Map<string, number>();
  for (const k of keys) {
    const id = `${k.bizType}\u0000${k.bizId}`;
    const first = seen.get(id);
    if (first !== undefined)
      throw new LineError(
        k.line,
        `${JSON.stringify(k.bizType)} ${JSON.stringify(k.bizId)} is named on line ${first} already`,
      );
    seen.set(id, k.line);
  }
  return keys;
}

/** One key of the selection, with the line of the `--from` file that named it (null otherwise). */
export type SelectedKey = BizKey & { readonly line: number | null };

/**
 * The selection of a target, a `--from` file read and checked whole (exit 2 on any bad line).
 * @example const { selection, lines } = await readSelection({ kind: 'file', path: 'dead.csv' }, process.stdin)
 */
export async function readSelection(
  target: RequeueTarget,
  stdin: AsyncIterable<unknown>,
): Promise<{ selection: RequeueSelection; lines: SelectedKey[] }> {
  if (target.kind === 'key') return { selection: target, lines: [{ ...target.key, line: null }] };
  if (target.kind === 'dead') return { selection: target, lines: [] };
  try {
    const lines = parseRequeueFile(await readFromText(target.path, stdin));
    return { selection: { kind: 'file', keys: lines }, lines };
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(`--from ${target.path}: ${err.message}`);
    throw err;
  }
}
