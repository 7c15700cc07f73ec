/**
 * `apply-command requeue`: the decision, pure (issue 17). A DEAD (or FAILED) command goes back to
 * UNKNOWN with its retry budget reset and the same request token and attempt, so the next
 * resolve-unknown looks it up first and resends only when the flow center has nothing — a way
 * back from DEAD that can never restart a rejected or withdrawn instance. The runner
 * (`run.ts`) reads the facts and applies the write this returns.
 */
import { createHash } from 'node:crypto';
import { batchExitCode, EnvironmentError } from '../../cli/exit.js';
import type { Summary } from '../../cli/output.js';
import { COLUMN_WIDTH, type CommandGeneration, cutText } from '../types.js';

/** The stable answers for one command. */
export const REQUEUE_CODES = ['REQUEUED', 'NOT_REQUEUABLE', 'CLAIMED', 'NO_COMMAND'] as const;
export type RequeueCode = (typeof REQUEUE_CODES)[number];

/** The operation id was used before for another selection: nothing is written or recorded. */
export const OPERATION_CONFLICT = 'OPERATION_CONFLICT' as const;
/** A dry run's `REQUEUED`: nothing was written, so it must never read as done (issue 17). */
export const WOULD_REQUEUE = 'WOULD_REQUEUE' as const;
export type RequeueOutcomeCode = RequeueCode | typeof OPERATION_CONFLICT | typeof WOULD_REQUEUE;

/** Longest reason recorded (`fcctl_requeue_operation.reason` is VARCHAR(512)). */
export const MAX_REASON_LENGTH = 512;

export interface BizKey {
  readonly bizType: string;
  readonly bizId: string;
}

/**
 * Which commands an operation asks for: named ones (one key, or a file's keys), or the DEAD rows
 * (optionally of one reason code). `named` may requeue DEAD or FAILED rows, `dead` only DEAD ones.
 */
export type RequeueSelection =
  | { readonly kind: 'key'; readonly key: BizKey }
  | { readonly kind: 'file'; readonly keys: readonly BizKey[] }
  | { readonly kind: 'dead'; readonly reason: string | null };

/**
 * What an operation is recorded as: a short text for people and the SHA-256 of its canonical
 * form. The same operation id with another selection is an {@link OPERATION_CONFLICT}; a file is
 * identified by its set of keys (order and layout do not matter).
 * @example selectorOf({ kind: 'dead', reason: 'UNEXPECTED_BRANCH' }).text // 'dead --reason UNEXPECTED_BRANCH'
 */
export function selectorOf(s: RequeueSelection): { readonly text: string; readonly sha256: string } {
  const sha = (v: unknown) => createHash('sha256').update(JSON.stringify(v), 'utf8').digest('hex');
  switch (s.kind) {
    case 'key':
      return {
        text: cutText(`key ${JSON.stringify(s.key.bizType)} ${JSON.stringify(s.key.bizId)}`, 255),
        sha256: sha(['key', s.key.bizType, s.key.bizId]),
      };
    case 'file': {
      const keys = s.keys
        .map((k) => [k.bizType, k.bizId])
        .sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : a[1]! < b[1]! ? -1 : a[1]! > b[1]! ? 1 : 0));
      return { text: `file of ${keys.length} command(s)`, sha256: sha(['file', keys]) };
    }
    case 'dead':
      return { text: s.reason === null ? 'dead' : `dead --reason ${s.reason}`, sha256: sha(['dead', s.reason]) };
  }
}

/**
 * The code before ':' in `last_error` (as `apply-command scan` groups them), null when empty.
 * @example reasonCodeOf('UNEXPECTED_BRANCH: RESTARTED, instance FI-9 status 10') // 'UNEXPECTED_BRANCH'
 */
export function reasonCodeOf(lastError: string | null): string | null {
  if (lastError === null) return null;
  const code = lastError.split(':', 1)[0]!;
  return code === '' ? null : code;
}

