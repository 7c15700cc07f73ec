/**
 * What `apply-command requeue` is asked for, from its flags or a `--from` file, validated
 * completely before anything connects: bad input is exit 2 with one line (naming the line of a
 * file), and nothing is written (SPEC §2). Pure.
 *
 * `--from` format: CSV with a header naming `biz_type` and `biz_id` (other columns ignored, RFC
 * 4180 quoting), or JSON lines (the first non-blank character is `{`) with string members
 * `bizType` and `bizId` (other members ignored: the `row` lines of `apply-command scan --format
 * json` qualify). Each key at most once; 1 to 100,000 keys.
 */
import { parseCsvRecords, ReplayInputError } from '../deliveries/replay-input.js';
import { isReasonCode } from './decide.js';
import type { BizKey } from './requeue.js';

/** Why an input was refused, naming the line (0: the command line). */
export class RequeueInputError extends Error {
  constructor(
    readonly line: number,
    readonly problem: string,
  ) {
    super(line > 0 ? `line ${line}: ${problem}` : problem);
    this.name = 'RequeueInputError';
  }
}

/** Most keys one file may hold; larger incidents are split into several files. */
export const MAX_REQUEUE_ITEMS = 100_000;
/** Widths of `flow_apply_command.biz_type` / `biz_id`: a longer key can match no command. */
export const BIZ_TYPE_WIDTH = 32;
export const BIZ_ID_WIDTH = 64;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Checks one part of a business key: a string of 1 to `width` characters, no control characters,
 * no surrounding spaces (a stray space in a file would match nothing, silently).
 * @example checkKeyPart('honor_apply', 'biz_type', 32, 3) // 'honor_apply'
 */
export function checkKeyPart(value: unknown, name: string, width: number, line: number): string {
  if (typeof value !== 'string' || value === '') throw new RequeueInputError(line, `${name} is missing or empty`);
  if ([...value].length > width) throw new RequeueInputError(line, `${name} is longer than ${width} characters (the column's width)`);
  if (CONTROL.test(value) || value.trim() !== value) throw new RequeueInputError(line, `${name} ${JSON.stringify(value.slice(0, 80))} holds control characters or surrounding spaces`);
  return value;
}

/**
 * Checks a `--reason`: one of the codes fcctl writes before the ':' of `last_error`.
 * @example checkReason('UNEXPECTED_BRANCH') // 'UNEXPECTED_BRANCH'
 */
export function checkReason(value: string): string {
  if (!isReasonCode(value)) {
    throw new RequeueInputError(0, `${JSON.stringify(value.slice(0, 80))} is not a reason code fcctl writes (OWNERSHIP_MISMATCH, UNEXPECTED_BRANCH, INVALID_COMMAND, or LOOKUP_/APPLY_ with TIMEOUT, NETWORK, MALFORMED, HTTP_<status>)`);
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
export function requeueTargetOf(f: { readonly bizType?: string; readonly bizId?: string; readonly from?: string; readonly dead?: boolean; readonly reason?: string }): RequeueTarget {
  const named = f.bizType !== undefined || f.bizId !== undefined;
  const given = [named, f.from !== undefined, f.dead === true].filter(Boolean).length;
  if (given === 0) throw new RequeueInputError(0, 'give --biz-type and --biz-id for one command, --from FILE for a list, or --dead for the DEAD rows');
  if (given > 1) throw new RequeueInputError(0, '--biz-type/--biz-id, --from and --dead are three ways to select: give one');
  if (f.reason !== undefined && f.dead !== true) throw new RequeueInputError(0, '--reason applies only with --dead');
  if (f.dead) return { kind: 'dead', reason: f.reason === undefined ? null : checkReason(f.reason) };
  if (f.from !== undefined) return { kind: 'file', path: f.from };
  if (f.bizType === undefined || f.bizId === undefined) throw new RequeueInputError(0, '--biz-type and --biz-id go together');
  return { kind: 'key', key: { bizType: checkKeyPart(f.bizType, '--biz-type', BIZ_TYPE_WIDTH, 0), bizId: checkKeyPart(f.bizId, '--biz-id', BIZ_ID_WIDTH, 0) } };
}

type Line = BizKey & { readonly line: number };

function fromCsv(text: string): Line[] {
  let records: ReturnType<typeof parseCsvRecords>;
  try {
    records = parseCsvRecords(text);
  } catch (err) {
    if (err instanceof ReplayInputError) throw new RequeueInputError(err.line, err.problem);
    throw err;
  }
  const header = records.shift();
  if (!header) throw new RequeueInputError(1, 'no header line (biz_type,biz_id)');
  const type = header.fields.indexOf('biz_type');
  const id = header.fields.indexOf('biz_id');
  if (type < 0 || id < 0) throw new RequeueInputError(header.line, 'the header must name biz_type and biz_id');
  if (header.fields.lastIndexOf('biz_type') !== type || header.fields.lastIndexOf('biz_id') !== id) throw new RequeueInputError(header.line, 'biz_type or biz_id appears twice in the header');
  return records.map(({ line, fields }) => {
    if (fields.length !== header.fields.length) throw new RequeueInputError(line, `malformed CSV: ${fields.length} fields, the header has ${header.fields.length}`);
    return { line, bizType: checkKeyPart(fields[type], 'biz_type', BIZ_TYPE_WIDTH, line), bizId: checkKeyPart(fields[id], 'biz_id', BIZ_ID_WIDTH, line) };
  });
}

function fromJsonLines(text: string): Line[] {
  const out: Line[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    const t = raw.replace(/\r$/, '');
    if (t.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(t);
    } catch (err) {
      throw new RequeueInputError(line, `malformed JSON: ${(err as Error).message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new RequeueInputError(line, 'not a JSON object');
    const v = value as Record<string, unknown>;
    out.push({ line, bizType: checkKeyPart(v['bizType'], 'bizType', BIZ_TYPE_WIDTH, line), bizId: checkKeyPart(v['bizId'], 'bizId', BIZ_ID_WIDTH, line) });
  });
  return out;
}

/**
 * Parses and validates a `--from` file (format in this module's comment). Refused, with the
 * line: malformed CSV or JSON, a header without the two columns, a missing, empty, too long or
 * untidy key part, the same key twice, no keys, more than {@link MAX_REQUEUE_ITEMS}.
 * @example parseRequeueFile('biz_type,biz_id\nhonor_apply,A-1\n') // [{ line: 2, bizType: 'honor_apply', bizId: 'A-1' }]
 */
export function parseRequeueFile(text: string): Line[] {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const keys = /^\s*\{/.test(body) ? fromJsonLines(body) : fromCsv(body);
  if (keys.length === 0) throw new RequeueInputError(0, 'the file names no command');
  if (keys.length > MAX_REQUEUE_ITEMS) throw new RequeueInputError(keys[MAX_REQUEUE_ITEMS]!.line, `more than ${MAX_REQUEUE_ITEMS} commands; split the file`);
  const seen = new Map<string, number>();
  for (const k of keys) {
    const id = `${k.bizType}\u0000${k.bizId}`;
    const first = seen.get(id);
    if (first !== undefined) throw new RequeueInputError(k.line, `${JSON.stringify(k.bizType)} ${JSON.stringify(k.bizId)} is named on line ${first} already`);
    seen.set(id, k.line);
  }
  return keys;
}
