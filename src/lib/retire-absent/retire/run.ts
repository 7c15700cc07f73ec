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
import type { PoolConnection } from 'mysql2/promise';
import { EnvironmentError } from '../../cli/exit.js';
import type { Progress } from '../../cli/output.js';
import type { Db } from '../../db/connect.js';
import type { LazyDatabases } from '../../db/lazy.js';
import { RowMoved } from '../../db/row-moved.js';
import type { Statement } from '../../db/statement.js';
import { EvidenceFile } from '../../files/jsonl-evidence.js';
import {
  decideProof,
  decideRetire,
  type FcNow,
  type LocalNow,
  type ProofFacts,
  proofIdRefusal,
  type ProofRefusal,
  type ProofRefusalReason,
  refusedWithProof,
  type RetireDecision,
  type RetireEntry,
} from '../decide.js';
import {
  type EntryOutcome,
  retireEndCounts,
  retireExitCode,
  type RetireRunFacts,
  type RetireRunResult,
} from './decide.js';
import type { ProofReading, RetireProof } from '../decide.js';
import {
  type AuditRow,
  fcSeen,
  type FcLookupRow,
  type LocalDbRow,
  localNowOf,
  type ProofIdDigestDbRow,
  type RetiredAuditDbRow,
  retirementDigest,
  retireSql,
} from '../sql.js';

export type { EntryOutcome, RetireRunResult };

export const EVIDENCE_FORMAT = 'fcctl.retire-evidence.v1';

/**
 * Opens (creates or appends to) a retire run's evidence file; exit 2 when it cannot be.
 * @example const log = await openRetireEvidence('proof.evidence.jsonl'); await log.append({ type: 'run' }); await log.close()
 */
export function openRetireEvidence(path: string): Promise<EvidenceFile> {
  return EvidenceFile.open(path, { openError: (p, why) => `cannot open evidence file ${p}: ${why}` });
}

export interface RetireRunOptions {
  readonly proofFile: string;
  readonly reading: ProofReading;
  readonly execute: boolean;
  readonly maxProofAgeSeconds: number;
  readonly runId: string;
  /** `host:port/db` of the configured FC database (must be the proof's) */
  readonly fcDatabase: string;
}

export interface RetireRunDeps extends LazyDatabases {
  readonly evidence: EvidenceFile;
  readonly now: () => Date;
  readonly signal: AbortSignal;
  readonly host?: string;
  /** each entry's outcome, in proof order */
  readonly onResult?: (r: EntryOutcome) => void;
}

const MAX_ATTEMPTS = 3;

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

/**
 * Step 1, the proof as a whole: what reading found, its age and FC database ({@link decideProof});
 * then its id: a proof is its id AND its digest; an id another proof already used is refused as a
 * whole (a read, in a dry run too). A race of two such proofs is caught per row, under the lock,
 * by decideRetire (the digest of the RETIRED audit row).
 */
