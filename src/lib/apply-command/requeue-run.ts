/**
 * `apply-command requeue`, the I/O: read the selection (a `--from` file checked whole before
 * anything connects), the answers already recorded for the operation, then per command read the
 * facts, decide (`requeue.ts`) and — with `execute` — record the answer, apply the guarded write
 * and the audit row in ONE short SH transaction. The operation row is inserted first and is the
 * idempotency lock, as in `deliveries replay`. Before any of that, the operation id is bound to
 * its selection by a header row (its own statement), which also records when the operation
 * completed, so an interrupted `--dead` operation continues under the same id. Every decision, dry runs included, is a line of the
 * evidence file (the projection's append-only writer), format `fcctl.requeue-evidence.v1`:
 * - `{"type":"run", runId, operationId, selector, selectorSha256, execute, items, truncated, host, startedAt}`
 * - `{"type":"decision", runId, operationId, bizType, bizId, commandId, code, reason, repeated, dryRun, before, after, decidedAt}`
 * - `{"type":"refused-operation", runId, operationId, reason}` when the operation id belongs to another selection
 * - `{"type":"end", runId, exitCode, byCode, notRun, stoppedBy, endedAt}`
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { PoolConnection } from 'mysql2/promise';
import { runOrdered } from '../batch/ordered.js';
import { batchExitCode, EnvironmentError, UsageError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import type { Statement } from '../db/statement.js';
import { opDigest } from '../deliveries/replay.js';
import { EvidenceFile } from '../projection/evidence.js';
import {
  type BizKey,
  decideRequeue,
  isRefused,
  isTemporary,
  operationComplete,
  operationConflict,
  OPERATION_CONFLICT,
  type RecordedRequeue,
  REQUEUE_CODES,
  type RequeueCode,
  type RequeueDecision,
  type RequeueFacts,
  type RequeueOutcomeCode,
  type RequeueRow,
  type RequeueSelection,
  selectorOf,
  WOULD_REQUEUE,
} from './requeue.js';
import { LineError } from '../cli/record-file.js';
import { MAX_REQUEUE_ITEMS, parseRequeueFile, type RequeueTarget } from './requeue-input.js';
import { requeueSql } from './sql.js';

export const REQUEUE_EVIDENCE_FORMAT = 'fcctl.requeue-evidence.v1';

export interface RequeueOptions {
  readonly target: RequeueTarget;
  readonly operationId: string;
  /** write; without it, report what each command would answer (evidence lines marked dryRun) */
  readonly execute: boolean;
  readonly evidencePath: string;
  readonly concurrency: number;
  readonly maxSeconds: number;
}

export interface RequeueDeps {
  readonly shDb: () => Promise<Db>;
  /** standard input, for `--from -` */
  readonly stdin: AsyncIterable<unknown>;
  readonly now: () => Date;
  readonly signal: AbortSignal;
  readonly clock: () => number;
  readonly host?: string;
  /** each result, in selection order */
  readonly onResult?: (r: RequeueResult) => void;
}

/** One command's answer as printed. */
export interface RequeueResult {
  /** the line of the `--from` file, null otherwise */
  readonly line: number | null;
  readonly bizType: string;
  readonly bizId: string;
  readonly commandId: string | null;
  readonly code: RequeueOutcomeCode;
  readonly reason: string;
  readonly repeated: boolean;
}

export interface RequeueRunResult {
  readonly runId: string;
  readonly selector: string;
  readonly dryRun: boolean;
  readonly items: number;
  /** `--dead` found more DEAD rows than one run takes ({@link MAX_REQUEUE_ITEMS}) */
  readonly truncated: boolean;
  readonly results: readonly RequeueResult[];
  readonly byCode: Readonly<Record<string, number>>;
  readonly refused: number;
  readonly repeated: number;
  readonly notRun: number;
  readonly stoppedBy: 'done' | 'signal' | 'max-seconds' | 'error' | 'operation-conflict';
  /** the operation id was used for another selection: nothing was done */
  readonly operationConflict: string | null;
  readonly exitCode: number;
  readonly evidencePath: string;
  /** a database error that stopped the run (exit 3) */
  readonly error: unknown;
}

