/**
 * The retire proof format (SPEC §8, seed 000 §8/§8.1 `retireAbsent(AuthoritativeAbsenceProof)`):
 * its types, its digest, its file text and its strict parser — pure. Reading the files is
 * `input.ts`; making a proof (`retire-absent prove`) is `prove/run.ts`.
 *
 * A proof is one JSON object (format `fcctl.retire-proof.v1`), members in this order:
 *
 * | member | type | meaning |
 * |---|---|---|
 * | `format` | `"fcctl.retire-proof.v1"` | this format and its version |
 * | `formatDoc` | string | one line saying what the file is and how its digest is made |
 * | `proofId` | string, 1–128 | recorded as `retire_proof_id` and in the audit |
 * | `taskId` | string, 1–128 | the reconcile task (run id) the candidates came from |
 * | `taskStart` | `yyyy-MM-dd HH:mm:ss` | the task start, SH database clock |
 * | `schId`, `formUuid` | strings | the one school and form the proof covers |
 * | `createdAt` | ISO 8601 UTC | when `prove` wrote it (fcctl's clock) |
 * | `fcDatabase` | `host:port/db` | the FC database the manifest was scanned from and checked against |
 * | `fcManifest` | object | `path`, `checkpoints` (paths), `rows`, `bytes`, `sha256` of the file, `completedAt` |
 * | `candidates` | object | `path`, `rows`, `sha256` of the candidates file |
 * | `entries` | array | per answer: `answerUuid`, `expectedRevision` (digits), `expectedHash`, `expectedIsDeleted`, `localCreateTime`, `fcAbsentCheckedAt` (ISO 8601 UTC, taken just before the FC query) |
 * | `excluded` | array | candidates left out: `answerUuid`, `reason`, `detail`, `fcCheckedAt` |
 * | `digest` | 64 hex | fc.canon.v1 hash of this object without `digest` |
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { basename, dirname, join, resolve } from 'node:path';
import { canonicalize } from '../canon/index.js';
import { UsageError } from '../cli/exit.js';
import { idProblem, isRevisionText, isSchoolId, isStoredUuid, isUuid } from '../ids.js';
import { normalizeDateTime } from '../manifest/row.js';
import { EXCLUSION_REASONS, type ExclusionReason } from './decide.js';

/** Re-exported: the exclusion rule lives with the other decisions (`decide.ts`). */
export { EXCLUSION_REASONS, type ExclusionReason };

export const PROOF_FORMAT = 'fcctl.retire-proof.v1';
/** Every version of the format starts so; another version is refused as unsupported (exit 2). */
export const PROOF_FORMAT_FAMILY = 'fcctl.retire-proof.';
export const PROOF_FORMAT_DOC =
  'fcctl retire-absent proof: answers of one school and form absent from a complete FC manifest and at FC when checked, with the local values to expect; ' +
  'digest = fc.canon.v1 hash (lowercase hex SHA-256 of the canonical JSON) of this object without its digest member';

/** Largest proof or candidates file read (a proof of {@link MAX_PROOF_ENTRIES} entries is about 40 MB). */
export const MAX_PROOF_BYTES = 64 * 1024 * 1024;
/** Most entries a proof holds, and most candidates `prove` reads. */
export const MAX_PROOF_ENTRIES = 100_000;
export interface ProofManifest {
  readonly path: string;
  readonly checkpoints: readonly string[];
  readonly rows: number;
  readonly bytes: number;
  readonly sha256: string;
  readonly completedAt: string;
}

export interface ProofCandidates {
  readonly path: string;
  readonly rows: number;
  readonly sha256: string;
}

export interface ProofEntry {
  readonly answerUuid: string;
  readonly expectedRevision: string;
  readonly expectedHash: string;
  readonly expectedIsDeleted: boolean;
  readonly localCreateTime: string;
  readonly fcAbsentCheckedAt: string;
}

export interface ProofExclusion {
  readonly answerUuid: string;
  readonly reason: ExclusionReason;
  readonly detail: string;
  readonly fcCheckedAt: string;
}

/** A proof without its digest: what the digest covers. */
export interface RetireProofBody {
  readonly format: typeof PROOF_FORMAT;
  readonly formatDoc: string;
  readonly proofId: string;
  readonly taskId: string;
  readonly taskStart: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly createdAt: string;
  readonly fcDatabase: string;
  readonly fcManifest: ProofManifest;
  readonly candidates: ProofCandidates;
  readonly entries: readonly ProofEntry[];
  readonly excluded: readonly ProofExclusion[];
}

