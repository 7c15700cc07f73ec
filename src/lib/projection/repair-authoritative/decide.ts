/**
 * `projection repair-authoritative`: the decision, pure (seed 000 §8.1 `repairAuthoritative`,
 * SPEC §6). The runner (`run.ts`) collects the facts — the authoritative snapshot (built from
 * the FC answer row or taken from an envelope file), the grant read fresh from FC, the local
 * projection row read just now — and applies the write this returns.
 */
import type { SummaryWithCounts } from '../../cli/output.js';
import { createHash } from 'node:crypto';
import { ExitCode } from '../../cli/exit.js';
import type { GrantRow } from '../../deliveries/types.js';

/** The four stable results of seed 000 §8.1, in the order they are documented. */
export const REPAIR_RESULTS = ['APPLIED', 'LOCAL_CHANGED', 'LOCAL_AHEAD', 'DEFERRED'] as const;
export type RepairResult = (typeof REPAIR_RESULTS)[number];

/**
 * The results a dry run reports: `WOULD_APPLY` where an executed run answers `APPLIED`, so a dry
 * run's output never reads as done; the refusals are the same (they write nothing either way).
 */
export const DRY_RUN_RESULTS = ['WOULD_APPLY', 'LOCAL_CHANGED', 'LOCAL_AHEAD', 'DEFERRED'] as const;
/** A decision's result, in either mode. */
export type DecisionResult = RepairResult | 'WOULD_APPLY';

/** Whether a run writes (`--execute`) or only reports what it would do. */
export type RunMode = 'execute' | 'dry-run';

/**
 * The results a run of that mode reports, in order.
 * @example resultsFor('dry-run')[0] // 'WOULD_APPLY'
 */
export function resultsFor(mode: RunMode): readonly DecisionResult[] {
  return mode === 'execute' ? REPAIR_RESULTS : DRY_RUN_RESULTS;
}

/**
 * Why a decision came out as it did: a closed set of codes, each reason text starts with one.
 *
 * | code | result | when |
 * |---|---|---|
 * | `INSERTED` | APPLIED | local row missing, as expected: inserted `UNLINKED` |
 * | `STALE_REPAIRED` | APPLIED | local revision lower than FC's: overwritten |
 * | `HASH_CONFLICT_REPAIRED` | APPLIED | same revision, another hash or isDeleted: overwritten (only here, never by MQ) |
 * | `ALREADY_CURRENT` | APPLIED | local already holds FC's revision, hash and isDeleted: nothing written |
 * | `EXPECTED_MISMATCH` | LOCAL_CHANGED | the local triple is not the expected one (a consumer wrote, or a race on the write) |
 * | `LOCAL_REVISION_AHEAD` | LOCAL_AHEAD | local revision higher than FC's: never downgraded |
 * | `ANSWER_NOT_AT_FC` | DEFERRED | no FC answer with this uuid |
 * | `SCHOOL_MISMATCH` | DEFERRED | the FC answer belongs to another school |
 * | `SNAPSHOT_INVALID` | DEFERRED | the FC row cannot form an fc.canon.v1 snapshot |
 * | `GRANT_MISSING` `GRANT_REVOKED` `GRANT_NOT_READABLE` `GRANT_MISMATCH` `GRANT_VERSION_CHANGED` | DEFERRED | the fresh grant does not authorize this consumer and school |
 * | `FORM_MISMATCH` | DEFERRED | the local row belongs to another form than FC's answer |
 * | `LOCAL_RETIRED` | DEFERRED | the local row is retired (`retire-absent`): a person decides |
 * | `ENVELOPE_NOT_CURRENT` | DEFERRED | `--envelope`: FC's answer now has another form, form version, revision, hash or isDeleted |
 * | `WOULD_INSERT` `WOULD_REPAIR_STALE` `WOULD_REPAIR_HASH_CONFLICT` | WOULD_APPLY | a dry run's `INSERTED`, `STALE_REPAIRED`, `HASH_CONFLICT_REPAIRED`: nothing was written |
 *
 * @example REASON_CODES.includes('ALREADY_CURRENT') // true
 */
