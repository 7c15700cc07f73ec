/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import { EnvironmentError } from '../../cli/exit.js';
import type { Statement } from '../../db/statement.js';
import {
  type BizKey,
  decideRequeue,
  isTemporary,
  operationConflict,
  type RecordedRequeue,
  type RequeueCode,
  type RequeueFacts,
  type RequeueRow,
  writtenOf,
} from './decide.js';
import { MAX_REQUEUE_ITEMS, type SelectedKey } from './input.js';
import { requeueSql } from './sql.js';
import type { Decided, HeaderRaw, Operation, Prior, RecordedRaw } from './types.js';

type Run = <T>(q: Statement) => Promise<T[]>;

const recordedOf = (r: RecordedRaw): RecordedRequeue => ({
  selector: r.selector,
  selectorSha256: r.selector_sha256,
  code: r.code as RequeueCode,
  reason: r.reason,
  commandId: r.command_id === null ? null : String(r.command_id),
});
const keyId = (k: BizKey) => `${k.bizType}\u0000${k.bizId}`;

/** A schema without the requeue table is the environment's problem, with the fix named. */
function schemaHint(err: unknown): unknown {
  if ((err as { code?: string }).code === 'ER_NO_SUCH_TABLE') {
    return new EnvironmentError(
      `SH schema missing a table (${String((err as Error).message).split('\n')[0]}): run \`fcctl db init --side sh\``,
      { cause: err },
    );
  }
  return err;
}

/** The guarded write matched nothing although the row was locked: re-read and decide again. */
class GenerationMoved extends Error {}
const RETRYABLE = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);
const MAX_ATTEMPTS = 3;

/**
 * Binds the operation id to its selection (the header row) before any command is read or written,
 * in its own statement: a concurrent call with another selection is refused whole. A dry run
 * binds nothing; it only reads the binding.
 */
export async function bindOperation(op: Operation): Promise<void> {
  const q = requeueSql.bindOperation(op.digest, op.selector);
  await op.db.query(q.sql, q.params).catch((err: unknown) => {
    if ((err as { code?: string }).code !== 'ER_DUP_ENTRY') throw schemaHint(err);
  });
}

/** Marks the operation complete (its header row), so a repeated call reports it done. */
export async function completeOperation(op: Operation): Promise<void> {
  const q = requeueSql.completeOperation(op.digest);
  await op.db.query(q.sql, q.params);
}

/** The operation's header and answers, and whether they belong to another selection. */
export async function readPrior(op: Operation): Promise<Prior> {
  const h = requeueSql.header(op.digest);
  const header =
    (
      await op.db.query<HeaderRaw>(h.sql, h.params).catch((err: unknown) => {
        throw schemaHint(err);
      })
    )[0] ?? null;
  const r = requeueSql.recorded(op.digest);
  const recorded = await op.db.query<RecordedRaw>(r.sql, r.params).catch((err: unknown) => {
    throw schemaHint(err);
  });
  const conflict = operationConflict(
    [
      ...(header ? [{ selector: header.selector, selectorSha256: header.selector_sha256 }] : []),
      ...recorded.map(recordedOf),
    ],
    op.selector,
  );
  return {
    header,
    recorded,
    conflict,
    byKey: new Map(recorded.map((x) => [keyId({ bizType: x.biz_type, bizId: x.biz_id }), recordedOf(x)])),
  };
}

/**
 * The commands the run answers. `--dead`: a completed operation answers exactly its recorded
 * commands again, none new; an incomplete one (interrupted, or a command CLAIMED) repeats those
 * and selects again the DEAD rows it has not answered yet.
 */
