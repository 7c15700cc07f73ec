/**
 * `projection repair-authoritative`, the runner (seed 000 §8.1, SPEC §6): {@link runRepairAuthoritative}
 * opens the evidence file, records the run, repairs every item ({@link runRepairBatch}) and records
 * the end. For each answer, one attempt is:
 *
 * 1. FC, one statement: the `answer` row (its snapshot built with fc.canon.v1) and the grant of its
 *    form to the consumer at the school, read now, never cached — or, with `--envelope`, the checked
 *    envelope's snapshot and the grant read now;
 * 2. the local projection row, read now (a plain read: no lock is held across the two databases);
 * 3. {@link decideRepair};
 * 4. with `execute`: one short SH transaction holding the conditional UPDATE (or the UNLINKED
 *    INSERT) and the `fc_reconcile_audit` row. A write that matches nothing, or a duplicate key on
 *    the insert, rolls back: the answer is LOCAL_CHANGED, with the row re-read;
 * 5. one evidence line.
 *
 * LOCAL_CHANGED is retried up to `maxRereads` times with the triple just read as the new
 * expectation; a local row that moved ahead comes out LOCAL_AHEAD and is never overwritten.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { runOrdered, type OrderedSummary } from '../../batch/ordered.js';
import { EnvironmentError, UsageError } from '../../cli/exit.js';
import type { Progress } from '../../cli/output.js';
import type { PoolConnection } from 'mysql2/promise';
import { AnswerSnapshotError, buildAnswerSnapshot } from '../../answers/snapshot.js';
import type { Db } from '../../db/connect.js';
import type { LazyDatabases } from '../../db/lazy.js';
import { RowMoved } from '../../db/row-moved.js';
import type { Statement } from '../../db/statement.js';
import type { EvidenceFile } from '../../files/jsonl-evidence.js';
import {
  type Authoritative,
  type AuthoritativeSnapshot,
  type DecisionResult,
  decideRepair,
  envelopeAgainstFc,
  isRefused,
  type ObservedLocal,
  type ReasonCode,
  type RepairDecision,
  repairExitCode,
  type RepairRunFacts,
  resultCounts,
  type Triple,
  tripleOf,
} from './decide.js';
import { openRepairEvidence } from './evidence.js';
import type { RepairInputs, RepairItem } from './input.js';
import { type AnswerWithGrantRaw, auditSql, fcSql, grantOf, type LocalRowRaw, projectionSql } from './sql.js';

/** What every item of a run shares. */
export interface RepairRunOptions {
  /** the consumer whose grant authorizes the projection (this SH deployment's credential key) */
  readonly consumerAppKey: string;
  readonly proofId: string;
  readonly runId: string;
  readonly host: string;
  readonly execute: boolean;
  /** LOCAL_CHANGED re-reads per item (0: answer the first LOCAL_CHANGED) */
  readonly maxRereads: number;
  /** the authoritative snapshot of an `--envelope` file (single mode); otherwise built from FC */
  readonly envelope?: AuthoritativeSnapshot;
}

export interface RepairDeps {
  readonly fcDb: Db;
  readonly shDb: Db;
  /** where every decision is appended; null: none (library use) */
  readonly evidence: EvidenceFile | null;
  readonly now: () => Date;
}

/** The answer for one item, as printed. */
export interface RepairOutcome {
  readonly line: number;
  readonly answerUuid: string;
  readonly schId: string;
  readonly category: string | null;
  readonly result: DecisionResult;
  readonly code: ReasonCode;
  readonly reason: string;
  /** what was (or, in a dry run, would be) written: `insert`, `update`, or null */
  readonly write: 'insert' | 'update' | null;
  readonly written: boolean;
  readonly rereads: number;
  /** the first expectation and the last one decided on (they differ after re-reads) */
  readonly expected: Triple;
  readonly lastExpected: Triple;
  readonly authoritative: {
    readonly revision: string;
    readonly contentHash: string;
    readonly isDeleted: boolean;
    readonly grantVersion: string;
    readonly eventId: string;
  } | null;
}

