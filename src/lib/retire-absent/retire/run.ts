/**
 * `retire-absent --proof F`, the runner: {@link runRetireAbsent} opens the evidence file and
 * records the run and its end around {@link runRetire}, which checks the proof as a whole (digest,
 * format, age, FC database, its id), then per entry looks the answer up at FC now, reads the local
 * row, decides (`../decide.ts`) and — with `execute` — applies the decision in ONE short SH
 * transaction: lock the row, decide on what is locked, the conditional retirement UPDATE, the
 * audit row. A proof refused as a whole gets one audit row (with `execute`). A dry run writes to
 * no database. Every decision is appended to the evidence file (JSON lines, format
 * `fcctl.retire-evidence.v1`, the shared {@link EvidenceFile}).
 *
 * Evidence lines, one JSON object each:
 * - `{"type":"run", format, runId, proofFile, proofFileSha256, proofId, proofDigest, taskId, taskStart, schId, formUuid, execute, maxProofAgeSeconds, host, startedAt}`
 * - `{"type":"decision", runId, proofId, answerUuid, schId, formUuid, result, reason, detail, dryRun, expected, fc, local, retiredAt, decidedAt}`
 * - `{"type":"refused-proof", runId, reason, detail}` when the whole proof is refused (nothing retired; with `execute`, one audit row records it)
 * - `{"type":"end", runId, exitCode, counts, notRun, stoppedBy, endedAt}`
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Progress } from '../../cli/output.js';
import { EvidenceFile } from '../../files/jsonl-evidence.js';
import { type ProofRefusal, refusedWithProof, type RetireEntry } from '../decide.js';
import {
  type EntryOutcome,
  retireEndCounts,
  retireExitCode,
  type RetireRunFacts,
  type RetireRunResult,
  expectedOf,
} from './decide.js';
import type { ProofReading, RetireProof } from '../decide.js';
import { auditProofRefusal, lookupFc, proofRefusal, settle } from './store.js';
import type { RetireRunDeps, RetireRunOptions } from './types.js';

export type { EntryOutcome, RetireRunResult };

export const EVIDENCE_FORMAT = 'fcctl.retire-evidence.v1';

/**
 * Opens (creates or appends to) a retire run's evidence file; exit 2 when it cannot be.
 * @example const log = await openRetireEvidence('proof.evidence.jsonl'); await log.append({ type: 'run' }); await log.close()
 */
export function openRetireEvidence(path: string): Promise<EvidenceFile> {
  return EvidenceFile.open(path, { openError: (p, why) => `cannot open evidence file ${p}: ${why}` });
}

/** What `retire-absent` runs: one proof, read already, and where its evidence goes. */
export interface RetireAbsentRunOptions extends RetireRunOptions {
  readonly evidencePath: string;
}

export interface RetireAbsentDeps extends Omit<RetireRunDeps, 'evidence'> {
  /** the live display, opened once the evidence file is (`total`: the proof's entries, when it is readable) */
  readonly progress?: (total: number | undefined) => Progress;
}

/** A finished run: the result, its exit code, the evidence file written (what its summary reads). */
export interface RetireAbsentRun extends RetireRunFacts {
  readonly result: RetireRunResult;
}

/**
 * The run, as a list of steps: open the evidence file (exit 2), run the proof ({@link runRetire};
 * a database error is recorded as the end, then thrown: exit 3), record the end with the counts,
 * close.
 * @example const { exitCode } = await runRetireAbsent({ proofFile, reading, execute: false, maxProofAgeSeconds: 86400, runId, fcDatabase, evidencePath }, { fcDb, shDb, now, signal })
 */
