/**
 * Retire proofs (SPEC §8, seed 000 §8/§8.1 `retireAbsent(AuthoritativeAbsenceProof)`): the file
 * format, its digest, reading it back strictly, and `retire-absent prove`, which makes one from
 * `reconcile diff`'s retire candidates, the complete FC manifest they came from, and a fresh look
 * at FC for every candidate.
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
import { link, open, readFile, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { canonicalize } from '../canon/index.js';
import { SafetyError, UsageError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import { fsyncDir, tempPathFor } from '../fs/atomic.js';
import { idProblem, isRevisionText, isSchoolId, isStoredUuid, isUuid } from '../ids.js';
import { loadManifestSource, ManifestReader } from '../manifest/reader.js';
import { compareKeys, normalizeDateTime } from '../manifest/row.js';
import { RUN_FILES, RUN_FORMAT } from '../reconcile/run.js';
import { proofIdRefusal } from './decide.js';
import { fcSeen, type FcLookupRow, type ProofIdDigestDbRow, retireSql } from './sql.js';

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

export const EXCLUSION_REASONS = ['PRESENT_AT_FC', 'CREATE_TIME_NULL', 'CREATED_AFTER_TASK_START'] as const;
export type ExclusionReason = (typeof EXCLUSION_REASONS)[number];

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
  const lines = (items: readonly object[]) => (items.length === 0 ? '[]' : `[\n${items.map((e) => `    ${JSON.stringify(e)}`).join(',\n')}\n  ]`);
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

const HEX64 = /^[0-9a-f]{64}$/;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z$/;
const isDateTime = (v: unknown): v is string => typeof v === 'string' && normalizeDateTime(v) === v;
const isIso = (v: unknown): v is string => typeof v === 'string' && ISO_UTC.test(v) && Number.isFinite(Date.parse(v));
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function exactMembers(o: Record<string, unknown>, names: readonly string[], where: string): string | null {
  for (const k of Object.keys(o)) if (!names.includes(k)) return `${where} has an unexpected member ${JSON.stringify(k)}`;
  for (const k of names) if (!(k in o)) return `${where} lacks the member ${JSON.stringify(k)}`;
  return null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const TOP_MEMBERS = ['format', 'formatDoc', 'proofId', 'taskId', 'taskStart', 'schId', 'formUuid', 'createdAt', 'fcDatabase', 'fcManifest', 'candidates', 'entries', 'excluded', 'digest'];
const MANIFEST_MEMBERS = ['path', 'checkpoints', 'rows', 'bytes', 'sha256', 'completedAt'];
const CANDIDATES_MEMBERS = ['path', 'rows', 'sha256'];
const ENTRY_MEMBERS = ['answerUuid', 'expectedRevision', 'expectedHash', 'expectedIsDeleted', 'localCreateTime', 'fcAbsentCheckedAt'];
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
  if (typeof m['path'] !== 'string' || !Array.isArray(m['checkpoints']) || m['checkpoints'].length === 0 || !m['checkpoints'].every((c) => typeof c === 'string')) return 'fcManifest.path or .checkpoints is not as written by prove';
  if (!isCount(m['rows']) || !isCount(m['bytes']) || typeof m['sha256'] !== 'string' || !HEX64.test(m['sha256']) || !isIso(m['completedAt'])) return 'fcManifest.rows, .bytes, .sha256 or .completedAt is not as written by prove';
  const c = v['candidates'];
  if (!isObject(c)) return 'candidates is not an object';
  const cp = exactMembers(c, CANDIDATES_MEMBERS, 'candidates');
  if (cp) return cp;
  if (typeof c['path'] !== 'string' || !isCount(c['rows']) || typeof c['sha256'] !== 'string' || !HEX64.test(c['sha256'])) return 'candidates.path, .rows or .sha256 is not as written by prove';
  const entries = v['entries'];
  if (!Array.isArray(entries)) return 'entries is not an array';
  if (entries.length > MAX_PROOF_ENTRIES) return `more than ${MAX_PROOF_ENTRIES} entries`;
  const seen = new Set<string>();
  for (let i = 0; i < entries.length; i++) {
    const e: unknown = entries[i];
    const where = `entries[${i}]`;
    if (!isObject(e)) return `${where} is not an object`;
    const ep = exactMembers(e, ENTRY_MEMBERS, where);
    if (ep) return ep;
    if (!isStoredUuid(e['answerUuid'])) return `${where}.answerUuid is not 1 to 36 characters`;
    if (seen.has(e['answerUuid'])) return `${where}.answerUuid ${e['answerUuid']} appears twice`;
    seen.add(e['answerUuid']);
    if (!isRevisionText(e['expectedRevision'])) return `${where}.expectedRevision is not a whole number as text`;
    if (typeof e['expectedHash'] !== 'string' || !HEX64.test(e['expectedHash'])) return `${where}.expectedHash is not 64 lowercase hex digits`;
    if (typeof e['expectedIsDeleted'] !== 'boolean') return `${where}.expectedIsDeleted is not true or false`;
    if (!isDateTime(e['localCreateTime'])) return `${where}.localCreateTime is not "yyyy-MM-dd HH:mm:ss"`;
    if (e['localCreateTime'] > (v['taskStart'] as string)) return `${where}.localCreateTime is after the task start`;
    if (!isIso(e['fcAbsentCheckedAt'])) return `${where}.fcAbsentCheckedAt is not an ISO 8601 UTC time`;
  }
  const excluded = v['excluded'];
  if (!Array.isArray(excluded)) return 'excluded is not an array';
  for (let i = 0; i < excluded.length; i++) {
    const x: unknown = excluded[i];
    const where = `excluded[${i}]`;
    if (!isObject(x)) return `${where} is not an object`;
    const xp = exactMembers(x, EXCLUSION_MEMBERS, where);
    if (xp) return xp;
    if (!isStoredUuid(x['answerUuid']) || !(EXCLUSION_REASONS as readonly unknown[]).includes(x['reason']) || typeof x['detail'] !== 'string' || !isIso(x['fcCheckedAt'])) return `${where} is not as written by prove`;
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
  if (bytes.length > MAX_PROOF_BYTES) throw new UsageError(`${label} is over ${MAX_PROOF_BYTES} bytes, so not a retire proof`);
  const strict = canonicalize(bytes);
  if (!strict.ok) throw new UsageError(`${label} is not a strict JSON document (${strict.error.code} at line ${strict.error.line}, column ${strict.error.column}), so not a retire proof`);
  let text = Buffer.from(bytes).toString('utf8');
  if (text.startsWith('\uFEFF')) text = text.slice(1);
  const v: unknown = JSON.parse(text);
  if (!isObject(v)) throw new UsageError(`${label} is not a JSON object, so not a retire proof`);
  const format = v['format'];
  if (typeof format !== 'string' || !format.startsWith(PROOF_FORMAT_FAMILY)) throw new UsageError(`${label} has no "format": "${PROOF_FORMAT}" member, so it is not a retire proof`);
  if (format !== PROOF_FORMAT) throw new UsageError(`${label} is a ${JSON.stringify(format)} proof; this fcctl reads ${PROOF_FORMAT} only`);

  const str = (x: unknown) => (typeof x === 'string' ? x : null);
  const answerUuids = Array.isArray(v['entries']) ? (v['entries'] as unknown[]).flatMap((e) => (isObject(e) && isStoredUuid(e['answerUuid']) ? [e['answerUuid']] : [])) : [];
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
  if (typeof digest !== 'string' || !HEX64.test(digest)) return refusedWith('PROOF_DIGEST', `${label} has no digest member of 64 lowercase hex digits`);
  let actual: string;
  try {
    actual = proofDigest(v);
  } catch {
    return refusedWith('PROOF_DIGEST', `${label}: its content has no fc.canon.v1 form, so its digest cannot match`);
  }
  if (actual !== digest) return refusedWith('PROOF_DIGEST', `${label}: the content hashes to ${actual}, not the digest ${digest} it carries; it was changed after prove wrote it`);
  const problem = proofStructureProblem(v);
  if (problem) return refusedWith('PROOF_INVALID', `${label}: ${problem}`);
  return { kind: 'valid', proof: v as unknown as RetireProof, fileSha256 };
}

/**
 * Reads and parses a proof file; a missing, unreadable or oversized file is a {@link UsageError}
 * (exit 2) — the size is checked before anything is read.
 * @example const r = await readProofFile('proof.json'); if (r.kind === 'refused') console.error(r.reason, r.detail)
 */