export interface RetireProof extends RetireProofBody {
  readonly digest: string;
}

/**
 * The digest of a proof body: the fc.canon.v1 hash of its JSON (the `digest` member, if present, left out).
 * @example proofDigest(body) === sealProof(body).digest
 */
export function proofDigest(body: object): string {
  const r = canonicalize(JSON.stringify(withoutDigest(body as Record<string, unknown>)));
  if (!r.ok) throw new TypeError(`a proof body has no canonical form: ${r.error.code}`);
  return r.hash;
}

/**
 * The proof with its digest, `digest` last.
 * @example const proof = sealProof(body); await writeProofFile('proof.json', proof)
 */
export function sealProof(body: RetireProofBody): RetireProof {
  const rest = withoutDigest(body as unknown as Record<string, unknown>) as unknown as RetireProofBody;
  return { ...rest, digest: proofDigest(rest) };
}

function withoutDigest<T extends Record<string, unknown>>(o: T): Omit<T, 'digest'> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'digest')) as Omit<T, 'digest'>;
}

/**
 * A proof's file text: indented JSON, one line per entry, LF-terminated.
 * @example writeFileSync('proof.json', formatProof(sealProof(body)))
 */
export function formatProof(proof: RetireProof): string {
  const { entries, excluded, digest, ...head } = proof;
  const lines = (items: readonly object[]) =>
    items.length === 0 ? '[]' : `[\n${items.map((e) => `    ${JSON.stringify(e)}`).join(',\n')}\n  ]`;
  const headText = Object.entries(head).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  return `{\n${[...headText, `  "entries": ${lines(entries)}`, `  "excluded": ${lines(excluded)}`, `  "digest": ${JSON.stringify(digest)}`].join(',\n')}\n}\n`;
}

// ---------------------------------------------------------------- reading a proof

/** A proof as read: valid (digest checked), or refused as a whole with what could be read of it. */
export type ProofReading =
  | { readonly kind: 'valid'; readonly proof: RetireProof; readonly fileSha256: string }
  | {
      readonly kind: 'refused';
      readonly reason: 'PROOF_DIGEST' | 'PROOF_INVALID';
      readonly detail: string;
      readonly fileSha256: string;
      readonly proofId: string | null;
      readonly digest: string | null;
      readonly schId: string | null;
      readonly formUuid: string | null;
      /** the entries' answer uuids, where they could be read (each entry is refused with the proof) */
      readonly answerUuids: readonly string[];
    };

/** 64 lowercase hex digits: a SHA-256 or fc.canon.v1 hash. */
export const HEX64 = /^[0-9a-f]{64}$/;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z$/;
/**
 * A `yyyy-MM-dd HH:mm:ss` time, exactly as fcctl writes it.
 * @example isDateTime('2026-11-30 01:00:00') // true
 */
export const isDateTime = (v: unknown): v is string => typeof v === 'string' && normalizeDateTime(v) === v;
const isIso = (v: unknown): v is string => typeof v === 'string' && ISO_UTC.test(v) && Number.isFinite(Date.parse(v));
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function exactMembers(o: Record<string, unknown>, names: readonly string[], where: string): string | null {
  for (const k of Object.keys(o))
    if (!names.includes(k)) return `${where} has an unexpected member ${JSON.stringify(k)}`;
  for (const k of names) if (!(k in o)) return `${where} lacks the member ${JSON.stringify(k)}`;
  return null;
}

/** Item `i` of the array `name`: an object with exactly `members`, where a message names it; or why it is not. */
function itemAt(
  items: readonly unknown[],
  i: number,
  name: string,
  members: readonly string[],
): { where: string; item: Record<string, unknown> } | string {
  const item: unknown = items[i];
  const where = `${name}[${i}]`;
  if (!isObject(item)) return `${where} is not an object`;
  return exactMembers(item, members, where) ?? { where, item };
}

/**
 * A JSON object (not null, not an array).
 * @example isObject(JSON.parse('[]')) // false
 */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const TOP_MEMBERS = [
  'format',
  'formatDoc',
  'proofId',
  'taskId',
  'taskStart',
  'schId',
  'formUuid',
  'createdAt',
  'fcDatabase',
  'fcManifest',
  'candidates',
  'entries',
  'excluded',
  'digest',
];
const MANIFEST_MEMBERS = ['path', 'checkpoints', 'rows', 'bytes', 'sha256', 'completedAt'];
const CANDIDATES_MEMBERS = ['path', 'rows', 'sha256'];
const ENTRY_MEMBERS = [
  'answerUuid',
  'expectedRevision',
  'expectedHash',
  'expectedIsDeleted',
  'localCreateTime',
  'fcAbsentCheckedAt',
];
const EXCLUSION_MEMBERS = ['answerUuid', 'reason', 'detail', 'fcCheckedAt'];