const stmt = async <T>(db: Db, s: Statement) => db.query<T>(s.sql, s.params);

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

/** The local row of an answer at a school, typed; null when there is none. */
export async function readLocal(shDb: Db, answerUuid: string, schId: string): Promise<ObservedLocal | null> {
  const raw = (await stmt<LocalRowRaw>(shDb, projectionSql.readLocal(answerUuid, schId)))[0];
  return raw === undefined ? null : localOf(raw);
}

function localOf(r: LocalRowRaw): ObservedLocal {
  return {
    answerUuid: r.answer_uuid,
    schId: String(r.sch_id),
    formUuid: r.form_uuid,
    formVersion: String(r.form_version),
    revision: BigInt(r.answer_revision).toString(),
    hash: r.content_hash,
    isDeleted: Number(r.is_deleted) === 1,
    linkState: r.link_state,
    conflictFlag: Number(r.conflict_flag) === 1,
    projectionVersion: String(r.projection_version),
    retiredAt: r.retired_at,
    retireProofId: r.retire_proof_id,
  };
}

/**
 * Step 1 from FC, in one statement: the answer row's snapshot (fc.canon.v1) and the grant
 * of its form to the consumer at the school, both read now; or why there is no authoritative
 * snapshot (answer absent, other school, a row that cannot form a snapshot, no grant).
 */
async function readFromFc(fcDb: Db, item: RepairItem, o: RepairRunOptions): Promise<Authoritative> {
  const row = (
    await stmt<AnswerWithGrantRaw>(fcDb, fcSql.answerWithGrant(item.answerUuid, item.schId, o.consumerAppKey))
  )[0];
  if (row === undefined)
    return {
      kind: 'unavailable',
      code: 'ANSWER_NOT_AT_FC',
      detail: `FC has no answer ${item.answerUuid}; nothing written`,
    };
  if (String(row.sch_id) !== item.schId) {
    return {
      kind: 'unavailable',
      code: 'SCHOOL_MISMATCH',
      detail: `FC's answer ${item.answerUuid} belongs to school ${row.sch_id}, not ${item.schId}; nothing written`,
    };
  }
  let snapshot: { snapshotJson: string; contentHash: string };
  try {
    snapshot = buildAnswerSnapshot(row);
  } catch (err) {
    if (err instanceof AnswerSnapshotError)
      return { kind: 'unavailable', code: 'SNAPSHOT_INVALID', detail: `${err.message}; nothing written` };
    throw err;
  }
  const grant = grantOf(row);
  if (grant === null) {
    return {
      kind: 'unavailable',
      code: 'GRANT_MISSING',
      detail: `no grant of form ${row.form_uuid} to consumer ${o.consumerAppKey} at school ${item.schId}; nothing written`,
    };
  }
  const revision = BigInt(row.answer_revision).toString();
  return {
    kind: 'ready',
    consumerAppKey: o.consumerAppKey,
    grant,
    snapshot: {
      source: 'fc',
      eventId: repairEventId(o.proofId, o.consumerAppKey, item.schId, item.answerUuid, revision, snapshot.contentHash),
      answerUuid: row.answer_uuid,
      schId: item.schId,
      formUuid: row.form_uuid,
      formVersion: String(row.form_version),
      revision,
      contentHash: snapshot.contentHash,
      isDeleted: Number(row.is_deleted) === 1,
      // The version of the grant read with the answer, so equal by construction here; the check
      // decides for an --envelope, which carries the sender's grant version.
      grantVersion: String(grant.grant_version),
      snapshotJson: snapshot.snapshotJson,
    },
  };
}

interface Attempt {
  readonly decision: RepairDecision;
  readonly observed: ObservedLocal | null;
  readonly authoritative: Authoritative;
  readonly written: boolean;
  /** the write was tried and lost a race (0 rows matched, or a duplicate key) */
  readonly raced: boolean;
}