export const REASON_CODES = [
  'INSERTED',
  'STALE_REPAIRED',
  'HASH_CONFLICT_REPAIRED',
  'ALREADY_CURRENT',
  'EXPECTED_MISMATCH',
  'LOCAL_REVISION_AHEAD',
  'ANSWER_NOT_AT_FC',
  'SCHOOL_MISMATCH',
  'SNAPSHOT_INVALID',
  'GRANT_MISSING',
  'GRANT_REVOKED',
  'GRANT_NOT_READABLE',
  'GRANT_MISMATCH',
  'GRANT_VERSION_CHANGED',
  'FORM_MISMATCH',
  'LOCAL_RETIRED',
  'ENVELOPE_NOT_CURRENT',
  'WOULD_INSERT',
  'WOULD_REPAIR_STALE',
  'WOULD_REPAIR_HASH_CONFLICT',
] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

/** Results that leave the row unrepaired and count as refused: the run exits 1 (SPEC §2). */
export const REFUSED_RESULTS: ReadonlySet<DecisionResult> = new Set(['LOCAL_CHANGED', 'LOCAL_AHEAD', 'DEFERRED']);

/**
 * The local triple (seed 000 §8.1): revision as canonical decimal text, content hash, isDeleted.
 * "Observed missing" is all three null, never a mix.
 * @example const missing: Triple = { revision: null, hash: null, isDeleted: null }
 */
export type Triple =
  | { readonly revision: string; readonly hash: string; readonly isDeleted: boolean }
  | { readonly revision: null; readonly hash: null; readonly isDeleted: null };

export const MISSING: Triple = { revision: null, hash: null, isDeleted: null };

/** The authoritative snapshot and everything the write needs, as built or read. */
export interface AuthoritativeSnapshot {
  readonly source: 'fc' | 'envelope';
  /** the repair envelope's event id (≤ 36 characters) */
  readonly eventId: string;
  readonly answerUuid: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly formVersion: string;
  readonly revision: string;
  readonly contentHash: string;
  readonly isDeleted: boolean;
  /** the grant version the snapshot was built (or sent) under */
  readonly grantVersion: string;
  /** canonical fc.canon.v1 text, what `snapshot_json` gets */
  readonly snapshotJson: string;
}

/** A `form_consumer_grant` row read fresh, as mysql2 returns it (BIGINTs as strings): the row the relay reads too. */
export type FreshGrant = GrantRow;

/**
 * What the repair works from: either an authoritative snapshot with the grant read fresh for it
 * (null when there is none), or why no authoritative snapshot could be established.
 */
export type Authoritative =
  | {
      readonly kind: 'ready';
      readonly snapshot: AuthoritativeSnapshot;
      readonly consumerAppKey: string;
      readonly grant: FreshGrant | null;
    }
  | {
      readonly kind: 'unavailable';
      readonly code:
        | 'ANSWER_NOT_AT_FC'
        | 'SCHOOL_MISMATCH'
        | 'SNAPSHOT_INVALID'
        | 'GRANT_MISSING'
        | 'ENVELOPE_NOT_CURRENT';
      readonly detail: string;
    };

/**
 * An `--envelope`'s snapshot is authoritative only while it is FC's current answer (seed 000 §8.1:
 * read the current snapshot from FC and verify form, answer, version): same form, form version,
 * revision, hash and isDeleted as FC's row read now, whose fresh grant it then goes with. An old
 * envelope (another hash at the same revision, say) or one FC no longer has is never written.
 * The form version is compared on its own: the content hash does not cover it, yet it is written
 * to `form_version`.
 * @example envelopeAgainstFc(envelope, await readFromFc(…)).kind // 'ready' | 'unavailable'
 */