export async function itemsOf(
  op: Operation,
  lines: SelectedKey[],
  prior: Prior,
): Promise<{ items: SelectedKey[]; truncated: boolean }> {
  if (op.selection.kind !== 'dead' || prior.conflict !== null) return { items: lines, truncated: false };
  const items: SelectedKey[] = prior.recorded.map((r) => ({ bizType: r.biz_type, bizId: r.biz_id, line: null }));
  if (prior.header?.completed_at != null) return { items, truncated: false };
  for (let after = '0'; ; ) {
    const q = requeueSql.deadKeys(op.selection.reason, after, 1000);
    const page = await op.db.query<{ id: string | number; biz_type: string; biz_id: string }>(q.sql, q.params);
    items.push(
      ...page
        .filter((r) => !prior.byKey.has(keyId({ bizType: r.biz_type, bizId: r.biz_id })))
        .map((r) => ({ bizType: r.biz_type, bizId: r.biz_id, line: null })),
    );
    if (page.length < 1000 || items.length > MAX_REQUEUE_ITEMS) break;
    after = String(page[page.length - 1]!.id);
  }
  return { items: items.slice(0, MAX_REQUEUE_ITEMS), truncated: items.length > MAX_REQUEUE_ITEMS };
}

const factsOf = (op: Operation, key: BizKey, prior: RecordedRequeue | null, row: RequeueRow | null): RequeueFacts => ({
  mode: op.mode,
  reasonFilter: op.reasonFilter,
  execute: op.options.execute,
  key,
  selector: op.selector,
  prior,
  row,
});

/** One command's decision: the recorded answer, a dry run's read, or the transaction (retried on a deadlock or a moved generation). */
export async function decideOne(op: Operation, prior: Prior, key: BizKey): Promise<Decided> {
  const recorded = prior.byKey.get(keyId(key)) ?? null;
  if (recorded) return { decision: decideRequeue(factsOf(op, key, recorded, null)), row: null };
  if (!op.options.execute) {
    const q = requeueSql.command(key, false);
    const row = (await op.db.query<RequeueRow>(q.sql, q.params))[0] ?? null;
    return { decision: decideRequeue(factsOf(op, key, null, row)), row };
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await op.db.transaction((conn) => requeueInTransaction(op, conn, key));
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (attempt < MAX_ATTEMPTS && (err instanceof GenerationMoved || (code !== undefined && RETRYABLE.has(code))))
        continue;
      throw schemaHint(err);
    }
  }
}

/** Claim the answer, read the row locked, decide, write, record (or forget) the answer, audit: one transaction. */
async function requeueInTransaction(op: Operation, conn: PoolConnection, key: BizKey): Promise<Decided> {
  const run: Run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T[];
  try {
    await run(requeueSql.claimOperation(op.digest, key, op.selector));
  } catch (err) {
    if ((err as { code?: string }).code !== 'ER_DUP_ENTRY') throw err;
    // Answered by a concurrent call (which has committed: our insert waited on it).
    const prior = (await run<RecordedRaw>(requeueSql.recordedOne(op.digest, key)))[0];
    if (!prior) throw new GenerationMoved('operation row vanished');
    return { decision: decideRequeue(factsOf(op, key, recordedOf(prior), null)), row: null };
  }
  const row = (await run<RequeueRow>(requeueSql.command(key, true)))[0] ?? null;
  const decision = decideRequeue(factsOf(op, key, null, row));
  if (decision.write) {
    const w = requeueSql.requeue(decision.write);
    const [res] = await conn.query(w.sql, w.params);
    if ((res as { affectedRows: number }).affectedRows !== 1)
      throw new GenerationMoved('the command changed between read and write');
  }
  // A temporary answer is audited but not kept, so the operation takes the command later.
  if (isTemporary(decision.code)) await run(requeueSql.forgetAnswer(op.digest, key));
  else await run(requeueSql.recordAnswer(op.digest, key, decision.code, decision.reason, decision.commandId));
  const expected = {
    ...key,
    selector: op.selector.text,
    states: op.mode === 'dead' ? ['DEAD'] : ['DEAD', 'FAILED'],
    reason: op.reasonFilter,
  };
  await run(
    requeueSql.audit({
      outcome: decision.code,
      reason: decision.reason,
      operationId: op.options.operationId,
      runId: op.runId,
      host: op.host,
      expected,
      observed: { row, written: writtenOf(decision) },
    }),
  );
  return { decision, row };
}