const tripleJson = (t: Triple) => ({ revision: t.revision, hash: t.hash, isDeleted: t.isDeleted });
const authSummary = (a: Authoritative) =>
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
const grantSummary = (a: Authoritative) =>
  a.kind === 'ready' && a.grant
    ? {
        grantVersion: String(a.grant.grant_version),
        revoked: Number(a.grant.revoked),
        readAllowed: Number(a.grant.read_allowed),
        subscribeAllowed: Number(a.grant.subscribe_allowed),
      }
    : null;

/** The audit row of a decision (every decision of an executed run, refusals included). */
function auditOf(
  item: RepairItem,
  o: RepairRunOptions,
  expected: Triple,
  at: Omit<Attempt, 'written'> & { attempt: number },
): Statement {
  return auditSql.insert({
    outcome: at.decision.result,
    reason: at.decision.reason,
    proofId: o.proofId,
    runId: o.runId,
    host: o.host,
    schId: item.schId,
    answerUuid: item.answerUuid,
    expectedJson: JSON.stringify(tripleJson(expected)),
    observedJson: JSON.stringify({
      code: at.decision.code,
      attempt: at.attempt,
      raced: at.raced,
      write: at.decision.write?.kind ?? null,
      local: at.observed,
      authoritative: authSummary(at.authoritative),
      grant: grantSummary(at.authoritative),
    }),
  });
}

/**
 * One attempt: read, decide and (with `execute`) write with its audit row in one SH transaction.
 * A lost race rolls back and is LOCAL_CHANGED, with the row re-read (and its own audit row).
 */
async function attemptOnce(
  item: RepairItem,
  expected: Triple,
  attempt: number,
  o: RepairRunOptions,
  deps: RepairDeps,
): Promise<Attempt> {
  const fromFc = await readFromFc(deps.fcDb, item, o);
  const authoritative: Authoritative = o.envelope ? envelopeAgainstFc(o.envelope, fromFc) : fromFc;
  const observed = await readLocal(deps.shDb, item.answerUuid, item.schId);
  const decision = decideRepair(authoritative, expected, observed, o.execute ? 'execute' : 'dry-run');
  if (!o.execute) return { decision, observed, authoritative, written: false, raced: false };

  const write = decision.write;
  try {
    await deps.shDb.transaction(async (conn: PoolConnection) => {
      if (write && authoritative.kind === 'ready') {
        const s =
          write.kind === 'update'
            ? projectionSql.update(authoritative.snapshot, write.expected, o.proofId)
            : projectionSql.insert(authoritative.snapshot, o.proofId);
        const [res] = await conn.query(s.sql, s.params);
        if ((res as { affectedRows: number }).affectedRows !== 1) throw new RowMoved();
      }
      const a = auditOf(item, o, expected, { decision, observed, authoritative, raced: false, attempt });
      await conn.query(a.sql, a.params);
    });
    return { decision, observed, authoritative, written: write !== undefined, raced: false };
  } catch (err) {
    const duplicate = (err as { code?: string }).code === 'ER_DUP_ENTRY';
    if (!(err instanceof RowMoved) && !duplicate) throw err;
  }
  // Lost the race: the transaction rolled back (its audit row with it). The expectation no longer
  // holds: LOCAL_CHANGED, with the row as it is now; the caller re-reads and decides again.
  const again = await readLocal(deps.shDb, item.answerUuid, item.schId);
  const now = tripleOf(again);
  const redecided: RepairDecision = {
    result: 'LOCAL_CHANGED',
    code: 'EXPECTED_MISMATCH',
    reason: `EXPECTED_MISMATCH: the local row changed between the read and the write (now ${now.revision === null ? 'missing' : `revision ${now.revision}, hash ${now.hash.slice(0, 12)}…, isDeleted ${now.isDeleted ? 1 : 0}`}); nothing written`,
  };
  const a = auditOf(item, o, expected, { decision: redecided, observed: again, authoritative, raced: true, attempt });
  await deps.shDb.execute(a.sql, a.params);
  return { decision: redecided, observed: again, authoritative, written: false, raced: true };
}