export function envelopeAgainstFc(envelope: AuthoritativeSnapshot, fc: Authoritative): Authoritative {
  if (fc.kind === 'unavailable') return fc;
  const now = fc.snapshot;
  const differs: string[] = [];
  if (now.formUuid !== envelope.formUuid) differs.push(`form ${now.formUuid}`);
  if (BigInt(now.formVersion) !== BigInt(envelope.formVersion))
    differs.push(`form version ${now.formVersion} (the envelope ${envelope.formVersion})`);
  if (now.revision !== envelope.revision) differs.push(`revision ${now.revision}`);
  if (now.contentHash !== envelope.contentHash) differs.push(`hash ${now.contentHash.slice(0, 12)}…`);
  if (now.isDeleted !== envelope.isDeleted) differs.push(`isDeleted ${now.isDeleted ? 1 : 0}`);
  if (differs.length > 0) {
    return {
      kind: 'unavailable',
      code: 'ENVELOPE_NOT_CURRENT',
      detail: `the envelope is not FC's current answer (FC now has ${differs.join(', ')}); nothing written`,
    };
  }
  return { kind: 'ready', snapshot: envelope, consumerAppKey: fc.consumerAppKey, grant: fc.grant };
}

/** The local projection row as read (no snapshot body, no business columns). */
export interface ObservedLocal {
  readonly answerUuid: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly formVersion: string;
  readonly revision: string;
  readonly hash: string;
  readonly isDeleted: boolean;
  readonly linkState: string;
  readonly conflictFlag: boolean;
  readonly projectionVersion: string;
  readonly retiredAt: string | null;
  readonly retireProofId: string | null;
}

/** What a decision writes to `fc_answer_projection`. */
export type RepairWrite =
  | { readonly kind: 'update'; readonly expected: Extract<Triple, { revision: string }> }
  | { readonly kind: 'insert' };

export interface RepairDecision {
  readonly result: DecisionResult;
  readonly code: ReasonCode;
  /** `CODE: detail`, one line */
  readonly reason: string;
  readonly write?: RepairWrite;
}

/**
 * The triple of a local row (or the missing triple).
 * @example tripleOf(null) // MISSING
 */
export function tripleOf(local: Pick<ObservedLocal, 'revision' | 'hash' | 'isDeleted'> | null): Triple {
  return local === null ? MISSING : { revision: local.revision, hash: local.hash, isDeleted: local.isDeleted };
}

/**
 * Equal triples: the same revision (as numbers), hash and isDeleted; missing equals missing.
 * @example sameTriple(MISSING, { revision: null, hash: null, isDeleted: null }) // true
 */
export function sameTriple(a: Triple, b: Triple): boolean {
  if (a.revision === null || b.revision === null) return a.revision === b.revision;
  return BigInt(a.revision) === BigInt(b.revision) && a.hash === b.hash && a.isDeleted === b.isDeleted;
}

/**
 * Why the fresh grant does not authorize writing this snapshot for this consumer and school, or
 * null when it does: present; the same form, consumer and school (never another school's or app's
 * grant); not revoked; read and subscribe allowed; `grant_version` equal to the snapshot's — a
 * grant that moved on (or an envelope from an older or future grant) is refused. `push_allowed`
 * is not required: a repair is a read, not a push.
 * @example grantRefusal(null, snapshot, '100100') // { code: 'GRANT_MISSING', … }
 */
export function grantRefusal(
  grant: FreshGrant | null,
  snapshot: Pick<AuthoritativeSnapshot, 'formUuid' | 'schId' | 'grantVersion'>,
  consumerAppKey: string,
): { readonly code: Extract<ReasonCode, `GRANT_${string}`>; readonly detail: string } | null {
  if (grant === null)
    return {
      code: 'GRANT_MISSING',
      detail: `no grant of form ${snapshot.formUuid} to consumer ${consumerAppKey} at school ${snapshot.schId}`,
    };
  if (
    grant.form_uuid !== snapshot.formUuid ||
    grant.consumer_app_key !== consumerAppKey ||
    String(grant.consumer_school_id) !== snapshot.schId
  ) {
    return {
      code: 'GRANT_MISMATCH',
      detail: `the grant read is for form ${grant.form_uuid}, consumer ${grant.consumer_app_key}, school ${grant.consumer_school_id}, not form ${snapshot.formUuid}, consumer ${consumerAppKey}, school ${snapshot.schId}`,
    };
  }
  if (Number(grant.revoked) !== 0) return { code: 'GRANT_REVOKED', detail: 'the grant is revoked' };
  if (Number(grant.read_allowed) !== 1 || Number(grant.subscribe_allowed) !== 1)
    return { code: 'GRANT_NOT_READABLE', detail: 'the grant does not allow read and subscribe' };
  if (String(grant.grant_version) !== snapshot.grantVersion) {
    return {
      code: 'GRANT_VERSION_CHANGED',
      detail: `the grant is at version ${grant.grant_version}, the snapshot was made under ${snapshot.grantVersion}`,
    };
  }
  return null;
}

