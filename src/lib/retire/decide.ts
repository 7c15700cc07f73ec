/**
 * `retire-absent`: the decisions, pure (SPEC §8, seed 000 §8 `retireAbsent(AuthoritativeAbsenceProof)`).
 * The runner (`retire/run.ts`) collects the facts — the answer at FC right now, the local projection
 * row right now — and applies the write {@link decideRetire} asks for.
 *
 * Layout of `lib/retire/`: the domain has two verbs, one folder each with the same roles —
 * `prove/{run,decide}.ts` (`retire-absent prove`) and `retire/{run,decide}.ts` (`retire-absent
 * --proof F`): `run.ts` the orchestrator, `decide.ts` what a run comes to (exit code, summary).
 * What both verbs share stays at this level: this file (the per-entry decisions), `proof.ts` (the
 * proof format and its strict parser), `input.ts` (reading the proof, candidates and `run.json`
 * files) and `sql.ts` (the statements).
 */
import { compareRevisions } from '../manifest/row.js';
import type { RetireCandidateLine } from '../reconcile/diff/types.js';

/**
 * Results of one proof entry. `WOULD_RETIRE` is what a dry run reports where an executed run
 * would retire: a dry run never prints `RETIRED`, so its output cannot be read as done.
 */
export const RETIRE_RESULTS = ['RETIRED', 'WOULD_RETIRE', 'ALREADY_RETIRED', 'REFUSED'] as const;
export type RetireResult = (typeof RETIRE_RESULTS)[number];

/** Whether a run writes (`--execute`) or only reports what it would do. */
export type RunMode = 'execute' | 'dry-run';

/**
 * Why a whole proof is refused, in the order the checks run: its digest does not match
 * (`PROOF_DIGEST`); the digest matches but a rule of the format is broken (`PROOF_INVALID`); too
 * old or made in the future (`PROOF_EXPIRED`); made against another FC database (`FC_DATABASE`)
 * — these four by {@link decideProof}, from the file and the configuration —; then its id already
 * recorded in `fc_reconcile_audit` by a proof with another digest (`PROOF_ID_REUSED`,
 * {@link proofIdRefusal}). Each entry of such a proof is refused with the proof's reason.
 */
export const PROOF_REFUSAL_REASONS = [
  'PROOF_DIGEST',
  'PROOF_INVALID',
  'PROOF_EXPIRED',
  'FC_DATABASE',
  'PROOF_ID_REUSED',
] as const;
export type ProofRefusalReason = (typeof PROOF_REFUSAL_REASONS)[number];

/**
 * Why an entry was refused — the closed set, in the order the checks run: the proof's own
 * reasons ({@link PROOF_REFUSAL_REASONS}, every entry at once, exit 4), then those
 * {@link decideRetire} decides per entry.
 */