export async function readProofFile(path: string): Promise<ProofReading> {
  const label = `proof ${path}`;
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new UsageError(`${label} is not a file`);
    if (s.size > MAX_PROOF_BYTES) throw new UsageError(`${label} is ${s.size} bytes, over the ${MAX_PROOF_BYTES}-byte limit of a retire proof`);
    return parseProof(await readFile(path), label);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${label}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

// ---------------------------------------------------------------- the candidates file

/** A line of `retire-candidates.jsonl` (`reconcile diff`), checked. */
export interface Candidate {
  readonly line: number;
  readonly answerUuid: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly expectedRevision: string;
  readonly expectedHash: string;
  readonly expectedIsDeleted: boolean;
  /** null only in a hand-made file: such a candidate is excluded (`CREATE_TIME_NULL`) */
  readonly localCreateTime: string | null;
  readonly taskStart: string;
}

/**
 * Parses `retire-candidates.jsonl`: one JSON object per line (blank lines skipped, other members
 * ignored), each with `answerUuid`, `schId`, `formUuid`, `expectedRevision`, `expectedHash`,
 * `expectedIsDeleted`, `localCreateTime`, `taskStart`; every line of the same school, form and
 * task start; no answer twice; at most {@link MAX_PROOF_ENTRIES}. Throws {@link UsageError}
 * naming the line.
 * @example parseCandidates(readFileSync('run/retire-candidates.jsonl', 'utf8'), 'run/retire-candidates.jsonl')
 */
export function parseCandidates(text: string, label: string): Candidate[] {
  const out: Candidate[] = [];
  const seen = new Set<string>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.replace(/\r$/, '');
    if (raw.trim() === '') continue;
    const line = i + 1;
    const bad = (problem: string) => new UsageError(`${label} line ${line}: ${problem}`);
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch {
      throw bad('not valid JSON');
    }
    if (!isObject(v)) throw bad('not a JSON object');
    for (const k of ['answerUuid', 'schId', 'formUuid', 'expectedRevision', 'expectedHash', 'expectedIsDeleted', 'localCreateTime', 'taskStart']) if (!(k in v)) throw bad(`member ${k} is missing`);
    // Named by its kind, not serialized: a hostile line may nest too deep for JSON.stringify.
    if (v['category'] !== undefined && v['category'] !== 'ABSENT_AT_FC') throw bad(`category ${typeof v['category'] === 'string' ? JSON.stringify(v['category'].slice(0, 64)) : `of type ${Array.isArray(v['category']) ? 'array' : typeof v['category']}`} is not ABSENT_AT_FC`);
    const { answerUuid, schId, formUuid, expectedRevision, expectedHash, expectedIsDeleted, localCreateTime, taskStart } = v;
    if (!isStoredUuid(answerUuid)) throw bad('answerUuid must be a string of 1 to 36 characters');
    if (!isSchoolId(schId)) throw bad('schId must be a positive whole number as text');
    if (!isUuid(formUuid)) throw bad('formUuid must be a UUID');
    if (!isRevisionText(expectedRevision)) throw bad('expectedRevision must be a whole number as text');
    if (typeof expectedHash !== 'string' || !HEX64.test(expectedHash)) throw bad('expectedHash must be 64 lowercase hex digits');
    if (typeof expectedIsDeleted !== 'boolean') throw bad('expectedIsDeleted must be true or false');
    if (localCreateTime !== null && !isDateTime(localCreateTime)) throw bad('localCreateTime must be null or "yyyy-MM-dd HH:mm:ss"');
    if (!isDateTime(taskStart)) throw bad('taskStart must be "yyyy-MM-dd HH:mm:ss"');
    const first = out[0];
    if (first && (first.schId !== schId || first.formUuid !== formUuid || first.taskStart !== taskStart)) {
      throw bad(`school ${schId}, form ${formUuid}, task start ${taskStart}: line ${first.line} has school ${first.schId}, form ${first.formUuid}, task start ${first.taskStart}; a proof covers one reconcile task`);
    }
    if (seen.has(answerUuid)) throw bad(`answer ${answerUuid} is listed twice`);
    seen.add(answerUuid);
    if (out.length >= MAX_PROOF_ENTRIES) throw bad(`more than ${MAX_PROOF_ENTRIES} candidates; that many absent answers needs a person, not a proof`);
    out.push({ line, answerUuid, schId, formUuid, expectedRevision, expectedHash, expectedIsDeleted, localCreateTime: localCreateTime as string | null, taskStart });
  }
  return out;
}