const cmp = (a: string, b: string) => {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
};
const show = (t: Triple) =>
  t.revision === null
    ? 'missing'
    : `revision ${t.revision}, hash ${t.hash.slice(0, 12)}…, isDeleted ${t.isDeleted ? 1 : 0}`;

/**
 * The decision for one answer, in this order:
 * 1. no authoritative snapshot (answer absent at FC, other school, bad row) → `DEFERRED`;
 * 2. the fresh grant refuses ({@link grantRefusal}) → `DEFERRED`;
 * 3. the local row is of another form → `DEFERRED` (`FORM_MISMATCH`);
 * 4. the local revision is higher than FC's → `LOCAL_AHEAD`, whatever was expected (never downgraded);
 * 5. the local triple is not the expected one → `LOCAL_CHANGED` (the runner re-reads, bounded);
 * 6. the local row is retired → `DEFERRED` (`LOCAL_RETIRED`: a person decides, nothing written);
 * 7. missing, as expected → `APPLIED` by an `UNLINKED` insert;
 * 8. FC's revision, hash and isDeleted already → `APPLIED`, nothing written (`ALREADY_CURRENT`);
 * 9. lower revision, or the same revision with another hash or isDeleted → `APPLIED` by a
 *    conditional update on the expected triple (`STALE_REPAIRED`, `HASH_CONFLICT_REPAIRED`).
 * In a dry run (`mode` `dry-run`) the same decision reads as not done: `WOULD_APPLY`, and the
 * codes of a write `WOULD_INSERT`, `WOULD_REPAIR_STALE`, `WOULD_REPAIR_HASH_CONFLICT`.
 * @example decideRepair(auth, MISSING, null) // { result: 'APPLIED', code: 'INSERTED', write: { kind: 'insert' }, … }
 */
export function decideRepair(
  authoritative: Authoritative,
  expected: Triple,
  observed: ObservedLocal | null,
  mode: RunMode = 'execute',
): RepairDecision {
  const dry = mode === 'dry-run';
  const d = (result: DecisionResult, code: ReasonCode, detail: string, write?: RepairWrite): RepairDecision => ({
    result,
    code,
    reason: `${code}: ${detail}`,
    ...(write ? { write } : {}),
  });
  if (authoritative.kind === 'unavailable') return d('DEFERRED', authoritative.code, authoritative.detail);
  const auth = authoritative.snapshot;
  const refusal = grantRefusal(authoritative.grant, auth, authoritative.consumerAppKey);
  if (refusal) return d('DEFERRED', refusal.code, `${refusal.detail}; nothing written`);
  if (observed !== null && observed.formUuid !== auth.formUuid) {
    return d(
      'DEFERRED',
      'FORM_MISMATCH',
      `the local row belongs to form ${observed.formUuid}, FC's answer to form ${auth.formUuid}; nothing written`,
    );
  }
  if (observed !== null && cmp(observed.revision, auth.revision) > 0) {
    return d(
      'LOCAL_AHEAD',
      'LOCAL_REVISION_AHEAD',
      `local revision ${observed.revision} is higher than FC's ${auth.revision}; never downgraded`,
    );
  }
  const local = tripleOf(observed);
  if (!sameTriple(local, expected))
    return d('LOCAL_CHANGED', 'EXPECTED_MISMATCH', `expected ${show(expected)}, the local row has ${show(local)}`);
  const applied = dry ? 'WOULD_APPLY' : 'APPLIED';
  if (observed === null) {
    return dry
      ? d(applied, 'WOULD_INSERT', `would insert as UNLINKED at revision ${auth.revision}`, { kind: 'insert' })
      : d(applied, 'INSERTED', `inserted as UNLINKED at revision ${auth.revision}`, { kind: 'insert' });
  }
  if (observed.retiredAt !== null) {
    return d(
      'DEFERRED',
      'LOCAL_RETIRED',
      `the local row was retired at ${observed.retiredAt} (proof ${observed.retireProofId ?? 'unknown'}) and FC has the answer: a person decides; nothing written`,
    );
  }
  const authTriple: Triple = { revision: auth.revision, hash: auth.contentHash, isDeleted: auth.isDeleted };
  if (sameTriple(local, authTriple))
    return d(
      applied,
      'ALREADY_CURRENT',
      `the local row already holds revision ${auth.revision} with FC's hash; nothing ${dry ? 'to write' : 'written'}`,
    );
  const write: RepairWrite = {
    kind: 'update',
    expected: { revision: observed.revision, hash: observed.hash, isDeleted: observed.isDeleted },
  };
  const would = dry ? 'would update ' : '';
  if (cmp(observed.revision, auth.revision) < 0)
    return d(
      applied,
      dry ? 'WOULD_REPAIR_STALE' : 'STALE_REPAIRED',
      `${would}revision ${observed.revision} → ${auth.revision}`,
      write,
    );
  const change = `revision ${auth.revision}: hash ${observed.hash.slice(0, 12)}… → ${auth.contentHash.slice(0, 12)}…${observed.isDeleted !== auth.isDeleted ? `, isDeleted ${observed.isDeleted ? 1 : 0} → ${auth.isDeleted ? 1 : 0}` : ''}`;
  return d(applied, dry ? 'WOULD_REPAIR_HASH_CONFLICT' : 'HASH_CONFLICT_REPAIRED', `${would}${change}`, write);
}