export async function runRetireAbsent(o: RetireAbsentRunOptions, deps: RetireAbsentDeps): Promise<RetireAbsentRun> {
  const evidence = await openRetireEvidence(o.evidencePath);
  const progress = deps.progress?.(o.reading.kind === 'valid' ? o.reading.proof.entries.length : undefined);
  const onResult = (r: EntryOutcome) => {
    progress?.record(r.result === 'REFUSED' ? (r.reason ?? 'REFUSED') : undefined);
    deps.onResult?.(r);
  };
  let result: RetireRunResult;
  try {
    result = await runRetire(o, { ...deps, evidence, onResult });
  } catch (err) {
    progress?.stop();
    await evidence
      .append({
        type: 'end',
        runId: o.runId,
        exitCode: null,
        error: String((err as Error)?.message ?? err).split('\n')[0],
        endedAt: deps.now().toISOString(),
      })
      .catch(() => undefined);
    await evidence.close();
    throw err;
  }
  progress?.stop();
  const exitCode = retireExitCode(result);
  const notRun = result.kind === 'done' ? result.notRun : 0;
  const stoppedBy = result.kind === 'done' ? result.stoppedBy : 'refused';
  await evidence.append({
    type: 'end',
    runId: o.runId,
    exitCode,
    counts: retireEndCounts(result.outcomes, !o.execute),
    notRun,
    stoppedBy,
    endedAt: deps.now().toISOString(),
  });
  await evidence.close();
  const { proof, proofId, proofDigest } = proofIdentity(o.reading);
  return {
    result,
    exitCode,
    dryRun: !o.execute,
    runId: o.runId,
    proofId,
    proofDigest,
    entries: proof ? proof.entries.length : null,
    evidence: evidence.path,
  };
}

function entryOf(proof: RetireProof, e: RetireProof['entries'][number]): RetireEntry {
  return {
    proofId: proof.proofId,
    proofDigest: proof.digest,
    answerUuid: e.answerUuid,
    schId: proof.schId,
    formUuid: proof.formUuid,
    expectedRevision: e.expectedRevision,
    expectedHash: e.expectedHash,
    expectedIsDeleted: e.expectedIsDeleted,
    localCreateTime: e.localCreateTime,
  };
}

/**
 * Runs one proof, in steps: the run line; the proof as a whole ({@link proofRefusal}) — refused,
 * every readable entry is refused for that reason, after writing the evidence and, with
 * `execute`, one audit row for the proof; nothing is retired ({@link refuseProof}) —; otherwise
 * each entry in order ({@link retireEntries}). Database errors propagate (the command exits 3).
 * @example const r = await runRetire({ proofFile, reading, execute: true, maxProofAgeSeconds: 86400, runId, fcDatabase }, { fcDb, shDb, evidence, now, signal })
 */
export async function runRetire(o: RetireRunOptions, deps: RetireRunDeps): Promise<RetireRunResult> {
  const host = deps.host ?? hostname();
  await deps.evidence.append(runLine(o, host, deps.now()));
  const refusal = await proofRefusal(o, deps);
  if (refusal) return refuseProof(o, deps, host, refusal);
  return retireEntries((o.reading as Extract<ProofReading, { kind: 'valid' }>).proof, o, deps, host);
}

/** What the file says of the proof: read in full, or as far as a refused file could be. */
function proofIdentity(r: ProofReading) {
  const proof = r.kind === 'valid' ? r.proof : null;
  return {
    proof,
    proofId: proof ? proof.proofId : r.kind === 'refused' ? r.proofId : null,
    proofDigest: proof ? proof.digest : r.kind === 'refused' ? r.digest : null,
    schId: proof ? proof.schId : r.kind === 'refused' ? r.schId : null,
    formUuid: proof ? proof.formUuid : r.kind === 'refused' ? r.formUuid : null,
  };
}

/** The evidence file's first line of a run. */
function runLine(o: RetireRunOptions, host: string, now: Date): Record<string, unknown> {
  const r = o.reading;
  const id = proofIdentity(r);
  return {
    type: 'run',
    format: EVIDENCE_FORMAT,
    runId: o.runId,
    proofFile: o.proofFile,
    proofFileSha256: r.fileSha256,
    proofId: id.proofId,
    proofDigest: id.proofDigest,
    taskId: id.proof?.taskId ?? null,
    taskStart: id.proof?.taskStart ?? null,
    schId: id.schId,
    formUuid: id.formUuid,
    execute: o.execute,
    maxProofAgeSeconds: o.maxProofAgeSeconds,
    host,
    startedAt: now.toISOString(),
  };
}