type Run = <T>(q: Statement) => Promise<T[]>;

interface HeaderRaw {
  selector: string;
  selector_sha256: string;
  completed_at: string | null;
}

interface RecordedRaw {
  biz_type: string;
  biz_id: string;
  selector: string;
  selector_sha256: string;
  code: string;
  reason: string;
  command_id: string | number | null;
}

const recordedOf = (r: RecordedRaw): RecordedRequeue => ({
  selector: r.selector,
  selectorSha256: r.selector_sha256,
  code: r.code as RequeueCode,
  reason: r.reason,
  commandId: r.command_id === null ? null : String(r.command_id),
});
const keyId = (k: BizKey) => `${k.bizType}\u0000${k.bizId}`;

async function readFileText(path: string, stdin: AsyncIterable<unknown>): Promise<string> {
  let bytes: Buffer;
  try {
    if (path === '-') {
      const chunks: Buffer[] = [];
      for await (const c of stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
      bytes = Buffer.concat(chunks);
    } else bytes = await readFile(path);
  } catch (err) {
    throw new UsageError(`--from ${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`--from ${path}: not UTF-8 text`);
  }
}

/** The selection of a target, a `--from` file read and checked whole (exit 2 on any bad line). */
async function selectionOf(target: RequeueTarget, stdin: AsyncIterable<unknown>): Promise<{ selection: RequeueSelection; lines: Array<BizKey & { line: number | null }> }> {
  if (target.kind === 'key') return { selection: target, lines: [{ ...target.key, line: null }] };
  if (target.kind === 'dead') return { selection: target, lines: [] };
  try {
    const lines = parseRequeueFile(await readFileText(target.path, stdin));
    return { selection: { kind: 'file', keys: lines }, lines };
  } catch (err) {
    if (err instanceof LineError) throw new UsageError(`--from ${target.path}: ${err.message}`);
    throw err;
  }
}

/** A schema without the requeue table is the environment's problem, with the fix named. */
function schemaHint(err: unknown): unknown {
  if ((err as { code?: string }).code === 'ER_NO_SUCH_TABLE') {
    return new EnvironmentError(`SH schema missing a table (${String((err as Error).message).split('\n')[0]}): run \`fcctl db init --side sh\``, { cause: err });
  }
  return err;
}

/** The guarded write matched nothing although the row was locked: re-read and decide again. */
class GenerationMoved extends Error {}
const RETRYABLE = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);
const MAX_ATTEMPTS = 3;

interface Decided {
  readonly decision: RequeueDecision;
  readonly row: RequeueRow | null;
}

/**
 * Runs one requeue operation. Bad input throws a UsageError before anything connects; a database
 * error before the first command throws; one during the run stops it (started commands finish)
 * and is returned as `error`.
 * @example const run = await runRequeue({ target: { kind: 'dead', reason: null }, operationId: 'INC-7', execute: false, evidencePath: 'requeue-evidence.jsonl', concurrency: 4, maxSeconds: 3600 }, deps)
 */