/**
 * Every rule of a v1 proof but the digest; the first problem, or null. Pure.
 * @example proofStructureProblem({ format: 'fcctl.retire-proof.v1' }) // 'the proof lacks the member "formatDoc"'
 */
export function proofStructureProblem(v: Record<string, unknown>): string | null {
  const top = exactMembers(v, TOP_MEMBERS, 'the proof');
  if (top) return top;
  if (typeof v['formatDoc'] !== 'string') return 'formatDoc is not a string';
  for (const k of ['proofId', 'taskId'] as const) {
    const p = idProblem(v[k]);
    if (p) return `${k} ${p}`;
  }
  if (!isDateTime(v['taskStart'])) return 'taskStart is not "yyyy-MM-dd HH:mm:ss"';
  if (!isSchoolId(v['schId'])) return 'schId is not a positive whole number as text';
  if (!isUuid(v['formUuid'])) return 'formUuid is not a UUID';
  if (!isIso(v['createdAt'])) return 'createdAt is not an ISO 8601 UTC time';
  if (typeof v['fcDatabase'] !== 'string' || v['fcDatabase'].length === 0) return 'fcDatabase is not a string';
  const m = v['fcManifest'];
  if (!isObject(m)) return 'fcManifest is not an object';
  const mp = exactMembers(m, MANIFEST_MEMBERS, 'fcManifest');
  if (mp) return mp;
  if (
    typeof m['path'] !== 'string' ||
    !Array.isArray(m['checkpoints']) ||
    m['checkpoints'].length === 0 ||
    !m['checkpoints'].every((c) => typeof c === 'string')
  )
    return 'fcManifest.path or .checkpoints is not as written by prove';
  if (
    !isCount(m['rows']) ||
    !isCount(m['bytes']) ||
    typeof m['sha256'] !== 'string' ||
    !HEX64.test(m['sha256']) ||
    !isIso(m['completedAt'])
  )
    return 'fcManifest.rows, .bytes, .sha256 or .completedAt is not as written by prove';
  const c = v['candidates'];
  if (!isObject(c)) return 'candidates is not an object';
  const cp = exactMembers(c, CANDIDATES_MEMBERS, 'candidates');
  if (cp) return cp;
  if (
    typeof c['path'] !== 'string' ||
    !isCount(c['rows']) ||
    typeof c['sha256'] !== 'string' ||
    !HEX64.test(c['sha256'])
  )
    return 'candidates.path, .rows or .sha256 is not as written by prove';
  const entries = v['entries'];
  if (!Array.isArray(entries)) return 'entries is not an array';
  if (entries.length > MAX_PROOF_ENTRIES) return `more than ${MAX_PROOF_ENTRIES} entries`;
  const seen = new Set<string>();
  for (let i = 0; i < entries.length; i++) {
    const at = itemAt(entries, i, 'entries', ENTRY_MEMBERS);
    if (typeof at === 'string') return at;
    const { where, item: e } = at;
    if (!isStoredUuid(e['answerUuid'])) return `${where}.answerUuid is not 1 to 36 characters`;
    if (seen.has(e['answerUuid'])) return `${where}.answerUuid ${e['answerUuid']} appears twice`;
    seen.add(e['answerUuid']);
    if (!isRevisionText(e['expectedRevision'])) return `${where}.expectedRevision is not a whole number as text`;
    if (typeof e['expectedHash'] !== 'string' || !HEX64.test(e['expectedHash']))
      return `${where}.expectedHash is not 64 lowercase hex digits`;
    if (typeof e['expectedIsDeleted'] !== 'boolean') return `${where}.expectedIsDeleted is not true or false`;
    if (!isDateTime(e['localCreateTime'])) return `${where}.localCreateTime is not "yyyy-MM-dd HH:mm:ss"`;
    if (e['localCreateTime'] > (v['taskStart'] as string)) return `${where}.localCreateTime is after the task start`;
    if (!isIso(e['fcAbsentCheckedAt'])) return `${where}.fcAbsentCheckedAt is not an ISO 8601 UTC time`;
  }
  const excluded = v['excluded'];
  if (!Array.isArray(excluded)) return 'excluded is not an array';
  for (let i = 0; i < excluded.length; i++) {
    const at = itemAt(excluded, i, 'excluded', EXCLUSION_MEMBERS);
    if (typeof at === 'string') return at;
    const { where, item: x } = at;
    if (
      !isStoredUuid(x['answerUuid']) ||
      !(EXCLUSION_REASONS as readonly unknown[]).includes(x['reason']) ||
      typeof x['detail'] !== 'string' ||
      !isIso(x['fcCheckedAt'])
    )
      return `${where} is not as written by prove`;
  }
  return null;
}

