/**
 * Identifier checks, one copy for every command, file format and parser: the patterns, the
 * limits and pure predicates. Nothing here throws — each caller words its own refusal (a commander
 * argument error, a line of a file, a problem of a proof), so the rule is shared and the message
 * stays the caller's.
 */

/** Largest BIGINT (signed 64-bit): the range of school ids, revisions and every id column. */
export const INT64_MAX = 2n ** 63n - 1n;
/** Smallest BIGINT (signed 64-bit). */
export const INT64_MIN = -(2n ** 63n);

/** `8-4-4-4-12` hex, any case: the form of `--form`, `--cursor` and answer uuids fcctl accepts as input. */
export const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A control character: C0 (U+0000–U+001F) or DEL. */
// eslint-disable-next-line no-control-regex
export const CONTROL = /[\u0000-\u001f\u007f]/;

/** Longest proof id (`retire_proof_id` is VARCHAR(128)), task id and operation id. */
export const MAX_ID_LENGTH = 128;
/** Longest run id (`fc_reconcile_audit.run_id` is VARCHAR(64)). */
export const MAX_RUN_ID_LENGTH = 64;
/** Longest consumer app key fcctl takes on its command line (`consumer_app_key` is VARCHAR(64)). */
export const MAX_APP_KEY_LENGTH = 64;
/** Longest answer uuid a column holds (`answer_uuid` is VARCHAR(36)). */
export const MAX_ANSWER_UUID_LENGTH = 36;

/**
 * A UUID as input: the 8-4-4-4-12 hex form, any case (lookups are exact, so the case is kept).
 * @example isUuid('8c1f3a52-0d6e-4b7a-9c2e-5f4d3b2a1c0e') // true
 */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}

/**
 * An answer uuid as a column holds it: 1 to 36 characters without control characters — not
 * necessarily a UUID (a row of another form is still read and compared).
 * @example isStoredUuid('a1') // true
 */
export function isStoredUuid(value: unknown): value is string {
  return (
    typeof value === 'string' && value.length > 0 && value.length <= MAX_ANSWER_UUID_LENGTH && !CONTROL.test(value)
  );
}

/** A content hash (fc.canon.v1): 64 lowercase hex digits. */
export const CONTENT_HASH_PATTERN = /^[0-9a-f]{64}$/;

/**
 * A content hash as the commands take it (`--expected-hash`): 64 lowercase hex digits.
 * @example isContentHash('a'.repeat(64)) // true; isContentHash('A'.repeat(64)) // false
 */
export function isContentHash(value: unknown): value is string {
  return typeof value === 'string' && CONTENT_HASH_PATTERN.test(value);
}

/**
 * A school id as text: a positive BIGINT in canonical decimal (no sign, no leading zero).
 * @example isSchoolId('5') // true; isSchoolId('05') // false; isSchoolId('9223372036854775808') // false
 */
export function isSchoolId(value: unknown): value is string {
  return typeof value === 'string' && /^[1-9]\d{0,18}$/.test(value) && BigInt(value) <= INT64_MAX;
}

/**
 * Positive integer text of any length (no sign, no leading zero), unbounded — the SPEC §4 rule
 * for the school of a routing key (a key of 40 digits still routes) and for ids read back from a
 * database column. Where the value must fit a BIGINT (command lines, files), use {@link isSchoolId}.
 * @example isPositiveIntegerText('5') // true; isPositiveIntegerText('05') // false
 */
export function isPositiveIntegerText(value: string): boolean {
  return /^[1-9][0-9]*$/.test(value);
}

/**
 * A revision as written text: a BIGINT ≥ 0 in canonical decimal (`0`, or no leading zero) — the
 * form of manifests and proofs. For revisions as input, see {@link revisionOf}.
 * @example isRevisionText('7') // true; isRevisionText('007') // false
 */
export function isRevisionText(value: unknown): value is string {
  return typeof value === 'string' && /^(?:0|[1-9]\d{0,18})$/.test(value) && BigInt(value) <= INT64_MAX;
}

/**
 * A revision as canonical decimal text, or null when it is not a whole number ≥ 0 within BIGINT.
 * Lenient, for comparing values as read (surrounding spaces and leading zeros are dropped).
 * @example canonicalRevision('007') // '7'
 */
export function canonicalRevision(value: string | number | bigint): string | null {
  const text = String(value).trim();
  if (!/^\d{1,19}$/.test(text)) return null;
  const n = BigInt(text);
  return n <= INT64_MAX ? n.toString() : null;
}

/**
 * A revision as input (a flag, a file line): a safe JSON number ≥ 0 or decimal digits (leading
 * zeros allowed, no spaces) within BIGINT, returned canonical; null for anything else.
 * @example revisionOf('007') // '7'; revisionOf(' 7') // null; revisionOf(-1) // null
 */
export function revisionOf(value: unknown): string | null {
  const ok =
    (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) ||
    (typeof value === 'string' && /^\d+$/.test(value));
  return ok ? canonicalRevision(value as string | number) : null;
}

/**
 * Text without control characters or surrounding spaces (a stray space in a file would match
 * nothing, silently).
 * @example isTidy('INC-42') // true; isTidy(' INC-42') // false
 */
export function isTidy(value: string): boolean {
  return !CONTROL.test(value) && value.trim() === value;
}

/**
 * Checks an id (proof id, task id, operation id, and the run id of `retire-absent`): 1–`max`
 * characters, no control characters, no surrounding spaces; the problem, to follow the id's
 * name, or null when fine.
 * @example idProblem('rp-1') // null; idProblem('', 64) // 'is empty'
 */
export function idProblem(value: unknown, max = MAX_ID_LENGTH): string | null {
  if (typeof value !== 'string' || value.length === 0) return 'is empty';
  if ([...value].length > max) return `is longer than ${max} characters`;
  if (!isTidy(value)) return 'holds control characters or surrounding spaces';
  return null;
}

/**
 * A run id of `projection repair-authoritative`: 1–64 letters, digits and `. _ : -` — stricter
 * than {@link idProblem}, which `retire-absent --run-id` applies (any tidy text of 1–64
 * characters); the two commands take different run ids and both rules are kept.
 * @example isTokenRunId('nightly-2026-11-30') // true; isTokenRunId('a b') // false
 */
export function isTokenRunId(value: unknown): value is string {
  return typeof value === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(value);
}

/**
 * A consumer app key as stored: 1–64 characters, no whitespace or control characters. Not
 * checked as a routing key: a row with such a key is still listable.
 * @example isAppKey('100018') // true; isAppKey('a.b') // true
 */
export function isAppKey(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return value.length > 0 && value.length <= MAX_APP_KEY_LENGTH && !/[\s\u0000-\u001f\u007f]/.test(value);
}

/**
 * An app key that can stand in a routing key (SPEC §4): non-empty, none of `.` `*` `#` (they
 * would widen a topic match), whitespace or control characters. No length limit here: the
 * routing key's own limit applies.
 * @example isRoutingSafe('100018') // true; isRoutingSafe('a.b') // false
 */
export function isRoutingSafe(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return value !== '' && !/[.*#\s\u0000-\u001f\u007f]/.test(value);
}

/**
 * An app key fcctl may queue messages for: {@link isAppKey} and {@link isRoutingSafe}.
 * @example isRoutableAppKey('100018') // true; isRoutableAppKey('fault*wild') // false
 */
export function isRoutableAppKey(value: string): boolean {
  return isAppKey(value) && isRoutingSafe(value);
}