/** A proof refused as a whole: every readable entry refused with its reason, in the evidence; with `execute`, one audit row. */
async function refuseProof(
  o: RetireRunOptions,
  deps: RetireRunDeps,
  host: string,
  refusal: ProofRefusal,
): Promise<RetireRunResult> {
  const r = o.reading;
  const { proof, proofId } = proofIdentity(r);
  const answerUuids = proof ? proof.entries.map((e) => e.answerUuid) : r.kind === 'refused' ? r.answerUuids : [];
  const decision = refusedWithProof(refusal);
  const outcomes: EntryOutcome[] = [];
  await deps.evidence.append({ type: 'refused-proof', runId: o.runId, reason: refusal.reason, detail: refusal.detail });
  for (const answerUuid of answerUuids) {
    const outcome: EntryOutcome = {
      answerUuid,
      result: decision.result,
      reason: decision.reason,
      detail: decision.detail,
      retiredAt: null,
    };
    outcomes.push(outcome);
    await deps.evidence.append({
      type: 'decision',
      runId: o.runId,
      proofId,
      answerUuid,
      ...rest(outcome),
      dryRun: !o.execute,
      decidedAt: deps.now().toISOString(),
    });
    deps.onResult?.(outcome);
  }
  // SPEC §8: every refusal is recorded — one row for the proof (answer null), since no entry
  // was checked; the per-entry lines are in the evidence file. A dry run writes nothing.
  if (o.execute) await auditProofRefusal(o, deps, host, refusal, answerUuids.length);
  return { kind: 'refused', reason: refusal.reason, detail: refusal.detail, outcomes };
}

/** Step 2, entry by entry: FC lookup, then the local step; on a stop signal no new entry starts. */
async function retireEntries(
  p: RetireProof,
  o: RetireRunOptions,
  deps: RetireRunDeps,
  host: string,
): Promise<RetireRunResult> {
  const fc = await deps.fcDb();
  const sh = await deps.shDb();
  const outcomes: EntryOutcome[] = [];
  let stoppedBy: 'done' | 'signal' = 'done';
  for (const e of p.entries) {
    if (deps.signal.aborted) {
      stoppedBy = 'signal';
      break;
    }
    const entry = entryOf(p, e);
    const fcNow = await lookupFc(fc, entry.answerUuid, deps.now);
    const expected = expectedOf(p, e);
    const step = await settle(sh, { entry, fcNow, expected, p, o, host });
    const outcome: EntryOutcome = {
      answerUuid: entry.answerUuid,
      result: step.decision.result,
      reason: step.decision.reason,
      detail: step.decision.detail,
      retiredAt: step.retiredAt,
    };
    outcomes.push(outcome);
    await deps.evidence.append({
      type: 'decision',
      runId: o.runId,
      proofId: p.proofId,
      answerUuid: entry.answerUuid,
      schId: entry.schId,
      formUuid: entry.formUuid,
      ...rest(outcome),
      dryRun: !o.execute,
      expected,
      fc: fcNow,
      local: step.local,
      decidedAt: deps.now().toISOString(),
    });
    deps.onResult?.(outcome);
  }
  return { kind: 'done', outcomes, notRun: p.entries.length - outcomes.length, stoppedBy };
}

function rest(o: EntryOutcome) {
  return { result: o.result, reason: o.reason, detail: o.detail, retiredAt: o.retiredAt };
}

/**
 * A new run id (recorded in the audit and the evidence).
 * @example newRunId() // '3f2c…' (a UUID)
 */
export function newRunId(): string {
  return randomUUID();
}