export async function runRequeue(options: RequeueOptions, deps: RequeueDeps): Promise<RequeueRunResult> {
  const { selection, lines } = await selectionOf(options.target, deps.stdin);
  const selector = selectorOf(selection);
  const digest = opDigest(options.operationId);
  const db = await deps.shDb();
  const evidence = await EvidenceFile.open(options.evidencePath);
  const runId = randomUUID();
  const host = deps.host ?? hostname();
  const line = (record: Record<string, unknown>) => evidence.append({ format: REQUEUE_EVIDENCE_FORMAT, runId, operationId: options.operationId, ...record });
  try {
    // The evidence file is open first, so a run refused for it binds nothing. The operation id is
    // bound to its selection (the header row) before any command is read or written, in its own
    // statement: a concurrent call with another selection is refused whole. A dry run binds
    // nothing; it only reads the binding.
    if (options.execute) {
      await db.query(requeueSql.bindOperation(digest, selector).sql, requeueSql.bindOperation(digest, selector).params).catch((err: unknown) => {
        if ((err as { code?: string }).code !== 'ER_DUP_ENTRY') throw schemaHint(err);
      });
    }
    const header = (await db.query<HeaderRaw>(requeueSql.header(digest).sql, requeueSql.header(digest).params).catch((err: unknown) => {
      throw schemaHint(err);
    }))[0] ?? null;
    const recorded = await db.query<RecordedRaw>(requeueSql.recorded(digest).sql, requeueSql.recorded(digest).params).catch((err: unknown) => {
      throw schemaHint(err);
    });
    const conflict = operationConflict([...(header ? [{ selector: header.selector, selectorSha256: header.selector_sha256 }] : []), ...recorded.map(recordedOf)], selector);
    const mode: RequeueFacts['mode'] = selection.kind === 'dead' ? 'dead' : 'named';
    const reasonFilter = selection.kind === 'dead' ? selection.reason : null;
    const priors = new Map(recorded.map((r) => [keyId({ bizType: r.biz_type, bizId: r.biz_id }), recordedOf(r)]));

    // `--dead`: a completed operation answers exactly its recorded commands again, none new; an
    // incomplete one (interrupted, or a command CLAIMED) repeats those and selects again the DEAD
    // rows it has not answered yet.
    let items = lines;
    let truncated = false;
    if (selection.kind === 'dead' && conflict === null) {
      items = recorded.map((r) => ({ bizType: r.biz_type, bizId: r.biz_id, line: null }));
      if (header?.completed_at == null) {
        for (let after = '0'; ; ) {
          const q = requeueSql.deadKeys(selection.reason, after, 1000);
          const page = await db.query<{ id: string | number; biz_type: string; biz_id: string }>(q.sql, q.params);
          items.push(...page.filter((r) => !priors.has(keyId({ bizType: r.biz_type, bizId: r.biz_id }))).map((r) => ({ bizType: r.biz_type, bizId: r.biz_id, line: null })));
          if (page.length < 1000 || items.length > MAX_REQUEUE_ITEMS) break;
          after = String(page[page.length - 1]!.id);
        }
        truncated = items.length > MAX_REQUEUE_ITEMS;
        items = items.slice(0, MAX_REQUEUE_ITEMS);
      }
    }

    await line({ type: 'run', selector: selector.text, selectorSha256: selector.sha256, execute: options.execute, items: items.length, truncated, host, startedAt: deps.now().toISOString() });
    if (conflict !== null) {
      await line({ type: 'refused-operation', reason: conflict });
      const exitCode = batchExitCode({ environment: false, failed: 1, interrupted: false });
      await line({ type: 'end', exitCode, byCode: { [OPERATION_CONFLICT]: 1 }, notRun: 0, stoppedBy: 'operation-conflict', endedAt: deps.now().toISOString() });
      return { runId, selector: selector.text, dryRun: !options.execute, items: 0, truncated, results: [], byCode: { [OPERATION_CONFLICT]: 1 }, refused: 1, repeated: 0, notRun: 0, stoppedBy: 'operation-conflict', operationConflict: conflict, exitCode, evidencePath: evidence.path, error: null };
    }

    const factsOf = (key: BizKey, prior: RecordedRequeue | null, row: RequeueRow | null): RequeueFacts => ({ mode, reasonFilter, execute: options.execute, key, selector, prior, row });
    const expected = (key: BizKey) => ({ ...key, selector: selector.text, states: mode === 'dead' ? ['DEAD'] : ['DEAD', 'FAILED'], reason: reasonFilter });
    const decideOne = async (key: BizKey): Promise<Decided> => {
      const prior = priors.get(keyId(key)) ?? null;
      if (prior) return { decision: decideRequeue(factsOf(key, prior, null)), row: null };
      if (!options.execute) {
        const q = requeueSql.command(key, false);
        const row = (await db.query<RequeueRow>(q.sql, q.params))[0] ?? null;
        return { decision: decideRequeue(factsOf(key, null, row)), row };
      }
      for (let attempt = 1; ; attempt++) {
        try {
          return await db.transaction((conn) => requeueInTransaction(conn, key));
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (attempt < MAX_ATTEMPTS && (err instanceof GenerationMoved || (code !== undefined && RETRYABLE.has(code)))) continue;
          throw schemaHint(err);
        }
      }
    };
    const requeueInTransaction = async (conn: PoolConnection, key: BizKey): Promise<Decided> => {
      const run: Run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T[];
      try {
        await run(requeueSql.claimOperation(digest, key, selector));
      } catch (err) {
        if ((err as { code?: string }).code !== 'ER_DUP_ENTRY') throw err;
        // Answered by a concurrent call (which has committed: our insert waited on it).
        const prior = (await run<RecordedRaw>(requeueSql.recordedOne(digest, key)))[0];
        if (!prior) throw new GenerationMoved('operation row vanished');
        return { decision: decideRequeue(factsOf(key, recordedOf(prior), null)), row: null };
      }
      const row = (await run<RequeueRow>(requeueSql.command(key, true)))[0] ?? null;
      const decision = decideRequeue(factsOf(key, null, row));
      if (decision.write) {
        const [res] = await conn.query(requeueSql.requeue(decision.write).sql, requeueSql.requeue(decision.write).params);
        if ((res as { affectedRows: number }).affectedRows !== 1) throw new GenerationMoved('the command changed between read and write');
      }
      // A temporary answer is audited but not kept, so the operation takes the command later.
      if (isTemporary(decision.code)) await run(requeueSql.forgetAnswer(digest, key));
      else await run(requeueSql.recordAnswer(digest, key, decision.code, decision.reason, decision.commandId));
      await run(requeueSql.audit({ outcome: decision.code, reason: decision.reason, operationId: options.operationId, runId, host, expected: expected(key), observed: { row, written: writtenOf(decision) } }));
      return { decision, row };
    };

    const summary = await runOrdered(items, { concurrency: options.concurrency, maxSeconds: options.maxSeconds }, { signal: deps.signal, clock: deps.clock, onResult: deps.onResult }, async (it): Promise<RequeueResult> => {
      const key = { bizType: it.bizType, bizId: it.bizId };
      const { decision: d, row } = await decideOne(key);
      await line({ type: 'decision', ...key, commandId: d.commandId, code: d.code, reason: d.reason, repeated: d.repeated, dryRun: !options.execute, before: row, after: writtenOf(d), decidedAt: deps.now().toISOString() });
      return { line: it.line, ...key, commandId: d.commandId, code: d.code, reason: d.reason, repeated: d.repeated };
    });

    // a dry run counts WOULD_REQUEUE where an executed run counts REQUEUED (a repeated REQUEUED was done by an earlier run)
    const byCode: Record<string, number> = Object.fromEntries([...REQUEUE_CODES.map((c) => (c === 'REQUEUED' && !options.execute ? WOULD_REQUEUE : c)), OPERATION_CONFLICT].map((c) => [c, 0]));
    for (const r of summary.results) byCode[r.code] = (byCode[r.code] ?? 0) + 1;
    const refused = summary.results.filter((r) => isRefused(r.code)).length;
    const exitCode = batchExitCode({ environment: summary.error !== null, failed: refused + summary.notRun, interrupted: summary.stoppedBy === 'signal' });
    if (options.execute && operationComplete({ stoppedBy: summary.stoppedBy, error: summary.error !== null, notRun: summary.notRun, truncated, codes: summary.results.map((r) => r.code) })) {
      await db.query(requeueSql.completeOperation(digest).sql, requeueSql.completeOperation(digest).params);
    }
    await line({ type: 'end', exitCode, byCode, notRun: summary.notRun, stoppedBy: summary.stoppedBy, endedAt: deps.now().toISOString() });
    return {
      runId, selector: selector.text, dryRun: !options.execute, items: items.length, truncated, results: summary.results, byCode, refused,
      repeated: summary.results.filter((r) => r.repeated).length, notRun: summary.notRun, stoppedBy: summary.stoppedBy, operationConflict: null, exitCode,
      evidencePath: evidence.path, error: summary.error,
    };
  } finally {
    await evidence.close();
  }
}

/** What a decision writes to the command, as evidence and audit show it. */
function writtenOf(d: RequeueDecision): Record<string, unknown> | null {
  return d.write ? { state: 'UNKNOWN', retryCount: 0, nextRetryAt: null, attempt: d.write.from.attempt, requestToken: d.write.from.requestToken, lastError: d.write.lastError } : null;
}