/**
 * Repairs one answer: attempts until a result other than LOCAL_CHANGED, or `maxRereads` re-reads
 * are spent; each attempt's decision goes to the evidence file.
 * @example const outcome = await repairOne(item, options, { fcDb, shDb, evidence, now: () => new Date() })
 */
export async function repairOne(item: RepairItem, o: RepairRunOptions, deps: RepairDeps): Promise<RepairOutcome> {
  let expected = item.expected;
  for (let rereads = 0; ; rereads++) {
    const at = await attemptOnce(item, expected, rereads + 1, o, deps);
    await deps.evidence?.append({
      type: 'decision',
      time: deps.now().toISOString(),
      runId: o.runId,
      host: o.host,
      proofId: o.proofId,
      dryRun: !o.execute,
      consumerAppKey: o.consumerAppKey,
      line: item.line,
      answerUuid: item.answerUuid,
      schId: item.schId,
      category: item.plan?.category ?? null,
      attempt: rereads + 1,
      result: at.decision.result,
      code: at.decision.code,
      reason: at.decision.reason,
      write: at.decision.write?.kind ?? null,
      written: at.written,
      raced: at.raced,
      expected: tripleJson(expected),
      observed: at.observed,
      authoritative: authSummary(at.authoritative),
      grant: grantSummary(at.authoritative),
      plan: item.plan ?? null,
    });
    const last = at.decision.result !== 'LOCAL_CHANGED' || rereads >= o.maxRereads;
    if (last) {
      const auth = at.authoritative.kind === 'ready' ? at.authoritative.snapshot : null;
      return {
        line: item.line,
        answerUuid: item.answerUuid,
        schId: item.schId,
        category: item.plan?.category ?? null,
        result: at.decision.result,
        code: at.decision.code,
        reason: at.decision.reason,
        write: at.decision.write?.kind ?? null,
        written: at.written,
        rereads,
        expected: item.expected,
        lastExpected: expected,
        authoritative: auth
          ? {
              revision: auth.revision,
              contentHash: auth.contentHash,
              isDeleted: auth.isDeleted,
              grantVersion: auth.grantVersion,
              eventId: auth.eventId,
            }
          : null,
      };
    }
    expected = tripleOf(at.observed);
  }
}

export interface BatchDeps extends RepairDeps {
  readonly signal: AbortSignal;
  readonly clock: () => number;
  /** each outcome, in input order */
  readonly onResult?: (outcome: RepairOutcome) => void;
}

export type BatchSummary = OrderedSummary<RepairOutcome>;

/**
 * Repairs items with at most `concurrency` at once (p-limit); outcomes are reported in input
 * order. On SIGINT/SIGTERM or `maxSeconds` no new item starts and the started ones finish; a
 * database error stops the run the same way and is returned once the started items settle.
 * @example const { results } = await runRepairBatch(items, options, { concurrency: 8, maxSeconds: 3600 }, { fcDb, shDb, evidence, now, signal, clock: Date.now })
 */
export async function runRepairBatch(
  items: readonly RepairItem[],
  o: RepairRunOptions,
  budget: { readonly concurrency: number; readonly maxSeconds: number },
  deps: BatchDeps,
): Promise<BatchSummary> {
  return runOrdered(items, budget, deps, (item) => repairOne(item, o, deps));
}

/** The evidence file's name when `--evidence` is not given: beside the plan, or in the current directory. */
export const DEFAULT_EVIDENCE_NAME = 'repair-evidence.jsonl';

