/**
 * Manifest rows (SPEC §7, seed 000 §8.1 `manifestPage`): the light summary of one answer on one
 * side — never the value document, never a database id — and their one-line JSON form.
 *
 * A manifest file is JSON Lines, one row per line, LF-terminated, strictly ascending by
 * `answerUuid` (byte order, which is the `utf8mb4_bin` order the page queries use). Members, in
 * this order, exactly:
 *
 * | member | type | meaning |
 * |---|---|---|
 * | `answerUuid` | string | the answer |
 * | `revision` | string of digits | `answer_revision` (BIGINT as decimal text: exact, never a double) |
 * | `contentHash` | string | 64 lowercase hex, fc.canon.v1 |
 * | `isDeleted` | boolean | tombstone |
 * | `schId` | string of digits | the school (BIGINT as decimal text) |
 * | `createTime` | string or null | `yyyy-MM-dd HH:mm:ss` as stored (FC: the answer's; SH: the projection row's) |
 * | `retiredAt` | string or null | SH side only: `retired_at` (`yyyy-MM-dd HH:mm:ss`); absent on FC rows |
 */
import { normalizeDateTime } from '../time/datetime.js';
import { isRevisionText, isSchoolId, isStoredUuid } from '../ids.js';

export type ManifestSide = 'fc' | 'sh';

/** One manifest row. `retiredAt` is present on SH rows only. */
export interface ManifestRow {
  readonly answerUuid: string;
  readonly revision: string;
  readonly contentHash: string;
  readonly isDeleted: boolean;
  readonly schId: string;
  readonly createTime: string | null;
  readonly retiredAt?: string | null;
}

const HASH = /^[0-9a-f]{64}$/;

/**
 * The exact byte-order comparison of two keys (UTF-8 byte order = code point order), without
 * encoding them: `<` on JS strings compares UTF-16 units, which differs for astral characters.
 * @example compareKeys('a', 'b') < 0
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0xd800 && y < 0xd800) return x - y;
    const cx = a.codePointAt(i)!;
    const cy = b.codePointAt(i)!;
    return cx - cy;
  }
  return a.length - b.length;
}

/**
 * The row as one manifest line (with its LF). The member order is fixed, so the same rows always
 * give the same bytes — what makes a resumed scan byte-identical to an uninterrupted one.
 * @example formatManifestLine({ answerUuid: 'a…', revision: '2', contentHash: 'f…', isDeleted: false, schId: '5', createTime: '2026-10-21 08:00:00' })
 */
export function formatManifestLine(row: ManifestRow): string {
  return (
    `{"answerUuid":${JSON.stringify(row.answerUuid)},"revision":"${row.revision}","contentHash":"${row.contentHash}",` +
    `"isDeleted":${row.isDeleted},"schId":"${row.schId}","createTime":${row.createTime === null ? 'null' : `"${row.createTime}"`}` +
    (row.retiredAt === undefined ? '' : `,"retiredAt":${row.retiredAt === null ? 'null' : `"${row.retiredAt}"`}`) +
    '}\n'
  );
}

/** Why a manifest line was refused (the caller adds the file and line number). */
export class ManifestLineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ManifestLineError';
  }
}

const FC_MEMBERS = ['answerUuid', 'revision', 'contentHash', 'isDeleted', 'schId', 'createTime'] as const;
const SH_MEMBERS = [...FC_MEMBERS, 'retiredAt'] as const;

/**
 * Parses and checks one manifest line (text without its LF): a JSON object with exactly the
 * members of its side, each of the documented type. Throws {@link ManifestLineError}.
 * @example parseManifestLine('{"answerUuid":"…",…}', 'fc').revision
 */
export function parseManifestLine(text: string, side: ManifestSide): ManifestRow {
  const fast = (side === 'sh' ? SH_LINE : FC_LINE).exec(text);
  if (fast !== null) {
    return side === 'sh'
      ? {
          answerUuid: fast[1]!,
          revision: fast[2]!,
          contentHash: fast[3]!,
          isDeleted: fast[4] === 'true',
          schId: fast[5]!,
          createTime: fast[6] ?? null,
          retiredAt: fast[7] ?? null,
        }
      : {
          answerUuid: fast[1]!,
          revision: fast[2]!,
          contentHash: fast[3]!,
          isDeleted: fast[4] === 'true',
          schId: fast[5]!,
          createTime: fast[6] ?? null,
        };
  }
  return parseManifestJson(text, side);
}

// The exact form fcctl writes (formatManifestLine), matched in one step: every value already of its
// documented type (no escapes in the uuid, at most 18 digits so within 64 bits). Anything else —
// other member order, whitespace, escapes, long numbers, mistakes — goes through JSON.parse and the
// member checks, which accept the same rows and name what is wrong.
const TIME_OR_NULL = '(?:null|"(\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2})")';
const LINE_HEAD =
  '^\\{"answerUuid":"([^"\\\\\\u0000-\\u001f\\u007f]{1,36})","revision":"(0|[1-9][0-9]{0,17})","contentHash":"([0-9a-f]{64})",' +
  `"isDeleted":(true|false),"schId":"([1-9][0-9]{0,17})","createTime":${TIME_OR_NULL}`;
const FC_LINE = new RegExp(`${LINE_HEAD}\\}$`);
const SH_LINE = new RegExp(`${LINE_HEAD},"retiredAt":${TIME_OR_NULL}\\}$`);

function parseManifestJson(text: string, side: ManifestSide): ManifestRow {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ManifestLineError(text.trim() === '' ? 'empty line' : 'not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ManifestLineError('not a JSON object');
  const o = value as Record<string, unknown>;
  const members = side === 'sh' ? SH_MEMBERS : FC_MEMBERS;
  for (const k of Object.keys(o))
    if (!(members as readonly string[]).includes(k))
      throw new ManifestLineError(`unexpected member ${JSON.stringify(k)} in a ${side} manifest`);
  for (const k of members) if (!(k in o)) throw new ManifestLineError(`member ${JSON.stringify(k)} is missing`);
  const { answerUuid, revision, contentHash, isDeleted, schId, createTime } = o;
  if (!isStoredUuid(answerUuid)) {
    throw new ManifestLineError('answerUuid must be a string of 1 to 36 characters');
  }
  if (!isRevisionText(revision)) throw new ManifestLineError('revision must be a string of digits (a 64-bit integer)');
  if (typeof contentHash !== 'string' || !HASH.test(contentHash))
    throw new ManifestLineError('contentHash must be 64 lowercase hex digits');
  if (typeof isDeleted !== 'boolean') throw new ManifestLineError('isDeleted must be true or false');
  if (!isSchoolId(schId)) throw new ManifestLineError('schId must be a string of digits (a positive 64-bit integer)');
  const time = (name: string, v: unknown): string | null => {
    if (v === null) return null;
    if (typeof v !== 'string' || normalizeDateTime(v) !== v)
      throw new ManifestLineError(`${name} must be null or "yyyy-MM-dd HH:mm:ss"`);
    return v;
  };
  const row: ManifestRow = {
    answerUuid,
    revision,
    contentHash,
    isDeleted,
    schId,
    createTime: time('createTime', createTime),
  };
  return side === 'sh' ? { ...row, retiredAt: time('retiredAt', o['retiredAt']) } : row;
}

/**
 * Compares two revisions given as digit strings, exactly (any length).
 * @example compareRevisions('10', '9') > 0
 */
export function compareRevisions(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