/** A `flow_apply_command` row as requeue reads it (locked, with `--execute`). */
export interface RequeueRow {
  readonly id: string;
  readonly biz_type: string;
  readonly biz_id: string;
  readonly state: string;
  readonly retry_count: number;
  readonly attempt: number;
  readonly request_token: string;
  readonly last_error: string | null;
  readonly last_branch: string | null;
  readonly remote_status: number | null;
  readonly remote_instance_id: string | null;
  readonly claim_owner: string | null;
  readonly claim_expires_at: string | null;
  /** the database's verdict: an owner with an expiry not yet passed (no expiry counts as expired, as the claim does) */
  readonly claim_live: number;
}

/** An answer recorded for this operation and business key. */
export interface RecordedRequeue {
  readonly selector: string;
  readonly selectorSha256: string;
  readonly code: RequeueCode;
  readonly reason: string;
  readonly commandId: string | null;
}

export interface RequeueFacts {
  /** `named`: DEAD or FAILED may be requeued; `dead`: only DEAD, of `reasonFilter` when given */
  readonly mode: 'named' | 'dead';
  readonly reasonFilter: string | null;
  /** false: a dry run, whose requeue is only `WOULD_REQUEUE` */
  readonly execute: boolean;
  readonly key: BizKey;
  readonly selector: { readonly text: string; readonly sha256: string };
  readonly prior: RecordedRequeue | null;
  readonly row: RequeueRow | null;
}

/** The write of a REQUEUED answer, conditional on the generation as read (SPEC §2). */
export interface RequeueWrite {
  readonly from: CommandGeneration;
  /** last_error afterwards: what the row was, for a person, until resolve-unknown writes its own */
  readonly lastError: string;
}

export interface RequeueDecision {
  readonly code: RequeueOutcomeCode;
  readonly reason: string;
  /** the answer was recorded by an earlier call with this operation id: nothing is written */
  readonly repeated: boolean;
  readonly commandId: string | null;
  readonly write?: RequeueWrite;
}

const FIVE = ['PENDING', 'UNKNOWN', 'DONE', 'FAILED', 'DEAD'];

/** Why a state is not requeued (null: it may be). */
function stateRefusal(row: RequeueRow, mode: RequeueFacts['mode']): string | null {
  switch (row.state) {
    case 'DEAD':
      return null;
    case 'FAILED':
      return mode === 'named' ? null : 'FAILED: no longer DEAD (it is retried with backoff already)';
    case 'UNKNOWN':
      return 'UNKNOWN: already waiting for resolve-unknown, which looks it up first';
    case 'PENDING':
      return 'PENDING: not sent yet by its service; resolve-unknown takes it after --pending-grace';
    case 'DONE':
      return `DONE: settled${row.remote_instance_id ? ` (instance ${row.remote_instance_id} status ${row.remote_status ?? '?'})` : ''}; a settled command is never resent`;
    default:
      return `state ${JSON.stringify(row.state)} is none of ${FIVE.join(', ')}`;
  }
}

/**
 * The answer for one command, in this order:
 * 1. an answer recorded for this operation and key → that answer again, nothing written (or
 *    `OPERATION_CONFLICT` when it was recorded under another selection);
 * 2. no row → `NO_COMMAND`;
 * 3. a state other than DEAD (or FAILED, when named) → `NOT_REQUEUABLE` with the state's reason;
 *    with `--dead --reason`, a DEAD row whose reason code is no longer that one too;
 * 4. under a live claim → `CLAIMED` (a resolver holds it: try again after its lease);
 * 5. otherwise → `REQUEUED`: UNKNOWN, retry budget reset, same token and attempt (in a dry run
 *    `WOULD_REQUEUE`, which writes nothing).
 * @example decideRequeue({ mode: 'named', reasonFilter: null, execute: true, key, selector, prior: null, row: null }).code // 'NO_COMMAND'
 */
