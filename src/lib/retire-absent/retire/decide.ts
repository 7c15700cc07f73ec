/**
 * `retire-absent --proof F`: what a run comes to, pure — its outcomes, exit code, the counts of
 * its evidence end line and its summary. The per-entry decisions are `../decide.ts`.
 */
import type { SummaryWithCounts } from '../../cli/output.js';
import { ExitCode } from '../../cli/exit.js';
import {
  type ProofRefusalReason,
  REFUSAL_REASONS,
  type RefusalReason,
  type RetireDecision,
  type RetireProof,
} from '../decide.js';

/** One entry's outcome as printed and written to the evidence. */
export interface EntryOutcome {
  readonly answerUuid: string;
  readonly result: RetireDecision['result'];
  readonly reason: RefusalReason | null;
  readonly detail: string;
  /** the SH time written as `retired_at` (RETIRED with execute), else null */
  readonly retiredAt: string | null;
}

/**
 * Whether an outcome is only counted (`alreadyRetired` in the summary), printed as no `result` line
 * (docs/output.md): the row was retired by this proof before, so nothing changed. The evidence
 * file still records every decision.
 * @example countedOnly({ result: 'ALREADY_RETIRED' }) // true
 */
export function countedOnly(r: Pick<EntryOutcome, 'result'>): boolean {
  return r.result === 'ALREADY_RETIRED';
}

export type RetireRunResult =
  | {
      readonly kind: 'refused';
      readonly reason: ProofRefusalReason;
      readonly detail: string;
      readonly outcomes: readonly EntryOutcome[];
    }
  | {
      readonly kind: 'done';
      readonly outcomes: readonly EntryOutcome[];
      readonly notRun: number;
      readonly stoppedBy: 'done' | 'signal';
    };

type Outcomes = readonly Pick<EntryOutcome, 'result' | 'reason'>[];
type RunEnd =
  | { readonly kind: 'refused'; readonly outcomes: Outcomes }
  | { readonly kind: 'done'; readonly outcomes: Outcomes; readonly notRun: number };

const count = (outcomes: Outcomes, result: EntryOutcome['result']) =>
  outcomes.filter((r) => r.result === result).length;

/**
 * The run's exit code (SPEC §2, §8): 4 when the proof is refused as a whole, 1 when any entry is
 * REFUSED or was not run, else 0.
 * @example retireExitCode({ kind: 'done', outcomes: [], notRun: 1 }) // 1
 */
export function retireExitCode(end: RunEnd): ExitCode {
  if (end.kind === 'refused') return ExitCode.SAFETY;
  return count(end.outcomes, 'REFUSED') + end.notRun > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

/**
 * The counts of the evidence end line: a dry run counts what it would retire under its own name,
 * never a count that reads as done.
 * @example retireEndCounts([], true) // { WOULD_RETIRE: 0, ALREADY_RETIRED: 0, REFUSED: 0 }
 */
export function retireEndCounts(outcomes: Outcomes, dryRun: boolean): Record<string, number> {
  const retired: Record<string, number> = dryRun
    ? { WOULD_RETIRE: count(outcomes, 'WOULD_RETIRE') }
    : { RETIRED: count(outcomes, 'RETIRED') };
  return { ...retired, ALREADY_RETIRED: count(outcomes, 'ALREADY_RETIRED'), REFUSED: count(outcomes, 'REFUSED') };
}

/** A finished run as its summary reads it: the proof it ran, the result, the evidence file. */
export interface RetireRunFacts {
  readonly result: (
    | { readonly kind: 'refused'; readonly reason: ProofRefusalReason }
    | { readonly kind: 'done'; readonly notRun: number; readonly stoppedBy: 'done' | 'signal' }
  ) & { readonly outcomes: Outcomes };
  readonly exitCode: number;
  readonly dryRun: boolean;
  readonly runId: string;
  readonly proofId: string | null;
  readonly proofDigest: string | null;
  /** the proof's entries when it could be read; otherwise the outcomes are counted */
  readonly entries: number | null;
  /** the evidence file's path */
  readonly evidence: string;
}

/**
 * The summary `retire-absent` prints: retired (or would retire), already retired, refused, not
 * run, the refusals by reason (in {@link REFUSAL_REASONS} order), how the run stopped. JSON
 * output carries `byReason`; on a terminal (`json` false) the non-zero reasons go to `counts`.
 * @example summarizeRetire({ ...facts, result: { kind: 'done', outcomes: [], notRun: 0, stoppedBy: 'done' } }, 0.1, true).summary.refused // 0
 */
export function summarizeRetire(f: RetireRunFacts, seconds: number, json: boolean): SummaryWithCounts {
  const { result } = f;
  const byReason: Record<string, number> = Object.fromEntries(REFUSAL_REASONS.map((c) => [c, 0]));
  for (const r of result.outcomes) if (r.reason) byReason[r.reason] = (byReason[r.reason] ?? 0) + 1;
  const counts = json ? undefined : Object.fromEntries(Object.entries(byReason).filter(([, n]) => n > 0));
  const summary = {
    command: 'retire-absent',
    exitCode: f.exitCode,
    dryRun: f.dryRun,
    runId: f.runId,
    proofId: f.proofId,
    proofDigest: f.proofDigest,
    ...(result.kind === 'refused' ? { proofRefused: result.reason } : {}),
    entries: f.entries ?? result.outcomes.length,
    ...(f.dryRun
      ? { wouldRetire: count(result.outcomes, 'WOULD_RETIRE') }
      : { retired: count(result.outcomes, 'RETIRED') }),
    alreadyRetired: count(result.outcomes, 'ALREADY_RETIRED'),
    refused: count(result.outcomes, 'REFUSED'),
    notRun: result.kind === 'done' ? result.notRun : 0,
    ...(counts ? {} : { byReason }),
    stoppedBy: result.kind === 'done' ? result.stoppedBy : 'refused',
    evidence: f.evidence,
    seconds,
  };
  return { summary, counts };
}

export type Expected = ReturnType<typeof expectedOf>;

/** The expected values of an entry, as the evidence and the audit record them. */
export function expectedOf(p: RetireProof, e: RetireProof['entries'][number]) {
  return {
    proofId: p.proofId,
    proofDigest: p.digest,
    taskId: p.taskId,
    taskStart: p.taskStart,
    formUuid: p.formUuid,
    revision: e.expectedRevision,
    contentHash: e.expectedHash,
    isDeleted: e.expectedIsDeleted,
    createTime: e.localCreateTime,
    fcAbsentCheckedAt: e.fcAbsentCheckedAt,
  };
}