/**
 * True when the result leaves the answer unrepaired: the run exits 1 (SPEC §2).
 * @example isRefused('LOCAL_AHEAD') // true
 */
export function isRefused(result: DecisionResult): boolean {
  return REFUSED_RESULTS.has(result);
}

/** What the run's summary and exit code read of one answer's outcome. */
export interface SettledRepair {
  readonly result: DecisionResult;
  readonly code: ReasonCode;
  readonly write: 'insert' | 'update' | null;
  readonly written: boolean;
  readonly rereads: number;
}

/**
 * Whether a plan run prints no `result` line for this outcome, only counting it (`byCode`,
 * docs/output.md): the local row already held FC's triple and nothing was written or re-read
 * (`ALREADY_CURRENT` at the first read). A single-answer run prints its one result whatever it is.
 * @example countedOnly({ code: 'ALREADY_CURRENT', rereads: 0 }) // true
 */
export function countedOnly(r: Pick<SettledRepair, 'code' | 'rereads'>): boolean {
  return r.code === 'ALREADY_CURRENT' && r.rereads === 0;
}

/** How a run ended: the outcomes, the items never started, and a database error that stopped it. */
export interface RepairRunEnd {
  readonly results: readonly SettledRepair[];
  readonly notRun: number;
  readonly error: unknown;
}

/**
 * The run's exit code (SPEC §2): 3 when a database error stopped it, 1 when any answer is refused
 * (LOCAL_CHANGED, LOCAL_AHEAD, DEFERRED) or was not run, else 0.
 * @example repairExitCode({ results: [], notRun: 2, error: null }) // 1
 */
