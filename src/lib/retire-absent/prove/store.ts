/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import { SafetyError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import { compareKeys } from '../../manifest/row.js';
import {
  candidateExclusion,
  type ProofEntry,
  type ProofExclusion,
  proofIdRefusal,
  type RetireProof,
} from '../decide.js';
import type { Candidate } from '../input.js';
import { fcSeen, type FcLookupRow, type ProofIdDigestDbRow, retireSql } from '../sql.js';
import type { ProveDeps, ProveResult } from './types.js';

/** Answers per FC lookup statement. */
const FC_LOOKUP_BATCH = 500;

/**
 * Step 4: every candidate looked up at FC by answer uuid, {@link FC_LOOKUP_BATCH} at a time (the
 * time taken just before each query is recorded); the proof's entries (sorted by key) and the
 * candidates left out, or `stopped` when the signal fired between batches.
 */
export async function lookUpAtFc(
  db: Db,
  candidates: readonly Candidate[],
  taskStart: string,
  deps: ProveDeps,
): Promise<
  | { readonly kind: 'looked'; readonly entries: ProofEntry[]; readonly excluded: ProofExclusion[] }
  | Extract<ProveResult, { kind: 'stopped' }>
> {
  const entries: ProofEntry[] = [];
  const excluded: ProofExclusion[] = [];
  for (let i = 0; i < candidates.length; i += FC_LOOKUP_BATCH) {
    if (deps.signal?.aborted)
      return {
        kind: 'stopped',
        reason: String((deps.signal.reason as Error | undefined)?.message ?? 'signal'),
        checked: i,
        candidates: candidates.length,
      };
    const batch = candidates.slice(i, i + FC_LOOKUP_BATCH);
    const checkedAt = deps.now().toISOString();
    const q = retireSql.fcAnswers(batch.map((c) => c.answerUuid));
    const found = new Map((await db.query<FcLookupRow>(q.sql, q.params)).map((r) => [r.answer_uuid, fcSeen(r)]));
    for (const c of batch) {
      const out = candidateExclusion(c, found.get(c.answerUuid) ?? null, taskStart);
      if (out) {
        const x: ProofExclusion = {
          answerUuid: c.answerUuid,
          reason: out.reason,
          detail: out.detail,
          fcCheckedAt: checkedAt,
        };
        excluded.push(x);
        deps.onExcluded?.(x);
      } else {
        entries.push({
          answerUuid: c.answerUuid,
          expectedRevision: c.expectedRevision,
          expectedHash: c.expectedHash,
          expectedIsDeleted: c.expectedIsDeleted,
          localCreateTime: c.localCreateTime!, // not null: candidateExclusion leaves those out
          fcAbsentCheckedAt: checkedAt,
        });
      }
    }
  }
  entries.sort((a, b) => compareKeys(a.answerUuid, b.answerUuid));
  return { kind: 'looked', entries, excluded };
}

/** Step 5: the proof's id must not be one a proof with another digest recorded in `fc_reconcile_audit` (exit 4, no file). */
export async function refuseReusedId(proof: RetireProof, shDb: () => Promise<Db>): Promise<void> {
  const q = retireSql.proofIdDigests(proof.proofId);
  const recorded = (await (await shDb()).query<ProofIdDigestDbRow>(q.sql, q.params)).map((d) => d.proof_digest);
  const reused = proofIdRefusal(proof.proofId, proof.digest, recorded);
  if (reused) throw new SafetyError(`${reused.detail}; no proof written`);
}
