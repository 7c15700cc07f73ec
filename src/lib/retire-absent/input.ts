/**
 * Reading `retire-absent`'s input files: a proof (`readProofFile`, parsed by `parseProof` in `decide.ts`),
 * `reconcile diff`'s retire candidates, and the `run.json` beside them. A refusal is a
 * {@link UsageError} (exit 2), or a {@link SafetyError} (exit 4) for a `run.json` of another task.
 */
import type { RetireCandidateLine } from '../reconcile/diff/types.js';
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { SafetyError, UsageError } from '../cli/exit.js';
import { idProblem, isRevisionText, isSchoolId, isStoredUuid, isUuid } from '../ids.js';
import { RUN_FILES, RUN_FORMAT } from '../reconcile/run/types.js';
import {
  HEX64,
  isDateTime,
  isObject,
  MAX_PROOF_BYTES,
  MAX_PROOF_ENTRIES,
  parseProof,
  type ProofReading,
} from './decide.js';

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
    if (s.size > MAX_PROOF_BYTES)
      throw new UsageError(`${label} is ${s.size} bytes, over the ${MAX_PROOF_BYTES}-byte limit of a retire proof`);
    return parseProof(await readFile(path), label);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${label}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

// ---------------------------------------------------------------- the candidates file

/** A line of `retire-candidates.jsonl` as `reconcile diff` writes it, checked, with its line number. */
export interface Candidate extends Omit<RetireCandidateLine, 'category' | 'localCreateTime'> {
  readonly line: number;
  /** null only in a hand-made file: such a candidate is excluded (`CREATE_TIME_NULL`) */
  readonly localCreateTime: string | null;
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
    for (const k of [
      'answerUuid',
      'schId',
      'formUuid',
      'expectedRevision',
      'expectedHash',
      'expectedIsDeleted',
      'localCreateTime',
      'taskStart',
    ])
      if (!(k in v)) throw bad(`member ${k} is missing`);
    // Named by its kind, not serialized: a hostile line may nest too deep for JSON.stringify.
    if (v['category'] !== undefined && v['category'] !== 'ABSENT_AT_FC')
      throw bad(
        `category ${typeof v['category'] === 'string' ? JSON.stringify(v['category'].slice(0, 64)) : `of type ${Array.isArray(v['category']) ? 'array' : typeof v['category']}`} is not ABSENT_AT_FC`,
      );
    const {
      answerUuid,
      schId,
      formUuid,
      expectedRevision,
      expectedHash,
      expectedIsDeleted,
      localCreateTime,
      taskStart,
    } = v;
    if (!isStoredUuid(answerUuid)) throw bad('answerUuid must be a string of 1 to 36 characters');
    if (!isSchoolId(schId)) throw bad('schId must be a positive whole number as text');
    if (!isUuid(formUuid)) throw bad('formUuid must be a UUID');
    if (!isRevisionText(expectedRevision)) throw bad('expectedRevision must be a whole number as text');
    if (typeof expectedHash !== 'string' || !HEX64.test(expectedHash))
      throw bad('expectedHash must be 64 lowercase hex digits');
    if (typeof expectedIsDeleted !== 'boolean') throw bad('expectedIsDeleted must be true or false');
    if (localCreateTime !== null && !isDateTime(localCreateTime))
      throw bad('localCreateTime must be null or "yyyy-MM-dd HH:mm:ss"');
    if (!isDateTime(taskStart)) throw bad('taskStart must be "yyyy-MM-dd HH:mm:ss"');
    const first = out[0];
    if (first && (first.schId !== schId || first.formUuid !== formUuid || first.taskStart !== taskStart)) {
      throw bad(
        `school ${schId}, form ${formUuid}, task start ${taskStart}: line ${first.line} has school ${first.schId}, form ${first.formUuid}, task start ${first.taskStart}; a proof covers one reconcile task`,
      );
    }
    if (seen.has(answerUuid)) throw bad(`answer ${answerUuid} is listed twice`);
    seen.add(answerUuid);
    if (out.length >= MAX_PROOF_ENTRIES)
      throw bad(`more than ${MAX_PROOF_ENTRIES} candidates; that many absent answers needs a person, not a proof`);
    out.push({
      line,
      answerUuid,
      schId,
      formUuid,
      expectedRevision,
      expectedHash,
      expectedIsDeleted,
      localCreateTime: localCreateTime as string | null,
      taskStart,
    });
  }
  return out;
}

/**
 * Reads and parses the candidates file ({@link parseCandidates}), with the SHA-256 of its bytes;
 * a missing, unreadable, oversized or non-UTF-8 file is a {@link UsageError} (exit 2).
 * @example const { candidates, sha256 } = await readCandidatesFile('run/retire-candidates.jsonl')
 */
export async function readCandidatesFile(path: string): Promise<{ candidates: Candidate[]; sha256: string }> {
  const label = `candidates ${path}`;
  let bytes: Buffer;
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new UsageError(`${label} is not a file`);
    if (s.size > MAX_PROOF_BYTES)
      throw new UsageError(`${label} is ${s.size} bytes, over the ${MAX_PROOF_BYTES}-byte limit`);
    bytes = await readFile(path);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read ${label}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!isUtf8(bytes)) throw new UsageError(`${label} is not UTF-8 text`);
  return {
    candidates: parseCandidates(bytes.toString('utf8'), label),
    sha256: createHash('sha256').update(bytes).digest('hex'),
  };
}

/**
 * The task id when none is given: the run id of `run.json` beside the candidates (a `reconcile
 * run` directory), which must name the candidates' task start. Exit 2 when there is none.
 * @example await taskIdBeside('run/retire-candidates.jsonl', '2026-11-30 01:00:00') // the runId of run/run.json
 */
export async function taskIdBeside(candidatesFile: string, taskStart: string): Promise<string> {
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
  if (run.format !== RUN_FORMAT || idProblem(run.runId) !== null)
    throw new UsageError(`${path} is not a ${RUN_FORMAT} file with a run id; pass --task-id`);
  if (run.taskStart !== taskStart) {
    throw new SafetyError(
      `${path} is of the run with task start ${String(run.taskStart)}, the candidates of task start ${taskStart}: they are not of the same reconcile task`,
    );
  }
  return run.runId as string;
}