async function proofRefusal(o: RetireRunOptions, deps: RetireRunDeps): Promise<ProofRefusal | null> {
  const r = o.reading;
  const facts: ProofFacts =
    r.kind === 'refused'
      ? { kind: 'refused', reason: r.reason, detail: r.detail }
      : {
          kind: 'valid',
          createdAt: r.proof.createdAt,
          manifestCompletedAt: r.proof.fcManifest.completedAt,
          fcDatabase: r.proof.fcDatabase,
        };
  const refusal = decideProof(facts, deps.now(), o.maxProofAgeSeconds, o.fcDatabase);
  if (refusal || r.kind !== 'valid') return refusal;
  const sh = await deps.shDb();
  const q = retireSql.proofIdDigests(r.proof.proofId);
  return proofIdRefusal(
    r.proof.proofId,
    r.proof.digest,
    (await sh.query<ProofIdDigestDbRow>(q.sql, q.params)).map((d) => d.proof_digest),
  );
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
    const step = await settle(sh, entry, fcNow, expected, p, o, host);
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

/**
 * The audit row of a proof refused as a whole: action `RETIRE_ABSENT`, outcome `REFUSED`, reason
 * `CODE: detail`, the proof id and school as the file gives them (null when unreadable), no
 * answer. A failure to write it is exit 3, naming the refusal it could not record.
 */
async function auditProofRefusal(
  o: RetireRunOptions,
  deps: RetireRunDeps,
  host: string,
  refusal: { reason: ProofRefusalReason; detail: string },
  entries: number,
): Promise<void> {
  const r = o.reading;
  const proof = r.kind === 'valid' ? r.proof : null;
  const audit: AuditRow = {
    outcome: 'REFUSED',
    reason: `${refusal.reason}: ${refusal.detail}`,
    proofId: proof?.proofId ?? (r.kind === 'refused' ? r.proofId : null),
    runId: o.runId,
    host,
    schId: proof?.schId ?? (r.kind === 'refused' ? r.schId : null),
    answerUuid: null,
    expected: {
      proofFile: o.proofFile,
      proofFileSha256: r.fileSha256,
      proofId: proof?.proofId ?? (r.kind === 'refused' ? r.proofId : null),
      proofDigest: proof?.digest ?? (r.kind === 'refused' ? r.digest : null),
      taskId: proof?.taskId ?? null,
      taskStart: proof?.taskStart ?? null,
      formUuid: proof?.formUuid ?? (r.kind === 'refused' ? r.formUuid : null),
      fcDatabase: proof?.fcDatabase ?? null,
      maxProofAgeSeconds: o.maxProofAgeSeconds,
    },
    observed: {
      refusal: refusal.reason,
      detail: refusal.detail,
      entriesRefused: entries,
      configuredFcDatabase: o.fcDatabase,
      checkedAt: deps.now().toISOString(),
    },
  };
  try {
    const sh = await deps.shDb();
    const q = retireSql.insertAudit(audit);
    await sh.query(q.sql, q.params);
  } catch (err) {
    const why = String((err as Error)?.message ?? err).split('\n')[0];
    throw new EnvironmentError(
      `proof refused (${refusal.reason}), nothing retired, but the refusal could not be written to fc_reconcile_audit: ${why}`,
      { cause: err },
    );
  }
}

function rest(o: EntryOutcome) {
  return { result: o.result, reason: o.reason, detail: o.detail, retiredAt: o.retiredAt };
}

type Expected = ReturnType<typeof expectedOf>;

/** The expected values of an entry, as the evidence and the audit record them. */
function expectedOf(p: RetireProof, e: RetireProof['entries'][number]) {
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

/** The fresh FC lookup of one answer, with the time taken just before the query. */
async function lookupFc(fc: Db, answerUuid: string, now: () => Date): Promise<FcNow> {
  const checkedAt = now().toISOString();
  const q = retireSql.fcAnswer(answerUuid);
  const row = (await fc.query<FcLookupRow>(q.sql, q.params))[0];
  return row ? { present: true, checkedAt, row: fcSeen(row) } : { present: false, checkedAt };
}

/**
 * The local row as the decision reads it. A retired row also needs the digest of the proof that
 * retired it — a proof is its id AND its digest, and `retire_proof_id` holds only the id — read
 * from the RETIRED audit row of that retirement (its `expected_json.proofDigest`, written by
 * {@link settleInTransaction}). A read only; in the execute transaction the row is locked already.
 */
async function localWithRetirement(
  row: LocalDbRow | undefined,
  entry: RetireEntry,
  query: (q: Statement) => Promise<RetiredAuditDbRow[]>,
): Promise<LocalNow | null> {
  if (!row) return null;
  const local = localNowOf(row, null);
  if (local.retiredAt === null) return local;
  const audit = (await query(retireSql.retiredAudit(entry.answerUuid, entry.schId)))[0];
  return { ...local, retireProofDigest: retirementDigest(audit, local.retiredAt, local.retireProofId) };
}

interface Settled {
  readonly decision: RetireDecision;
  readonly local: LocalNow | null;
  readonly retiredAt: string | null;
}

/**
 * The local step of one entry. Dry run: read, decide, write nothing. Execute: one transaction —
 * lock the row (`FOR UPDATE`), decide on what is locked, the guarded UPDATE for a RETIRED
 * decision (exactly one row, or the transaction is retried), one audit row for every decision.
 */
async function settle(
  sh: Db,
  entry: RetireEntry,
  fcNow: FcNow,
  expected: Expected,
  p: RetireProof,
  o: RetireRunOptions,
  host: string,
): Promise<Settled> {
  if (!o.execute) {
    const q = retireSql.localRow(entry.answerUuid, entry.schId, false);
    const row = (await sh.query<LocalDbRow>(q.sql, q.params))[0];
    const local = await localWithRetirement(row, entry, async (a) => sh.query<RetiredAuditDbRow>(a.sql, a.params));
    return { decision: decideRetire(entry, fcNow, local, p.taskStart, 'dry-run'), local, retiredAt: null };
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await sh.transaction((conn) => settleInTransaction(conn, entry, fcNow, expected, p, o, host));
    } catch (err) {
      if (err instanceof RowMoved && attempt < MAX_ATTEMPTS) continue;
      throw err;
    }
  }
}

async function settleInTransaction(
  conn: PoolConnection,
  entry: RetireEntry,
  fcNow: FcNow,
  expected: Expected,
  p: RetireProof,
  o: RetireRunOptions,
  host: string,
): Promise<Settled> {
  const run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T;
  const row = (await run<LocalDbRow[]>(retireSql.localRow(entry.answerUuid, entry.schId, true)))[0];
  const local = await localWithRetirement(row, entry, (a) => run<RetiredAuditDbRow[]>(a));
  const decision = decideRetire(entry, fcNow, local, p.taskStart, 'execute');
  let retiredAt: string | null = null;
  if (decision.result === 'RETIRED') {
    retiredAt = row!.sh_now.replace(/\.\d+$/, '');
    const res = await run<{ affectedRows: number }>(
      retireSql.markRetired({ entry, taskStart: p.taskStart, proofId: p.proofId, retiredAt }),
    );
    if (res.affectedRows !== 1)
      throw new RowMoved(`the locked row of ${entry.answerUuid} did not take the guarded update`);
  }
  const audit: AuditRow = {
    outcome: decision.result,
    reason: decision.reason === null ? decision.detail : `${decision.reason}: ${decision.detail}`,
    proofId: p.proofId,
    runId: o.runId,
    host,
    schId: entry.schId,
    answerUuid: entry.answerUuid,
    expected,
    observed: { fc: fcNow, local, ...(retiredAt ? { retiredAt } : {}) },
  };
  await run(retireSql.insertAudit(audit));
  return { decision, local, retiredAt };
}

/**
 * A new run id (recorded in the audit and the evidence).
 * @example newRunId() // '3f2c…' (a UUID)
 */
export function newRunId(): string {
  return randomUUID();
}
