/**
 * `retire-absent prove` (SPEC §8), the runner: makes a retire proof (format: `../decide.ts`) from `reconcile
 * diff`'s retire candidates (`../input.ts`), the complete FC manifest they came from, and a fresh
 * look at FC for every candidate; which candidate goes in is {@link candidateExclusion}'s call.
 */
import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { SafetyError, UsageError } from '../../cli/exit.js';
import { writeFileExclusive } from '../../files/atomic.js';
import { loadManifestSource, ManifestReader } from '../../manifest/reader.js';
import { type Candidate, readCandidatesFile, taskIdBeside } from '../input.js';
import { formatProof, PROOF_FORMAT, PROOF_FORMAT_DOC, type ProofManifest, sealProof } from '../decide.js';
import { lookUpAtFc, refuseReusedId } from './store.js';
import type { ProveDeps, ProveOptions, ProveResult } from './types.js';

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
  const out = await freshOut(o.out);
  const candidatesFile = resolve(o.candidatesFile);
  const { candidates, sha256: candidatesSha } = await readCandidatesFile(candidatesFile);
  if (candidates.length === 0) return { kind: 'no-candidates', out };
  const first = candidates[0]!;
  const taskStart = first.taskStart;
  const taskId = o.taskId ?? (await taskIdBeside(candidatesFile, taskStart));
  const fcManifest = await vouchedManifest(o, first, new Set(candidates.map((c) => c.answerUuid)));
  const looked = await lookUpAtFc(await deps.fcDb(), candidates, taskStart, deps);
  if (looked.kind === 'stopped') return looked;
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
    entries: looked.entries,
    excluded: looked.excluded,
  });
  if (deps.shDb) await refuseReusedId(proof, deps.shDb);
  if ((await writeFileExclusive(out, formatProof(proof), 0o600)) === 'exists')
    throw new UsageError(`--out ${out} exists; a proof is never overwritten — choose another path`);
  return { kind: 'written', proof, out, candidates: candidates.length };
}

/** `--out`, resolved: it must not exist, its directory must (checked first, so a refusal costs no FC work). */
async function freshOut(path: string): Promise<string> {
  const out = resolve(path);
  try {
    await stat(out);
    throw new UsageError(`--out ${out} exists; a proof is never overwritten — choose another path`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new UsageError(`cannot use --out ${out}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    if (!(await stat(dirname(out))).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new UsageError(`--out ${out}: directory ${dirname(out)} does not exist`);
  }
  return out;
}

/**
 * Step 3: the FC manifest, checked to vouch for the absence of every `wanted` answer, read
 * through (so its checkpoints' byte and row counts are verified); what the proof records of it.
 */
async function vouchedManifest(o: ProveOptions, first: Candidate, wanted: ReadonlySet<string>): Promise<ProofManifest> {
  const source = await loadManifestSource('fc', o.fcManifest, o.fcCheckpoints);
  const label = `FC manifest ${source.file}`;
  if (!source.wholeKeySpace)
    throw new SafetyError(
      `${label} covers shards ${source.shards.join(', ')} only, not the whole key space: an answer outside them would look absent`,
    );
  if (source.schId !== first.schId || source.formUuid !== first.formUuid) {
    throw new SafetyError(
      `${label} is of school ${source.schId} form ${source.formUuid}, the candidates of school ${first.schId} form ${first.formUuid}`,
    );
  }
  for (const { path, checkpoint } of source.checkpoints) {
    if (checkpoint.params.database !== o.fcDatabase) {
      throw new SafetyError(
        `${label} was scanned from ${checkpoint.params.database} (checkpoint ${path}), but the configured FC database is ${o.fcDatabase}: absence must be checked where the manifest came from`,
      );
    }
  }
  const reader = await ManifestReader.open(source);
  let rows = 0;
  try {
    for (let row = await reader.next(); row !== null; row = await reader.next()) {
      rows++;
      if (wanted.has(row.answerUuid))
        throw new SafetyError(
          `${label} line ${reader.line} holds candidate ${row.answerUuid}: the candidates are not from this manifest`,
        );
    }
    reader.finish();
  } finally {
    await reader.close();
  }
  return {
    path: source.file,
    checkpoints: source.checkpoints.map((c) => c.path),
    rows,
    bytes: source.bytes,
    sha256: reader.sha256!,
    completedAt: source.completedAt,
  };
}