export const REFUSAL_REASONS = [
  ...PROOF_REFUSAL_REASONS,
  'PRESENT_AT_FC',
  'LOCAL_MISSING',
  'RETIRED_BY_OTHER_PROOF',
  'CREATE_TIME_NULL',
  'CREATED_AFTER_TASK_START',
  'LOCAL_CHANGED',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/**
 * One proof entry with the proof's school and form: what the local row is expected to be — the
 * candidate's values (`expectedRevision` decimal text, BIGINT exact; `localCreateTime` the local
 * `create_time` when the candidate was listed, `yyyy-MM-dd HH:mm:ss`).
 */
export interface RetireEntry extends Omit<RetireCandidateLine, 'category' | 'taskStart'> {
  /** the proof's id: a row retired under another one is not this proof's to vouch for */
  readonly proofId: string;
  /**
   * the proof's digest: a proof is its id AND its digest — two proofs may carry the same id
   * (`--proof-id`), and a retirement made by one is not the other's
   */
  readonly proofDigest: string;
}

/** An FC `answer` row found by the fresh lookup (no values, no database id). */
export interface FcAnswerSeen {
  readonly answerUuid: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly revision: string;
  readonly isDeleted: boolean;
}

/** What a fresh FC lookup by answer uuid saw, and when (ISO 8601 UTC, taken just before the query). */
export type FcNow =
  | { readonly present: false; readonly checkedAt: string }
  | { readonly present: true; readonly checkedAt: string; readonly row: FcAnswerSeen };

/** The local `fc_answer_projection` row of `(answer_uuid, sch_id)` as read now. */
export interface LocalNow {
  readonly schId: string;
  readonly formUuid: string;
  readonly revision: string;
  readonly contentHash: string;
  readonly isDeleted: boolean;
  /** `yyyy-MM-dd HH:mm:ss` or null */
  readonly createTime: string | null;
  readonly retiredAt: string | null;
  readonly retireProofId: string | null;
  /**
   * The digest of the proof that made this retirement, as the RETIRED `fc_reconcile_audit` row of
   * it records (`expected_json.proofDigest`) — the newest RETIRED row of the answer, when its proof
   * id is `retireProofId` and its `observed_json.retiredAt` is `retiredAt`; null when the row is
   * not retired or no such audit row records it (e.g. a retirement made or changed by hand).
   */
  readonly retireProofDigest: string | null;
}

/** The decision for one entry: retire it (or, in a dry run, would), it is retired already, or refused with a reason. */
export type RetireDecision =
  | { readonly result: 'RETIRED' | 'WOULD_RETIRE'; readonly reason: null; readonly detail: string }
  | { readonly result: 'ALREADY_RETIRED'; readonly reason: null; readonly detail: string }
  | { readonly result: 'REFUSED'; readonly reason: RefusalReason; readonly detail: string };

/** A decision of an executed run: never a dry run's `WOULD_RETIRE`. */
export type ExecutedRetireDecision =
  | Exclude<RetireDecision, { result: 'RETIRED' | 'WOULD_RETIRE' }>
  | { readonly result: 'RETIRED'; readonly reason: null; readonly detail: string };

const refused = (reason: RefusalReason, detail: string): Extract<RetireDecision, { result: 'REFUSED' }> => ({
  result: 'REFUSED',
  reason,
  detail,
});

/**
 * Decides one entry, checking in this order:
 * 1. the answer is at FC now (any school or form: its uuid is unique at FC) → `REFUSED PRESENT_AT_FC`
 *    — before the local row, so a retired row whose answer came back is flagged, not hidden;
 * 2. no local row → `REFUSED LOCAL_MISSING`;
 * 3. the row is retired: by this proof → `ALREADY_RETIRED`, nothing to write (a re-run is
 *    idempotent); by another proof or none recorded → `REFUSED RETIRED_BY_OTHER_PROOF` (this
 *    proof did not make that retirement and cannot vouch for it). "This proof" is its id AND its
 *    digest: `retire_proof_id` is this proof's id and the RETIRED audit row of the retirement
 *    records this proof's digest ({@link LocalNow.retireProofDigest}). The same id with another
 *    digest recorded, or none, is another proof (`--proof-id` can be given twice);
 * 4. local createTime null → `REFUSED CREATE_TIME_NULL`; after the task start →
 *    `REFUSED CREATED_AFTER_TASK_START` (seed 000 §8.1: never read as "absent at FC");
 * 5. form, revision, hash, isDeleted or createTime not as the proof expects → `REFUSED LOCAL_CHANGED`;
 * 6. otherwise → `RETIRED` (the caller marks the row, conditional on these same values), or
 *    `WOULD_RETIRE` in a dry run.
 * Times are `yyyy-MM-dd HH:mm:ss` in the SH database's clock, compared as text.
 * @example decideRetire(entry, { present: false, checkedAt }, local, '2026-11-30 01:00:00').result // 'RETIRED'
 */
export function decideRetire(
  entry: RetireEntry,
  fcNow: FcNow,
  localNow: LocalNow | null,
  taskStart: string,
  mode?: 'execute',
): ExecutedRetireDecision;
export function decideRetire(
  entry: RetireEntry,
  fcNow: FcNow,
  localNow: LocalNow | null,
  taskStart: string,
  mode: RunMode,
): RetireDecision;
export function decideRetire(
  entry: RetireEntry,
  fcNow: FcNow,
  localNow: LocalNow | null,
  taskStart: string,
  mode: RunMode = 'execute',
): RetireDecision {
  if (fcNow.present) {
    const r = fcNow.row;
    return refused(
      'PRESENT_AT_FC',
      `FC has answer ${entry.answerUuid}${elsewhere(r, entry)} again (${fcState(r)}, checked ${fcNow.checkedAt})`,
    );
  }
  if (localNow === null)
    return refused('LOCAL_MISSING', `no projection row for answer ${entry.answerUuid} in school ${entry.schId}`);
  if (localNow.retiredAt !== null) {
    if (localNow.retireProofId === entry.proofId) {
      // the same id is not yet the same proof: the digest recorded when it retired must be this one's
      if (localNow.retireProofDigest === entry.proofDigest)
        return {
          result: 'ALREADY_RETIRED',
          reason: null,
          detail: `retired at ${localNow.retiredAt} by this proof (${entry.proofId}); nothing written`,
        };
      if (localNow.retireProofDigest === null) {
        return refused(
          'RETIRED_BY_OTHER_PROOF',
          `retired at ${localNow.retiredAt} under this proof's id ${entry.proofId}, but no RETIRED audit row of this retirement records this proof's digest (${short(entry.proofDigest)}): a person decides; nothing written`,
        );
      }
      return refused(
        'RETIRED_BY_OTHER_PROOF',
        `retired at ${localNow.retiredAt} by another proof with the same id ${entry.proofId} (digest ${short(localNow.retireProofDigest)}, this proof's ${short(entry.proofDigest)}): a person decides; nothing written`,
      );
    }
    const by = localNow.retireProofId === null ? 'with no proof id recorded' : `by proof ${localNow.retireProofId}`;
    return refused(
      'RETIRED_BY_OTHER_PROOF',
      `retired at ${localNow.retiredAt} ${by}, not by this proof (${entry.proofId}): a person decides; nothing written`,
    );
  }
  const late = createTimeRefusal(localNow.createTime, taskStart);
  if (late)
    return refused(
      late.reason,
      late.reason === 'CREATE_TIME_NULL'
        ? `${late.detail}: the row cannot be shown to predate the task start`
        : late.detail,
    );
  const changed: string[] = [];
  if (localNow.formUuid !== entry.formUuid) changed.push(`form ${localNow.formUuid} (expected ${entry.formUuid})`);
  if (compareRevisions(localNow.revision, entry.expectedRevision) !== 0)
    changed.push(`revision ${localNow.revision} (expected ${entry.expectedRevision})`);
  if (localNow.contentHash !== entry.expectedHash)
    changed.push(`contentHash ${localNow.contentHash} (expected ${entry.expectedHash})`);
  if (localNow.isDeleted !== entry.expectedIsDeleted)
    changed.push(`isDeleted ${localNow.isDeleted} (expected ${entry.expectedIsDeleted})`);
  if (localNow.createTime !== entry.localCreateTime)
    changed.push(`createTime ${localNow.createTime} (expected ${entry.localCreateTime})`);
  if (changed.length > 0)
    return refused('LOCAL_CHANGED', `the local row changed since the proof: ${changed.join(', ')}`);
  const facts = `absent at FC (checked ${fcNow.checkedAt}), local row as expected`;
  return mode === 'execute'
    ? { result: 'RETIRED', reason: null, detail: facts }
    : { result: 'WOULD_RETIRE', reason: null, detail: `would retire: ${facts}` };
}

/**
 * Why `retire-absent prove` leaves a candidate out of a proof, in the order checked: at FC now
 * (any school or form), local createTime null, or after the task start.
 */
export const EXCLUSION_REASONS = ['PRESENT_AT_FC', 'CREATE_TIME_NULL', 'CREATED_AFTER_TASK_START'] as const;
export type ExclusionReason = (typeof EXCLUSION_REASONS)[number];

/**
 * The createTime rule of seed 000 §8.1, shared by {@link candidateExclusion} and
 * {@link decideRetire}: a row whose createTime is null or after the task start (both
 * `yyyy-MM-dd HH:mm:ss`, compared as text) is never read as "absent at FC". Null when it passes.
 * @example createTimeRefusal('2026-11-30 02:00:00', '2026-11-30 01:00:00')?.reason // 'CREATED_AFTER_TASK_START'
 */
export function createTimeRefusal(
  createTime: string | null,
  taskStart: string,
): { readonly reason: 'CREATE_TIME_NULL' | 'CREATED_AFTER_TASK_START'; readonly detail: string } | null {
  if (createTime === null) return { reason: 'CREATE_TIME_NULL', detail: 'the local createTime is null' };
  if (createTime > taskStart)
    return { reason: 'CREATED_AFTER_TASK_START', detail: `created ${createTime}, after the task start ${taskStart}` };
  return null;
}

/** What {@link candidateExclusion} needs of a retire candidate. */
export interface CandidateFacts {
  readonly schId: string;
  readonly formUuid: string;
  /** the local createTime the candidates file recorded */
  readonly localCreateTime: string | null;
}

/**
 * Whether a retire candidate may be proven absent: the same checks, in the same order, as steps 1
 * and 4 of {@link decideRetire} (which checks the local row in between, and reads the createTime
 * of the row now, not the one recorded with the candidate). `atFc`: the row a fresh FC lookup by
 * answer uuid found, or null. The reason to leave it out, or null to put it in the proof.
 * @example candidateExclusion({ schId: '5', formUuid, localCreateTime: null }, null, '2026-11-30 01:00:00')?.reason // 'CREATE_TIME_NULL'
 */
export function candidateExclusion(
  c: CandidateFacts,
  atFc: FcAnswerSeen | null,
  taskStart: string,
): { readonly reason: ExclusionReason; readonly detail: string } | null {
  if (atFc) return { reason: 'PRESENT_AT_FC', detail: `FC has it now${elsewhere(atFc, c)} (${fcState(atFc)})` };
  return createTimeRefusal(c.localCreateTime, taskStart);
}

/** Where an FC row is, in a message: nothing when under the expected school and form. */
const elsewhere = (r: FcAnswerSeen, expected: { readonly schId: string; readonly formUuid: string }) =>
  r.schId === expected.schId && r.formUuid === expected.formUuid ? '' : ` under school ${r.schId} form ${r.formUuid}`;

/** An FC row's revision and tombstone, in a message. */
const fcState = (r: FcAnswerSeen) => `revision ${r.revision}${r.isDeleted ? ', tombstone' : ''}`;

/** A digest in a message: its first 12 hex digits. */
const short = (digest: string) => `${digest.slice(0, 12)}…`;

/** What {@link decideProof} needs of a proof: why reading it refused it, or the facts to check. */
export type ProofFacts =
  | { readonly kind: 'refused'; readonly reason: 'PROOF_DIGEST' | 'PROOF_INVALID'; readonly detail: string }
  | {
      readonly kind: 'valid';
      readonly createdAt: string;
      readonly manifestCompletedAt: string;
      readonly fcDatabase: string;
    };

/** A proof refused as a whole. */
export interface ProofRefusal {
  readonly reason: ProofRefusalReason;
  readonly detail: string;
}

/**
 * The checks of a proof as a whole, in order: what reading found (digest, format rules), its age
 * ({@link proofAgeRefusal}), the FC database it was made against (`configuredFcDatabase`,
 * `host:port/db`). The refusal, or null when the entries may be decided.
 * @example decideProof({ kind: 'valid', createdAt, manifestCompletedAt, fcDatabase: 'db:3306/fc' }, now, 86400, 'other:3306/fc')?.reason // 'FC_DATABASE'
 */
export function decideProof(
  facts: ProofFacts,
  now: Date,
  maxAgeSeconds: number,
  configuredFcDatabase: string,
): ProofRefusal | null {
  if (facts.kind === 'refused') return { reason: facts.reason, detail: facts.detail };
  const age = proofAgeRefusal(facts.createdAt, facts.manifestCompletedAt, now, maxAgeSeconds);
  if (age) return age;
  if (facts.fcDatabase !== configuredFcDatabase) {
    return {
      reason: 'FC_DATABASE',
      detail: `the proof was made against the FC database ${facts.fcDatabase}, the configured one is ${configuredFcDatabase}`,
    };
  }
  return null;
}

/**
 * The last check of a proof as a whole: a proof is its id AND its digest, so its id must not be
 * one another proof already used. `recordedDigests` are the digests recorded with this proof id in
 * the per-entry `fc_reconcile_audit` rows (`expected_json.proofDigest` of rows with an answer:
 * only a proof that passed the checks as a whole has its entries decided, so a refused proof —
 * a tampered file claiming the id, or a reuse refused here — never takes an id away). Any digest
 * other than this proof's → `PROOF_ID_REUSED`; null when the id is unused or used by this proof
 * only (a re-run).
 * @example proofIdRefusal('rp-1', 'c'.repeat(64), ['d'.repeat(64)])?.reason // 'PROOF_ID_REUSED'
 */
export function proofIdRefusal(
  proofId: string,
  digest: string,
  recordedDigests: readonly (string | null)[],
): ProofRefusal | null {
  const other = recordedDigests.find((d) => d !== digest);
  if (other === undefined) return null;
  const theirs = other === null ? 'with no digest recorded' : `with digest ${short(other)}`;
  return {
    reason: 'PROOF_ID_REUSED',
    detail: `proof id ${proofId} was already used by another proof (${theirs}; this proof's ${short(digest)}): a proof is its id and its digest — make a new proof with another --proof-id`,
  };
}

/**
 * The decision for each entry of a proof refused as a whole: refused with the proof's reason —
 * what was checked is the proof, never the entry (no FC lookup, no local read was made).
 * @example refusedWithProof({ reason: 'PROOF_INVALID', detail: 'x' }).reason // 'PROOF_INVALID'
 */
export function refusedWithProof(refusal: ProofRefusal): RetireDecision {
  return refused(
    refusal.reason,
    `the proof is refused (${refusal.reason}): ${refusal.detail}; this entry was not checked`,
  );
}

/** Clock skew tolerated before a proof counts as made in the future. */
export const FUTURE_SKEW_SECONDS = 300;

/**
 * The proof-age check: a proof is as old as its oldest fact — the earlier of its creation and its
 * FC manifest's completion (both ISO 8601 times of fcctl's clocks). Older than `maxAgeSeconds`, or
 * made more than {@link FUTURE_SKEW_SECONDS} in the future, or with an unreadable time → refused
 * `PROOF_EXPIRED`; null when fresh enough.
 * @example proofAgeRefusal('2026-11-29T01:00:00Z', '2026-11-29T00:59:00Z', new Date('2026-11-30T02:00:00Z'), 86400)?.reason // 'PROOF_EXPIRED'
 */
export function proofAgeRefusal(
  createdAt: string,
  manifestCompletedAt: string,
  now: Date,
  maxAgeSeconds: number,
): { reason: 'PROOF_EXPIRED'; detail: string } | null {
  const created = Date.parse(createdAt);
  const completed = Date.parse(manifestCompletedAt);
  if (!Number.isFinite(created) || !Number.isFinite(completed))
    return { reason: 'PROOF_EXPIRED', detail: "the proof's times cannot be read, so its age is unknown" };
  const oldest = Math.min(created, completed);
  const ageSeconds = Math.floor((now.getTime() - oldest) / 1000);
  if (created - now.getTime() > FUTURE_SKEW_SECONDS * 1000)
    return {
      reason: 'PROOF_EXPIRED',
      detail: `the proof was made at ${createdAt}, in the future of this clock (${now.toISOString()})`,
    };
  if (ageSeconds > maxAgeSeconds) {
    const from = oldest === created ? `made ${createdAt}` : `its FC manifest completed ${manifestCompletedAt}`;
    return {
      reason: 'PROOF_EXPIRED',
      detail: `the proof is ${formatSeconds(ageSeconds)} old (${from}), over --max-proof-age ${formatSeconds(maxAgeSeconds)}`,
    };
  }
  return null;
}

/** `90061` → `1d1h1m1s` (for messages). */
export function formatSeconds(total: number): string {
  if (total <= 0) return '0s';
  const parts: string[] = [];
  let rest = total;
  for (const [unit, n] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= n) {
      parts.push(`${Math.floor(rest / n)}${unit}`);
      rest %= n;
    }
  }
  return parts.join('');
}

/**
 * True when the entry ends refused (the run exits 1).
 * @example isRefused({ result: 'ALREADY_RETIRED', reason: null, detail: '' }) // false
 */
export function isRefused(d: RetireDecision): boolean {
  return d.result === 'REFUSED';
}
