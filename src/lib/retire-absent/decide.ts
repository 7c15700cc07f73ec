/**
 * `retire-absent`: the decisions both verbs share, pure (SPEC §8, seed 000 §8/§8.1
 * `retireAbsent(AuthoritativeAbsenceProof)`): the decision for one proof entry, and the retire proof
 * format — its types, digest, file text and strict parser. Reading the files is `input.ts`;
 * making a proof is `prove/run.ts`; applying one is `retire/run.ts`, whose run-level decisions
 * (exit code, summary) are `retire/decide.ts`.
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
import { normalizeDateTime } from '../time/datetime.js';
import { basename, dirname, join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import type { RetireCandidateLine } from '../reconcile/diff/types.js';
import { UsageError } from '../cli/exit.js';
import { canonicalize } from '../canon/index.js';
import { compareRevisions } from '../manifest/row.js';
import { idProblem, isRevisionText, isSchoolId, isStoredUuid, isUuid } from '../ids.js';
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

// ---- the retire proof format ----

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