/** What `projection repair-authoritative` was asked (its flags, checked). */
export interface ProjectionRepairOptions {
  /** this SH deployment's consumer credential key: whose grant authorizes the projection */
  readonly consumerAppKey: string;
  readonly proofId: string;
  /** given: single mode's school, or (with a plan) the school every line must have */
  readonly schId?: string;
  /** one answer from the flags, or */
  readonly single?: { readonly answerUuid: string; readonly expected: Triple; readonly envelope?: string };
  /** a plan file (`-` for stdin): `repair-plan.jsonl` of `reconcile diff` */
  readonly plan?: string;
  readonly execute: boolean;
  /** default: {@link DEFAULT_EVIDENCE_NAME} beside the plan, or in the current directory */
  readonly evidence?: string;
  readonly runId: string;
  readonly concurrency: number;
  readonly maxRereads: number;
  readonly maxSeconds: number;
}

export interface ProjectionRepairDeps extends LazyDatabases {
  readonly now: () => Date;
  readonly clock: () => number;
  readonly signal: AbortSignal;
  /** the live display of a plan run, opened once both databases are (none in single mode) */
  readonly progress?: (total: number) => Progress;
  /** each outcome, in input order */
  readonly onResult?: (outcome: RepairOutcome) => void;
}

const NOTHING_RUN: BatchSummary = { results: [], notRun: 0, stoppedBy: 'done', error: null };

/**
 * The run, as a list of steps: open the evidence file (exit 2 when it cannot be), record the run,
 * repair every item (nothing to connect when there are none), record the end, close. A database
 * error stops the run and is in `error` ({@link repairFailure} makes it the exit-3 error).
 * @example const run = await runRepairAuthoritative(options, await readRepairInputs(options, io), { fcDb, shDb, now, clock, signal })
 */
export async function runRepairAuthoritative(
  options: ProjectionRepairOptions,
  inputs: RepairInputs,
  deps: ProjectionRepairDeps,
): Promise<RepairRunFacts> {
  const host = hostname();
  const dryRun = !options.execute;
  const evidence = await openRepairEvidence(evidencePath(options));
  let batch = NOTHING_RUN;
  let exitCode: number;
  try {
    await evidence.append(runLine(options, inputs, host, deps.now()));
    if (inputs.items.length > 0) batch = await repairItems(options, inputs, host, evidence, deps);
    exitCode = repairExitCode(batch);
    const byResult = resultCounts(batch.results, dryRun);
    await evidence
      .append({
        type: 'end',
        runId: options.runId,
        exitCode,
        byResult,
        notRun: batch.notRun,
        stoppedBy: batch.stoppedBy,
        endedAt: deps.now().toISOString(),
      })
      .catch(() => undefined);
    const { results, notRun, stoppedBy, error } = batch;
    const asked = {
      dryRun,
      runId: options.runId,
      proofId: options.proofId,
      consumerAppKey: options.consumerAppKey,
      source: inputs.envelope ? ('envelope' as const) : ('fc' as const),
      items: inputs.items.length,
    };
    return { ...asked, results, notRun, stoppedBy, error, byResult, exitCode, evidence: evidence.path };
  } finally {
    await evidence.close();
  }
}

function evidencePath(options: ProjectionRepairOptions): string {
  if (options.evidence !== undefined) return resolve(options.evidence);
  if (options.plan !== undefined && options.plan !== '-')
    return join(dirname(resolve(options.plan)), DEFAULT_EVIDENCE_NAME);
  return resolve(DEFAULT_EVIDENCE_NAME);
}

