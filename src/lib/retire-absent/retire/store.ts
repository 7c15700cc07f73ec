/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import { EnvironmentError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import { RowMoved } from '../../db/row-moved.js';
import type { Statement } from '../../db/statement.js';
import {
  decideProof,
  decideRetire,
  type FcNow,
  type LocalNow,
  type ProofFacts,
  proofIdRefusal,
  type ProofRefusal,
  type ProofRefusalReason,
  type RetireDecision,
  type RetireEntry,
  type RetireProof,
} from '../decide.js';
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
import type { Expected } from './decide.js';
import type { RetireRunDeps, RetireRunOptions } from './types.js';

const MAX_ATTEMPTS = 3;

/**
 * Step 1, the proof as a whole: what reading found, its age and FC database ({@link decideProof});
 * then its id: a proof is its id AND its digest; an id another proof already used is refused as a
 * whole (a read, in a dry run too). A race of two such proofs is caught per row, under the lock,
 * by decideRetire (the digest of the RETIRED audit row).
 */
export async function proofRefusal(o: RetireRunOptions, deps: RetireRunDeps): Promise<ProofRefusal | null> {
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

/**
 * The audit row of a proof refused as a whole: action `RETIRE_ABSENT`, outcome `REFUSED`, reason
 * `CODE: detail`, the proof id and school as the file gives them (null when unreadable), no
 * answer. A failure to write it is exit 3, naming the refusal it could not record.
 */
export async function auditProofRefusal(
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

/** The fresh FC lookup of one answer, with the time taken just before the query. */
export async function lookupFc(fc: Db, answerUuid: string, now: () => Date): Promise<FcNow> {
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

/** One entry's local step: the entry, FC's answer as just looked up, and the run it belongs to. */
export interface SettleStep {
  readonly entry: RetireEntry;
  readonly fcNow: FcNow;
  readonly expected: Expected;
  readonly p: RetireProof;
  readonly o: RetireRunOptions;
  readonly host: string;
}

/**
 * The local step of one entry. Dry run: read, decide, write nothing. Execute: one transaction —
 * lock the row (`FOR UPDATE`), decide on what is locked, the guarded UPDATE for a RETIRED
 * decision (exactly one row, or the transaction is retried), one audit row for every decision.
 */
export async function settle(sh: Db, step: SettleStep): Promise<Settled> {
  const { entry, fcNow, p, o } = step;
  if (!o.execute) {
    const q = retireSql.localRow(entry.answerUuid, entry.schId, false);
    const row = (await sh.query<LocalDbRow>(q.sql, q.params))[0];
    const local = await localWithRetirement(row, entry, async (a) => sh.query<RetiredAuditDbRow>(a.sql, a.params));
    return { decision: decideRetire(entry, fcNow, local, p.taskStart, 'dry-run'), local, retiredAt: null };
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await sh.transaction((conn) => settleInTransaction(conn, step));
    } catch (err) {
      if (err instanceof RowMoved && attempt < MAX_ATTEMPTS) continue;
      throw err;
    }
  }
}

async function settleInTransaction(conn: PoolConnection, step: SettleStep): Promise<Settled> {
  const { entry, fcNow, expected, p, o, host } = step;
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