export function decideRequeue(f: RequeueFacts): RequeueDecision {
  const { prior, row } = f;
  if (prior) {
    if (prior.selectorSha256 !== f.selector.sha256) {
      return {
        code: OPERATION_CONFLICT,
        reason: `operation id already used for ${prior.selector} (answered ${prior.code} for this command), not for ${f.selector.text}; use a new operation id`,
        repeated: false,
        commandId: null,
      };
    }
    return { code: prior.code, reason: prior.reason, repeated: true, commandId: prior.commandId };
  }
  const answer = (code: RequeueCode | typeof WOULD_REQUEUE, reason: string, write?: RequeueWrite): RequeueDecision => ({
    code,
    // recorded in a VARCHAR(512): the first answer and its repeats must be the same text
    reason: cutText(reason, MAX_REASON_LENGTH),
    repeated: false,
    commandId: row ? String(row.id) : null,
    ...(write ? { write } : {}),
  });
  if (!row)
    return answer(
      'NO_COMMAND',
      `no flow_apply_command for biz type ${JSON.stringify(f.key.bizType)}, biz id ${JSON.stringify(f.key.bizId)}`,
    );
  const refusal = stateRefusal(row, f.mode);
  if (refusal) return answer('NOT_REQUEUABLE', refusal);
  const code = reasonCodeOf(row.last_error);
  if (f.mode === 'dead' && f.reasonFilter !== null && code !== f.reasonFilter) {
    return answer('NOT_REQUEUABLE', `its reason is ${code ?? 'none'} now, not ${f.reasonFilter}`);
  }
  if (Number(row.claim_live) === 1)
    return answer(
      'CLAIMED',
      `claimed by ${row.claim_owner} until ${row.claim_expires_at}; requeue it once that lease is over`,
    );
  const retries = Number(row.retry_count);
  const was = `${row.state} after ${retries} ${retries === 1 ? 'retry' : 'retries'}${row.last_error ? ` (${row.last_error})` : ''}`;
  const write = {
    from: {
      id: String(row.id),
      state: row.state as CommandGeneration['state'],
      retryCount: retries,
      attempt: Number(row.attempt),
      requestToken: row.request_token,
    },
    lastError: cutText(`REQUEUED: was ${was}`, COLUMN_WIDTH.lastError),
  };
  // the write travels with a dry run's answer too (the evidence shows what it would write); the runner applies it only with --execute
  if (!f.execute)
    return answer(
      WOULD_REQUEUE,
      `would be UNKNOWN again with its retry budget reset, same request token and attempt ${row.attempt} (resolve-unknown would look it up first); is ${was}`,
      write,
    );
  return answer(
    'REQUEUED',
    `UNKNOWN again with its retry budget reset, same request token and attempt ${row.attempt} (resolve-unknown looks it up first); was ${was}`,
    write,
  );
}

/**
 * Why an operation id cannot serve this selection — it answered under another one already — or
 * null. Checked before any command; {@link decideRequeue} checks it again per command (a
 * concurrent call with another selection).
 * @example operationConflict([{ selector: 'dead', selectorSha256: 'a…' }], selectorOf({ kind: 'dead', reason: 'UNEXPECTED_BRANCH' })) // 'operation id already used for dead, …'
 */
export function operationConflict(
  recorded: ReadonlyArray<Pick<RecordedRequeue, 'selector' | 'selectorSha256'>>,
  selector: { readonly text: string; readonly sha256: string },
): string | null {
  const other = recorded.find((r) => r.selectorSha256 !== selector.sha256);
  return other
    ? `operation id already used for ${other.selector}, not for ${selector.text}; use a new operation id`
    : null;
}

/**
 * True for an answer that holds only for now (a resolver's lease): it is not recorded, so the
 * same operation id tried again after the lease decides that command afresh.
 * @example isTemporary('CLAIMED') // true
 */
export function isTemporary(code: RequeueOutcomeCode): boolean {
  return code === 'CLAIMED';
}

/**
 * Whether a run leaves its operation complete: every command it selected has a final answer
 * (none not run, none temporary, the selection not cut at the limit, no error). Only then does a
 * re-run of `--dead` under the same id stop selecting and just repeat the recorded answers.
 * @example operationComplete({ stoppedBy: 'done', error: false, notRun: 0, truncated: false, codes: ['REQUEUED'] }) // true
 */
export function operationComplete(r: {
  readonly stoppedBy: string;
  readonly error: boolean;
  readonly notRun: number;
  readonly truncated: boolean;
  readonly codes: readonly RequeueOutcomeCode[];
}): boolean {
  return (
    r.stoppedBy === 'done' &&
    !r.error &&
    r.notRun === 0 &&
    !r.truncated &&
    !r.codes.some((c) => isTemporary(c) || c === OPERATION_CONFLICT)
  );
}