/** The evidence file's first line: what was asked, of which input (its SHA-256), where. */
function runLine(
  options: ProjectionRepairOptions,
  inputs: RepairInputs,
  host: string,
  now: Date,
): Record<string, unknown> {
  const batch = options.single === undefined;
  return {
    type: 'run',
    runId: options.runId,
    proofId: options.proofId,
    consumerAppKey: options.consumerAppKey,
    mode: batch ? 'plan' : 'single',
    plan: batch ? (options.plan === '-' ? '-' : resolve(options.plan!)) : null,
    planSha256: batch ? inputs.sha256 : null,
    envelope:
      options.single?.envelope === undefined
        ? null
        : options.single.envelope === '-'
          ? '-'
          : resolve(options.single.envelope),
    envelopeSha256: batch ? null : inputs.sha256,
    execute: options.execute,
    maxRereads: options.maxRereads,
    concurrency: options.concurrency,
    items: inputs.items.length,
    host,
    startedAt: now.toISOString(),
  };
}

/** Connects both databases, then repairs every item under the run's budget, the progress display open meanwhile. */
async function repairItems(
  options: ProjectionRepairOptions,
  inputs: RepairInputs,
  host: string,
  evidence: EvidenceFile,
  deps: ProjectionRepairDeps,
): Promise<BatchSummary> {
  const fcDb = await deps.fcDb();
  const shDb = await deps.shDb();
  const progress = deps.progress?.(inputs.items.length) ?? null;
  const runOptions: RepairRunOptions = {
    consumerAppKey: options.consumerAppKey,
    proofId: options.proofId,
    runId: options.runId,
    host,
    execute: options.execute,
    maxRereads: options.maxRereads,
    ...(inputs.envelope ? { envelope: inputs.envelope } : {}),
  };
  try {
    return await runRepairBatch(
      inputs.items,
      runOptions,
      { concurrency: options.concurrency, maxSeconds: options.maxSeconds },
      {
        fcDb,
        shDb,
        evidence,
        now: deps.now,
        signal: deps.signal,
        clock: deps.clock,
        onResult: (r) => {
          progress?.record(isRefused(r.result) ? r.code : undefined);
          deps.onResult?.(r);
        },
      },
    );
  } finally {
    progress?.stop();
  }
}

/**
 * The error a run stopped by ends with (exit 3, or the error itself when it is already exit 2 or 3),
 * a missing table named as a missing schema.
 * @example throw repairFailure(Object.assign(new Error('no table'), { code: 'ER_NO_SUCH_TABLE' }))
 */
export function repairFailure(e: unknown): Error {
  if (e instanceof EnvironmentError || e instanceof UsageError) return e;
  const hint =
    (e as { code?: string }).code === 'ER_NO_SUCH_TABLE'
      ? ' (schema missing: run `fcctl db init --side fc` / `--side sh`)'
      : '';
  return new EnvironmentError(
    `repair stopped by an error: ${String((e as Error)?.message ?? e).split('\n')[0]}${hint}`,
    { cause: e },
  );
}

/**
 * The `result` event of one outcome: line and category only for a plan run.
 * @example resultEventOf(outcome, false, true).dryRun // true
 */
export function resultEventOf(r: RepairOutcome, batch: boolean, dryRun: boolean): Record<string, unknown> {
  return {
    ...(batch ? { line: r.line } : {}),
    answerUuid: r.answerUuid,
    schId: r.schId,
    ...(batch ? { category: r.category } : {}),
    result: r.result,
    code: r.code,
    reason: r.reason,
    write: r.write,
    written: r.written,
    rereads: r.rereads,
    expected: r.expected,
    ...(r.rereads > 0 ? { lastExpected: r.lastExpected } : {}),
    authoritative: r.authoritative,
    dryRun,
  };
}

/**
 * The one line a terminal shows for the answer of single mode.
 * @example outcomeNote({ result: 'LOCAL_CHANGED', reason: 'x', rereads: 2 }) // 'LOCAL_CHANGED  x (after 2 re-reads)'
 */
export function outcomeNote(r: Pick<RepairOutcome, 'result' | 'reason' | 'rereads'>): string {
  return `${r.result}  ${r.reason}${r.rereads > 0 ? ` (after ${r.rereads} re-read${r.rereads > 1 ? 's' : ''})` : ''}`;
}