export function repairExitCode(end: RepairRunEnd): ExitCode {
  if (end.error) return ExitCode.ENVIRONMENT;
  return end.results.filter((r) => isRefused(r.result)).length + end.notRun > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

/**
 * Every result of the run's mode counted, 0 included, in their documented order: a dry run
 * counts WOULD_APPLY, never APPLIED, so its summary cannot read as done.
 * @example resultCounts([{ result: 'WOULD_APPLY', … }], true) // { WOULD_APPLY: 1, LOCAL_CHANGED: 0, LOCAL_AHEAD: 0, DEFERRED: 0 }
 */
export function resultCounts(
  results: readonly Pick<SettledRepair, 'result'>[],
  dryRun: boolean,
): Record<string, number> {
  const byResult: Record<string, number> = Object.fromEntries(
    resultsFor(dryRun ? 'dry-run' : 'execute').map((c) => [c, 0]),
  );
  for (const r of results) byResult[r.result] = (byResult[r.result] ?? 0) + 1;
  return byResult;
}

/** A finished run as its summary reads it: what was asked, the outcomes, how it ended. */
export interface RepairRunFacts extends RepairRunEnd {
  readonly exitCode: number;
  readonly dryRun: boolean;
  readonly runId: string;
  readonly proofId: string;
  readonly consumerAppKey: string;
  readonly source: 'envelope' | 'fc';
  readonly items: number;
  readonly byResult: Readonly<Record<string, number>>;
  readonly stoppedBy: string;
  /** the evidence file's path */
  readonly evidence: string;
}

/**
 * The summary `projection repair-authoritative` prints: the counts by result and by code (in
 * {@link REASON_CODES} order), what was — or in a dry run would be — inserted and updated, and
 * the re-reads. JSON output carries `byResult`; on a terminal (`json` false) the non-zero results
 * go to `counts`, shown under the summary.
 * @example summarizeRepair({ ...facts, results: [] }, 0.1, true).summary.decided // 0
 */
export function summarizeRepair(f: RepairRunFacts, seconds: number, json: boolean): SummaryWithCounts {
  const byCode: Record<string, number> = {};
  for (const r of f.results) byCode[r.code] = (byCode[r.code] ?? 0) + 1;
  const writes = (kind: 'insert' | 'update', written: boolean) =>
    f.results.filter((r) => r.write === kind && (!written || r.written)).length;
  const counts = json ? undefined : Object.fromEntries(Object.entries(f.byResult).filter(([, n]) => n > 0));
  const summary = {
    command: 'projection repair-authoritative',
    exitCode: f.exitCode,
    dryRun: f.dryRun,
    runId: f.runId,
    proofId: f.proofId,
    consumerAppKey: f.consumerAppKey,
    source: f.source,
    items: f.items,
    decided: f.results.length,
    ...(counts ? {} : { byResult: f.byResult }),
    byCode: Object.fromEntries(REASON_CODES.filter((c) => byCode[c] !== undefined).map((c) => [c, byCode[c]!])),
    ...(f.dryRun
      ? { wouldInsert: writes('insert', false), wouldUpdate: writes('update', false) }
      : { inserted: writes('insert', true), updated: writes('update', true) }),
    rereads: f.results.reduce((n, r) => n + r.rereads, 0),
    refused: f.results.filter((r) => isRefused(r.result)).length,
    notRun: f.notRun,
    stoppedBy: f.stoppedBy,
    evidence: f.evidence,
    seconds,
  };
  return { summary, counts };
}

/**
 * The event id of a repair envelope built from FC (seed 000 §8.1: ≤ 36 characters, a UUID of the
 * task's operation on the answer): a name-based UUID of the proof id, consumer, school, answer,
 * revision and hash, so the same repair gets the same id every time.
 * @example repairEventId('proof-1', '100100', '5', 'a1b2…', '3', 'ab12…').length // 36
 */
export function repairEventId(
  proofId: string,
  consumerAppKey: string,
  schId: string,
  answerUuid: string,
  revision: string,
  hash: string,
): string {
  const h = createHash('sha256')
    .update(['fcctl.repair.v1', proofId, consumerAppKey, schId, answerUuid, revision, hash].join('\u0000'), 'utf8')
    .digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** How evidence and audit rows show a triple, the authoritative snapshot and its grant. */
export const tripleJson = (t: Triple) => ({ revision: t.revision, hash: t.hash, isDeleted: t.isDeleted });
export const authSummary = (a: Authoritative) =>
  a.kind === 'ready'
    ? {
        source: a.snapshot.source,
        eventId: a.snapshot.eventId,
        formUuid: a.snapshot.formUuid,
        formVersion: a.snapshot.formVersion,
        revision: a.snapshot.revision,
        contentHash: a.snapshot.contentHash,
        isDeleted: a.snapshot.isDeleted,
        grantVersion: a.snapshot.grantVersion,
      }
    : null;
export const grantSummary = (a: Authoritative) =>
  a.kind === 'ready' && a.grant
    ? {
        grantVersion: String(a.grant.grant_version),
        revoked: Number(a.grant.revoked),
        readAllowed: Number(a.grant.read_allowed),
        subscribeAllowed: Number(a.grant.subscribe_allowed),
      }
    : null;