/**
 * True when the command was not requeued: the run exits 1 (SPEC §2).
 * @example isRefused('NOT_REQUEUABLE') // true
 */
export function isRefused(code: RequeueOutcomeCode): boolean {
  // a dry run in which every command would be requeued is exit 0, as the executed one would be
  return code !== 'REQUEUED' && code !== WOULD_REQUEUE;
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
  /** `--dead` found more DEAD rows than one run takes (`MAX_REQUEUE_ITEMS`) */
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

/**
 * Answers by code, every code present (0 when none): a dry run counts WOULD_REQUEUE where an
 * executed run counts REQUEUED (a repeated REQUEUED was done by an earlier run).
 * @example requeueByCode([{ code: 'CLAIMED' }], true).CLAIMED // 1
 */
export function requeueByCode(
  results: ReadonlyArray<Pick<RequeueResult, 'code'>>,
  execute: boolean,
): Record<string, number> {
  const byCode: Record<string, number> = Object.fromEntries(
    [...REQUEUE_CODES.map((c) => (c === 'REQUEUED' && !execute ? WOULD_REQUEUE : c)), OPERATION_CONFLICT].map((c) => [
      c,
      0,
    ]),
  );
  for (const r of results) byCode[r.code] = (byCode[r.code] ?? 0) + 1;
  return byCode;
}

/**
 * The run's exit code (SPEC §2): 3 on a database error, 1 when a command was refused or not run
 * or a signal stopped the run, 0 when every command was REQUEUED (in a dry run: WOULD_REQUEUE).
 * @example requeueExitCode({ error: false, refused: 1, notRun: 0, interrupted: false }) // 1
 */
export function requeueExitCode(r: {
  readonly error: boolean;
  readonly refused: number;
  readonly notRun: number;
  readonly interrupted: boolean;
}): number {
  return batchExitCode({ environment: r.error, failed: r.refused + r.notRun, interrupted: r.interrupted });
}

/**
 * The summary line of a run and, for the terminal, the codes that occurred (`byCode` then
 * stays out of the fields: the counts show it).
 * @example summarizeRequeue('apply-command requeue', run, { operationId: 'INC-7', elapsedMs: 420, json: true }).fields.seconds // 0.4
 */
export function summarizeRequeue(
  command: string,
  run: RequeueRunResult,
  at: { readonly operationId: string; readonly elapsedMs: number; readonly json: boolean },
): { fields: Summary; counts: Record<string, number> | undefined } {
  const counts = at.json ? undefined : Object.fromEntries(Object.entries(run.byCode).filter(([, n]) => n > 0));
  const fields = {
    command,
    exitCode: run.exitCode,
    dryRun: run.dryRun,
    operationId: at.operationId,
    selector: run.selector,
    items: run.items,
    answered: run.results.length,
    ...(counts ? {} : { byCode: run.byCode }),
    repeated: run.repeated,
    refused: run.refused,
    notRun: run.notRun,
    truncated: run.truncated,
    stoppedBy: run.stoppedBy,
    evidence: run.evidencePath,
    seconds: Math.round(at.elapsedMs / 100) / 10,
  };
  return { fields, counts };
}

/**
 * The exit-3 error of a run stopped by the database: an {@link EnvironmentError} as it came, any
 * other named by its first line.
 * @example requeueRunError(new Error('read ECONNRESET\n…')).message // 'requeue stopped by a database error: read ECONNRESET'
 */
export function requeueRunError(error: unknown): EnvironmentError {
  if (error instanceof EnvironmentError) return error;
  return new EnvironmentError(
    `requeue stopped by a database error: ${String((error as Error)?.message ?? error).split('\n')[0]}`,
    { cause: error },
  );
}

/** What a decision writes to the command, as evidence and audit show it. */
export function writtenOf(d: RequeueDecision): Record<string, unknown> | null {
  return d.write
    ? {
        state: 'UNKNOWN',
        retryCount: 0,
        nextRetryAt: null,
        attempt: d.write.from.attempt,
        requestToken: d.write.from.requestToken,
        lastError: d.write.lastError,
      }
    : null;
}