async function readCandidatesFile(path: string): Promise<{ candidates: Candidate[]; sha256: string }> {
  const label = `candidates ${path}`;
  let bytes: Buffer;
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new UsageError(`${label} is not a file`);
    if (s.size > MAX_PROOF_BYTES) throw new UsageError(`${label} is ${s.size} bytes, over the ${MAX_PROOF_BYTES}-byte limit`);
    bytes = await readFile(path);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${label}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!isUtf8(bytes)) throw new UsageError(`${label} is not UTF-8 text`);
  return { candidates: parseCandidates(bytes.toString('utf8'), label), sha256: createHash('sha256').update(bytes).digest('hex') };
}

/**
 * The task id when none is given: the run id of `run.json` beside the candidates (a `reconcile
 * run` directory), which must name the candidates' task start. Exit 2 when there is none.
 */
async function taskIdBeside(candidatesFile: string, taskStart: string): Promise<string> {
  const path = join(dirname(resolve(candidatesFile)), RUN_FILES.run);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new UsageError(`no --task-id given and no ${RUN_FILES.run} beside the candidates (${path}); pass --task-id`);
  }
  let run: { format?: unknown; runId?: unknown; taskStart?: unknown };
  try {
    run = JSON.parse(text) as typeof run;
  } catch {
    throw new UsageError(`${path} is not JSON; pass --task-id`);
  }
  if (run.format !== RUN_FORMAT || idProblem(run.runId) !== null) throw new UsageError(`${path} is not a ${RUN_FORMAT} file with a run id; pass --task-id`);
  if (run.taskStart !== taskStart) {
    throw new SafetyError(`${path} is of the run with task start ${String(run.taskStart)}, the candidates of task start ${taskStart}: they are not of the same reconcile task`);
  }
  return run.runId as string;
}

