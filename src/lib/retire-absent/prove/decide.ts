/**
 * `retire-absent prove`: what a run comes to, pure — its exit code and its summary. Which
 * candidate goes into the proof is `../decide.ts` ({@link candidateExclusion}).
 */
import type { SummaryWithCounts } from '../../cli/output.js';
import { ExitCode } from '../../cli/exit.js';
import { EXCLUSION_REASONS } from '../decide.js';
import type { RetireProof } from '../decide.js';

/** How a prove run ended (the runner's result, as far as the summary reads it). */
export type ProveEnd =
  | { readonly kind: 'written'; readonly proof: RetireProof; readonly out: string; readonly candidates: number }
  | { readonly kind: 'no-candidates' }
  | { readonly kind: 'stopped'; readonly checked: number; readonly candidates: number };

/**
 * The run's exit code (SPEC §2, §8): 0 when the proof holds every candidate, or there were none
 * (no proof written); 1 when some were left out, or a stop signal ended it (no proof written).
 * @example proveExitCode({ kind: 'no-candidates' }) // 0
 */
export function proveExitCode(end: ProveEnd): ExitCode {
  if (end.kind === 'no-candidates') return ExitCode.OK;
  if (end.kind === 'stopped') return ExitCode.ITEMS_FAILED;
  return end.proof.excluded.length > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

/**
 * The summary `retire-absent prove` prints: what was written (the proof's identity, entries and
 * digest, the manifest it rests on), the exclusions by reason (in {@link EXCLUSION_REASONS}
 * order; on a terminal the non-zero ones go to `counts`), or why nothing was written.
 * @example summarizeProve({ kind: 'no-candidates' }, 0.1, true).summary.written // false
 */
export function summarizeProve(end: ProveEnd, seconds: number, json: boolean): SummaryWithCounts {
  const command = 'retire-absent prove';
  const exitCode = proveExitCode(end);
  if (end.kind === 'no-candidates')
    return {
      summary: {
        command,
        exitCode,
        written: false,
        candidates: 0,
        note: 'no retire candidates: no proof written',
        seconds,
      },
      counts: undefined,
    };
  if (end.kind === 'stopped')
    return {
      summary: {
        command,
        exitCode,
        written: false,
        stoppedBy: 'signal',
        candidates: end.candidates,
        checked: end.checked,
        seconds,
      },
      counts: undefined,
    };
  const p = end.proof;
  const byReason: Record<string, number> = Object.fromEntries(EXCLUSION_REASONS.map((r) => [r, 0]));
  for (const x of p.excluded) byReason[x.reason] = (byReason[x.reason] ?? 0) + 1;
  const counts = json ? undefined : Object.fromEntries(Object.entries(byReason).filter(([, n]) => n > 0));
  const summary = {
    command,
    exitCode,
    written: true,
    out: end.out,
    proofId: p.proofId,
    taskId: p.taskId,
    taskStart: p.taskStart,
    schId: p.schId,
    formUuid: p.formUuid,
    digest: p.digest,
    candidates: end.candidates,
    entries: p.entries.length,
    excluded: p.excluded.length,
    ...(counts ? {} : { byReason }),
    fcManifestRows: p.fcManifest.rows,
    fcManifestSha256: p.fcManifest.sha256,
    seconds,
  };
  return { summary, counts };
}