/**
 * Reads a proof's bytes. Not a proof at all — not UTF-8, not strict JSON (fc.canon.v1 reader:
 * duplicate members, trailing data… refused), not an object, no `fcctl.retire-proof.*` format,
 * another version — is a {@link UsageError} (exit 2). A v1 proof whose digest does not match is
 * refused `PROOF_DIGEST`; one whose digest matches but breaks a rule of the format is refused
 * `PROOF_INVALID` (both exit 4 for the whole run).
 * @example const r = parseProof(readFileSync('proof.json'), 'proof.json'); if (r.kind === 'valid') …
 */
export function parseProof(bytes: Uint8Array, label: string): ProofReading {
  const fileSha256 = createHash('sha256').update(bytes).digest('hex');
  if (!isUtf8(bytes)) throw new UsageError(`${label} is not UTF-8 text, so not a retire proof`);
  if (bytes.length > MAX_PROOF_BYTES)
    throw new UsageError(`${label} is over ${MAX_PROOF_BYTES} bytes, so not a retire proof`);
  const strict = canonicalize(bytes);
  if (!strict.ok)
    throw new UsageError(
      `${label} is not a strict JSON document (${strict.error.code} at line ${strict.error.line}, column ${strict.error.column}), so not a retire proof`,
    );
  let text = Buffer.from(bytes).toString('utf8');
  if (text.startsWith('\uFEFF')) text = text.slice(1);
  const v: unknown = JSON.parse(text);
  if (!isObject(v)) throw new UsageError(`${label} is not a JSON object, so not a retire proof`);
  const format = v['format'];
  if (typeof format !== 'string' || !format.startsWith(PROOF_FORMAT_FAMILY))
    throw new UsageError(`${label} has no "format": "${PROOF_FORMAT}" member, so it is not a retire proof`);
  if (format !== PROOF_FORMAT)
    throw new UsageError(`${label} is a ${JSON.stringify(format)} proof; this fcctl reads ${PROOF_FORMAT} only`);

  const str = (x: unknown) => (typeof x === 'string' ? x : null);
  const answerUuids = Array.isArray(v['entries'])
    ? (v['entries'] as unknown[]).flatMap((e) =>
        isObject(e) && isStoredUuid(e['answerUuid']) ? [e['answerUuid']] : [],
      )
    : [];
  const refusedWith = (reason: 'PROOF_DIGEST' | 'PROOF_INVALID', detail: string): ProofReading => ({
    kind: 'refused',
    reason,
    detail,
    fileSha256,
    proofId: idProblem(v['proofId']) === null ? (v['proofId'] as string) : null,
    digest: str(v['digest']),
    schId: isSchoolId(v['schId']) ? v['schId'] : null,
    formUuid: isUuid(v['formUuid']) ? v['formUuid'] : null,
    answerUuids: answerUuids.slice(0, MAX_PROOF_ENTRIES),
  });
  const digest = v['digest'];
  if (typeof digest !== 'string' || !HEX64.test(digest))
    return refusedWith('PROOF_DIGEST', `${label} has no digest member of 64 lowercase hex digits`);
  let actual: string;
  try {
    actual = proofDigest(v);
  } catch {
    return refusedWith('PROOF_DIGEST', `${label}: its content has no fc.canon.v1 form, so its digest cannot match`);
  }
  if (actual !== digest)
    return refusedWith(
      'PROOF_DIGEST',
      `${label}: the content hashes to ${actual}, not the digest ${digest} it carries; it was changed after prove wrote it`,
    );
  const problem = proofStructureProblem(v);
  if (problem) return refusedWith('PROOF_INVALID', `${label}: ${problem}`);
  return { kind: 'valid', proof: v as unknown as RetireProof, fileSha256 };
}

/**
 * The evidence file used when none is given: beside the proof, `x.json` → `x.evidence.jsonl`.
 * @example defaultEvidencePath('/runs/proof.json') // '/runs/proof.evidence.jsonl'
 */
export function defaultEvidencePath(proofFile: string): string {
  const abs = resolve(proofFile);
  return join(dirname(abs), `${basename(abs).replace(/\.json$/, '')}.evidence.jsonl`);
}