// ---------------------------------------------------------------- writing a proof

/**
 * Writes a file atomically and never over an existing one: a temp file beside it, fsynced, then
 * hard-linked to the path (which fails if the path exists), the temp name removed, the directory
 * fsynced. A reader sees no file or the whole file.
 * @throws {UsageError} when the path exists
 * @example await writeFileExclusive('/runs/proof.json', formatProof(proof))
 */
export async function writeFileExclusive(path: string, data: string): Promise<void> {
  const tmp = tempPathFor(path);
  const handle = await open(tmp, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await link(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new UsageError(`--out ${path} exists; a proof is never overwritten — choose another path`);
    throw err;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  await fsyncDir(dirname(path));
}

// ---------------------------------------------------------------- prove

export interface ProveOptions {
  readonly candidatesFile: string;
  readonly fcManifest: string;
  /** one per shard, in shard order; the shards must cover the whole key space */
  readonly fcCheckpoints: readonly string[];
  readonly out: string;
  readonly proofId: string;
  /** default: the run id of `run.json` beside the candidates */
  readonly taskId?: string;
  /** `host:port/db` of the configured FC database: must be the one the manifest was scanned from */
  readonly fcDatabase: string;
}

export interface ProveDeps {
  readonly fcDb: () => Promise<Db>;
  /**
   * The SH database, to check a chosen proof id (`--proof-id`) is not one another proof already
   * used (`fc_reconcile_audit`); absent → no check (the id is a new UUID, used by no one).
   */
  readonly shDb?: () => Promise<Db>;
  readonly now: () => Date;
  readonly signal?: AbortSignal;
  /** each candidate left out, as it is found */
  readonly onExcluded?: (x: ProofExclusion) => void;
}

export type ProveResult =
  | { readonly kind: 'written'; readonly proof: RetireProof; readonly out: string; readonly candidates: number }
  | { readonly kind: 'no-candidates'; readonly out: string }
  | { readonly kind: 'stopped'; readonly reason: string; readonly checked: number; readonly candidates: number };

/** Answers per FC lookup statement. */
const FC_LOOKUP_BATCH = 500;

/**
 * `retire-absent prove`, in this order (nothing is written until the end; any refusal leaves no file):
 * 1. `--out` must not exist (exit 2); the candidates file is read and checked (exit 2);
 *    no candidates → no proof (`no-candidates`);
 * 2. the task id (`--task-id`, or `run.json` beside the candidates, which must name their task start);
 * 3. the FC manifest must be complete and vouched for by its checkpoints — completed, every byte's
 *    SHA-256 and the row count as recorded (exit 4; a bad line exit 2) —, cover the whole key
 *    space, be of the candidates' school and form and scanned from the configured FC database
 *    (exit 4), and hold none of the candidates (exit 4: they are not from this manifest);
 * 4. every candidate is looked up at FC by answer uuid now (the time taken just before each
 *    query is recorded); one found (any school or form), or with a null createTime or one after
 *    the task start, is left out and listed in `excluded`;
 * 5. the proof is sealed (digest); with `deps.shDb` (a chosen `--proof-id`), its id must not be
 *    recorded in `fc_reconcile_audit` by a proof with another digest — a proof is its id AND its
 *    digest, and `retire-absent` would refuse it as a whole (`PROOF_ID_REUSED`) — else exit 4, no
 *    file;
 * 6. it is written atomically, never over an existing file.
 * @example const r = await proveAbsence({ candidatesFile: 'run/retire-candidates.jsonl', fcManifest: 'run/fc-manifest.jsonl', fcCheckpoints: ['run/fc-manifest.checkpoint.json'], out: 'proof.json', proofId: 'rp-1', fcDatabase: 'db:3306/fc' }, { fcDb, now: () => new Date() })
 */
export async function proveAbsence(o: ProveOptions, deps: ProveDeps): Promise<ProveResult> {
  const out = resolve(o.out);
  try {
    await stat(out);
    throw new UsageError(`--out ${out} exists; a proof is never overwritten — choose another path`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new UsageError(`cannot use --out ${out}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    if (!(await stat(dirname(out))).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new UsageError(`--out ${out}: directory ${dirname(out)} does not exist`);
  }
  const candidatesFile = resolve(o.candidatesFile);
  const { candidates, sha256: candidatesSha } = await readCandidatesFile(candidatesFile);
  if (candidates.length === 0) return { kind: 'no-candidates', out };
  const first = candidates[0]!;
  const taskStart = first.taskStart;
  const taskId = o.taskId ?? (await taskIdBeside(candidatesFile, taskStart));

  const source = await loadManifestSource('fc', o.fcManifest, o.fcCheckpoints);
  const label = `FC manifest ${source.file}`;
  if (!source.wholeKeySpace) throw new SafetyError(`${label} covers shards ${source.shards.join(', ')} only, not the whole key space: an answer outside them would look absent`);
  if (source.schId !== first.schId || source.formUuid !== first.formUuid) {
    throw new SafetyError(`${label} is of school ${source.schId} form ${source.formUuid}, the candidates of school ${first.schId} form ${first.formUuid}`);
  }
  for (const { path, checkpoint } of source.checkpoints) {
    if (checkpoint.params.database !== o.fcDatabase) {
      throw new SafetyError(`${label} was scanned from ${checkpoint.params.database} (checkpoint ${path}), but the configured FC database is ${o.fcDatabase}: absence must be checked where the manifest came from`);
    }
  }
  const wanted = new Set(candidates.map((c) => c.answerUuid));
  const reader = await ManifestReader.open(source);
  let rows = 0;
  try {
    for (let row = await reader.next(); row !== null; row = await reader.next()) {
      rows++;
      if (wanted.has(row.answerUuid)) throw new SafetyError(`${label} line ${reader.line} holds candidate ${row.answerUuid}: the candidates are not from this manifest`);
    }
    reader.finish();
  } finally {
    await reader.close();
  }
  const fcManifest: ProofManifest = {
    path: source.file,
    checkpoints: source.checkpoints.map((c) => c.path),
    rows,
    bytes: source.bytes,
    sha256: reader.sha256!,
    completedAt: source.completedAt,
  };

  const db = await deps.fcDb();
  const entries: ProofEntry[] = [];
  const excluded: ProofExclusion[] = [];
  const exclude = (x: ProofExclusion) => {
    excluded.push(x);
    deps.onExcluded?.(x);
  };
  for (let i = 0; i < candidates.length; i += FC_LOOKUP_BATCH) {
    if (deps.signal?.aborted) return { kind: 'stopped', reason: String((deps.signal.reason as Error | undefined)?.message ?? 'signal'), checked: i, candidates: candidates.length };
    const batch = candidates.slice(i, i + FC_LOOKUP_BATCH);
    const checkedAt = deps.now().toISOString();
    const q = retireSql.fcAnswers(batch.map((c) => c.answerUuid));
    const found = new Map((await db.query<FcLookupRow>(q.sql, q.params)).map((r) => [r.answer_uuid, fcSeen(r)]));
    for (const c of batch) {
      const at = found.get(c.answerUuid);
      if (at) {
        const where = at.schId === c.schId && at.formUuid === c.formUuid ? '' : ` under school ${at.schId} form ${at.formUuid}`;
        exclude({ answerUuid: c.answerUuid, reason: 'PRESENT_AT_FC', detail: `FC has it now${where} (revision ${at.revision}${at.isDeleted ? ', tombstone' : ''})`, fcCheckedAt: checkedAt });
      } else if (c.localCreateTime === null) {
        exclude({ answerUuid: c.answerUuid, reason: 'CREATE_TIME_NULL', detail: 'the local createTime is null', fcCheckedAt: checkedAt });
      } else if (c.localCreateTime > taskStart) {
        exclude({ answerUuid: c.answerUuid, reason: 'CREATED_AFTER_TASK_START', detail: `created ${c.localCreateTime}, after the task start ${taskStart}`, fcCheckedAt: checkedAt });
      } else {
        entries.push({
          answerUuid: c.answerUuid,
          expectedRevision: c.expectedRevision,
          expectedHash: c.expectedHash,
          expectedIsDeleted: c.expectedIsDeleted,
          localCreateTime: c.localCreateTime,
          fcAbsentCheckedAt: checkedAt,
        });
      }
    }
  }
  entries.sort((a, b) => compareKeys(a.answerUuid, b.answerUuid));
  const proof = sealProof({
    format: PROOF_FORMAT,
    formatDoc: PROOF_FORMAT_DOC,
    proofId: o.proofId,
    taskId,
    taskStart,
    schId: first.schId,
    formUuid: first.formUuid,
    createdAt: deps.now().toISOString(),
    fcDatabase: o.fcDatabase,
    fcManifest,
    candidates: { path: candidatesFile, rows: candidates.length, sha256: candidatesSha },
    entries,
    excluded,
  });
  if (deps.shDb) {
    const q = retireSql.proofIdDigests(proof.proofId);
    const recorded = (await (await deps.shDb()).query<ProofIdDigestDbRow>(q.sql, q.params)).map((d) => d.proof_digest);
    const reused = proofIdRefusal(proof.proofId, proof.digest, recorded);
    if (reused) throw new SafetyError(`${reused.detail}; no proof written`);
  }
  await writeFileExclusive(out, formatProof(proof));
  return { kind: 'written', proof, out, candidates: candidates.length };
}

/**
 * The evidence file used when none is given: beside the proof, `x.json` → `x.evidence.jsonl`.
 * @example defaultEvidencePath('/runs/proof.json') // '/runs/proof.evidence.jsonl'
 */
export function defaultEvidencePath(proofFile: string): string {
  const abs = resolve(proofFile);
  return join(dirname(abs), `${basename(abs).replace(/\.json$/, '')}.evidence.jsonl`);
}
