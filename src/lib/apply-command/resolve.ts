/**
 * `apply-command resolve-unknown`: settles commands whose send outcome is unknown (SPEC §9).
 * Claim with a lease (short transaction) → look up (no transaction open) → resend only when not
 * found → one guarded write per row. Bounded by p-limit, `--max-rows`, `--max-seconds`, the
 * lease, and a stop signal; a flow center that answers nothing but errors stops the run early
 * instead of spending every row's retry budget, and one that refuses our credentials (any 401; a
 * 403 before it accepted anything signed) stops it at the first refusal: a wrong secret is the
 * run's problem, never the rows'.
 */
import pLimit from 'p-limit';
import type { RetryPolicy } from '../deliveries/decide.js';
import { newClaimOwner } from '../deliveries/relay.js';
import { InFlight } from '../batch/in-flight.js';
import { WriteBatcher } from '../db/batch.js';
import type { Db } from '../db/connect.js';
import type { ApplyRequest, ApplyResult, LookupResult } from '../flow/client.js';
import { planWrite, refusesCredentials, resolve, type RowResult, signatureAccepted, type Transition } from './decide.js';
import { applyWrite, claimRows, claimStart, type MirrorOutcome, otherAppKeySelect, peekSelect } from './sql.js';
import { type ApplyCommandRow, COLUMN_WIDTH, cutText, generationOf } from './types.js';

/** The two calls resolve makes; `FlowClient` is one, tests may pass another. */
export interface FlowApi {
  lookup(bizType: string, bizId: string): Promise<LookupResult>;
  apply(req: ApplyRequest): Promise<ApplyResult>;
}

export interface ResolveOptions {
  readonly batchSize: number;
  readonly concurrency: number;
  readonly maxRows: number;
  readonly maxSeconds: number;
  readonly leaseSeconds: number;
  readonly pendingGraceSeconds: number;
  readonly retry: RetryPolicy;
  readonly dryRun: boolean;
  /** per flow-center request; a row is only started while its lease outlasts its requests */
  readonly requestTimeoutMs: number;
  /** this many flow-center errors in a row with no good answer between them stop the run */
  readonly maxConsecutiveErrors: number;
}

/** What one row came to, as reported in events; a DONE says what became of its mirror. */
export type RowReport =
  | Exclude<RowResult, { kind: 'done' }>
  | (Extract<RowResult, { kind: 'done' }> & { readonly mirror?: MirrorOutcome })
  /** the guarded write matched nothing: another worker or the service moved the row on */
  | { readonly kind: 'stale'; readonly would: RowResult['kind'] }
  /** dry run: the lookup found nothing, so a run would resend the apply */
  | { readonly kind: 'would-post' };

export interface ResolveSummary {
  claimed: number;
  lookups: number;
  posts: number;
  done: number;
  doneViaLookup: number;
  doneViaApply: number;
  failed: number;
  dead: number;
  released: number;
  stale: number;
  wouldPost: number;
  /** DONE rows whose instance is in an earlier round than the command's attempt (flagged in last_error) */
  roundBehind: number;
  /** DONE rows with no service_apply row at claim to mirror the status into (one inserted since is not written) */
  mirrorMissing: number;
  /** DONE rows whose service_apply.flow_status changed after the claim: left as the service wrote it */
  mirrorChanged: number;
  /** DONE rows whose service_apply row, there at claim, was deleted before the write */
  mirrorDeleted: number;
  /** rows resolve would take but whose apply app key is not the configured one: never touched */
  otherAppKey: number;
  branches: Record<string, number>;
  failedByReason: Record<string, number>;
  deadByReason: Record<string, number>;
  stoppedBy: 'drained' | 'max-rows' | 'max-seconds' | 'signal' | 'flow-center-errors' | 'credentials-refused';
  /** the last error when the run stopped for `maxConsecutiveErrors` */
  flowCenterErrors?: string;
  /** the refusal (401/403) that stopped the run */
  credentialsRefused?: string;
}

export interface ResolveDeps {
  readonly db: Db;
  readonly flow: FlowApi;
  /** the configured app key: only its rows are taken */
  readonly appKey: string;
  readonly signal: AbortSignal;
  /** milliseconds, monotonic enough for budgets and leases */
  readonly clock: () => number;
  readonly owner?: string;
  readonly onRow?: (row: ApplyCommandRow, report: RowReport) => void;
}

function emptySummary(): ResolveSummary {
  return {
    claimed: 0, lookups: 0, posts: 0, done: 0, doneViaLookup: 0, doneViaApply: 0, failed: 0, dead: 0, released: 0, stale: 0, wouldPost: 0,
    roundBehind: 0, mirrorMissing: 0, mirrorChanged: 0, mirrorDeleted: 0, otherAppKey: 0, branches: {}, failedByReason: {}, deadByReason: {}, stoppedBy: 'drained',
  };
}

const bump = (m: Record<string, number>, k: string) => {
  m[k] = (m[k] ?? 0) + 1;
};

function count(s: ResolveSummary, r: RowReport): void {
  switch (r.kind) {
    case 'done':
      s.done += 1;
      if (r.via === 'lookup') s.doneViaLookup += 1;
      else s.doneViaApply += 1;
      if (r.roundBehind) s.roundBehind += 1;
      if (r.mirror === 'missing') s.mirrorMissing += 1;
      if (r.mirror === 'changed') s.mirrorChanged += 1;
      if (r.mirror === 'deleted') s.mirrorDeleted += 1;
      break;
    case 'failed':
      if (r.dead) s.dead += 1;
      else s.failed += 1;
      bump(r.dead ? s.deadByReason : s.failedByReason, r.reason);
      break;
    case 'dead':
      s.dead += 1;
      bump(s.deadByReason, r.reason);
      break;
    case 'released':
      s.released += 1;
      break;
    case 'stale':
      s.stale += 1;
      break;
    case 'would-post':
      s.wouldPost += 1;
      break;
  }
}

/** Whether a flow-center answer is an error (any kind): used for the consecutive-error stop. */
const isError = (r: LookupResult | ApplyResult) => r.kind !== 'found' && r.kind !== 'not-found' && r.kind !== 'applied' && r.kind !== 'unknown-branch';

/**
 * Runs resolve-unknown. Throws only for database errors (the command maps them to exit 3);
 * every flow-center failure is a row result.
 */
export async function runResolve(options: ResolveOptions, deps: ResolveDeps): Promise<ResolveSummary> {
  const summary = emptySummary();
  const started = deps.clock();
  const deadline = started + options.maxSeconds * 1000;
  const http = pLimit(options.concurrency);
  // Row writes are independent and guarded one by one: they go to the database in groups. A row's
  // request slot is free before its write, so a few milliseconds of lingering cost no throughput.
  const writes = new WriteBatcher(deps.db, { lingerMs: 20 });
  /** a database error that ends the run (the command maps it to exit 3); rows not started are left alone */
  let fatal: unknown = null;
  let errorStreak = 0;
  let lastError = '';
  let tripped = false;
  /** set by the first 401/403: the run stops, and rows whose answer was an error are released */
  let refused: string | null = null;
  /** whether the flow center has accepted a signed request of this run (then a 403 is the row's) */
  let accepted = false;

  const report = (row: ApplyCommandRow, r: RowReport) => {
    count(summary, r);
    deps.onRow?.(row, r);
  };
  const noteAnswer = (r: LookupResult | ApplyResult, what: string) => {
    if (r.kind === 'applied' || r.kind === 'unknown-branch') bump(summary.branches, cutText(r.branch, COLUMN_WIDTH.lastBranch));
    const refusal = refusesCredentials(r, accepted);
    if (signatureAccepted(r)) accepted = true;
    if (refusal && refused === null) {
      refused = `HTTP ${'status' in r ? r.status : ''} on ${what}${'detail' in r && r.detail ? `: ${r.detail}` : ''}`;
      tripped = true;
    }
    if (!isError(r)) {
      errorStreak = 0;
      return;
    }
    errorStreak += 1;
    lastError = `${r.kind}${'status' in r ? ` ${r.status}` : ''}: ${'detail' in r ? r.detail : ''}`;
    if (errorStreak >= options.maxConsecutiveErrors) tripped = true;
  };
  /** After a refusal, an error answer says nothing about the row: it is released, not failed. */
  const releasedByRefusal = (r: LookupResult | ApplyResult) => refused !== null && isError(r);
  const stopReason = (): ResolveSummary['stoppedBy'] | null => {
    if (refused !== null) return 'credentials-refused';
    if (tripped) return 'flow-center-errors';
    if (deps.signal.aborted) return 'signal';
    if (summary.claimed >= options.maxRows) return 'max-rows';
    if (deps.clock() >= deadline) return 'max-seconds';
    return null;
  };
  /** Stops that also give back rows claimed but not started (budgets let them finish). */
  const halted = () => tripped || deps.signal.aborted || fatal !== null;

  /** The stop the run ended with, when it was the flow center's (set once every row has settled). */
  const finishStop = () => {
    if (refused !== null) {
      summary.stoppedBy = 'credentials-refused';
      summary.credentialsRefused = refused;
    } else if (tripped) {
      summary.stoppedBy = 'flow-center-errors';
      summary.flowCenterErrors = lastError;
    } else if (deps.signal.aborted && summary.stoppedBy === 'drained') {
      // the claims ran out before the signal, but rows in flight were stopped by it
      summary.stoppedBy = 'signal';
    }
  };

  const other = otherAppKeySelect(deps.appKey, options.pendingGraceSeconds);
  summary.otherAppKey = Number((await deps.db.query<{ n: string | number }>(other.sql, other.params))[0]?.n ?? 0);

  if (options.dryRun) {
    // Lookups only: nothing is claimed, posted or written. The next page is read as soon as the
    // limiter runs low, not when a page's last lookup is back (that left the limiter idle).
    const pages = new InFlight();
    let afterId = '0';
    for (;;) {
      if (fatal) break;
      const stop = stopReason();
      if (stop) {
        summary.stoppedBy = stop;
        break;
      }
      if (http.pendingCount >= options.concurrency) {
        await pages.next();
        continue;
      }
      const q = peekSelect(deps.appKey, options.pendingGraceSeconds, afterId, Math.min(options.batchSize, options.maxRows - summary.claimed));
      const rows = await deps.db.query<ApplyCommandRow>(q.sql, q.params);
      if (rows.length === 0) break;
      afterId = String(rows[rows.length - 1]!.id);
      summary.claimed += rows.length;
      for (const row of rows) {
        pages.add(
          http(async () => {
            if (halted()) return;
            const lookup = await deps.flow.lookup(row.biz_type, row.biz_id);
            summary.lookups += 1;
            noteAnswer(lookup, 'GET /oapi/flow/instance');
            if (releasedByRefusal(lookup)) return report(row, { kind: 'released', reason: 'CREDENTIALS_REFUSED' });
            const step = resolve(row, lookup);
            if (step.kind === 'post') report(row, { kind: 'would-post' });
            else report(row, planWrite(row, step, options.retry).result);
          }).catch((err: unknown) => {
            fatal ??= err;
          }),
        );
      }
    }
    await pages.all();
    if (fatal) throw fatal;
    finishStop();
    return summary;
  }

  const owner = deps.owner ?? newClaimOwner();
  const leaseMs = options.leaseSeconds * 1000;
  const marginMs = 2000;
  /** Whether the lease still covers one more request with a margin (time from before the claim). */
  const leaseCovers = (claimedAt: number) => deps.clock() + options.requestTimeoutMs + marginMs <= claimedAt + leaseMs;

  type Decided = { kind: 'transition'; t: Transition } | { kind: 'release'; reason: string };
  const tripReason = () => (refused !== null ? 'CREDENTIALS_REFUSED' : 'FLOW_CENTER_ERRORS');
  const decide = async (row: ApplyCommandRow, claimedAt: number): Promise<Decided> => {
    if (halted()) return { kind: 'release', reason: tripped ? tripReason() : 'STOPPED' };
    if (!leaseCovers(claimedAt)) return { kind: 'release', reason: 'LEASE_TOO_SHORT' };
    const lookup = await deps.flow.lookup(row.biz_type, row.biz_id);
    summary.lookups += 1;
    noteAnswer(lookup, 'GET /oapi/flow/instance');
    if (releasedByRefusal(lookup)) return { kind: 'release', reason: 'CREDENTIALS_REFUSED' };
    const step = resolve(row, lookup);
    if (step.kind !== 'post') return { kind: 'transition', t: step };
    // Not found: resend with the same token and attempt — only while the lease is surely ours and
    // the run goes on. After a stop signal no new POST starts: the lookup found nothing, so the row
    // is released as it was and the next run looks again.
    if (halted()) return { kind: 'release', reason: tripped ? tripReason() : 'STOPPED' };
    if (!leaseCovers(claimedAt)) return { kind: 'release', reason: 'LEASE_TOO_SHORT' };
    const applied = await deps.flow.apply(step.request);
    summary.posts += 1;
    noteAnswer(applied, 'POST /oapi/flow/apply');
    if (releasedByRefusal(applied)) return { kind: 'release', reason: 'CREDENTIALS_REFUSED' };
    return { kind: 'transition', t: resolve(row, lookup, applied) };
  };

  const inFlight = new InFlight();
  const processRow = async (row: ApplyCommandRow, claimedAt: number) => {
    // The claim loop tops the limiter up when a request slot frees, not when a write lands: writes
    // linger in groups, and waiting for them let the limiter run dry between claims.
    const decided = await http(() => decide(row, claimedAt)).finally(() => inFlight.notify());
    if (decided.kind === 'release') {
      await applyWrite(writes, owner, { kind: 'release', gen: generationOf(row) });
      report(row, { kind: 'released', reason: decided.reason });
      return;
    }
    const { write, result } = planWrite(row, decided.t, options.retry);
    const outcome = await applyWrite(writes, owner, write, deps.db);
    if (outcome.kind === 'stale') {
      report(row, { kind: 'stale', would: result.kind });
      return;
    }
    report(row, result.kind === 'done' && outcome.mirror !== null ? { ...result, mirror: outcome.mirror } : result);
  };

  let cursor = await claimStart(deps.db);
  let cursorMoved = false;
  for (;;) {
    if (fatal) break;
    const stop = stopReason();
    if (stop) {
      summary.stoppedBy = stop;
      break;
    }
    // Claim only when the limiter is about to run dry, so claimed rows never wait long on their lease.
    if (http.pendingCount >= options.concurrency) {
      await inFlight.next();
      continue;
    }
    const claimedAt = deps.clock();
    const claim = (afterId: string) => claimRows(deps.db, owner, deps.appKey, options.pendingGraceSeconds, afterId, Math.min(options.batchSize, options.maxRows - summary.claimed), options.leaseSeconds);
    let rows = await claim(cursor);
    if (rows.length === 0 && cursorMoved) {
      // Rows behind the cursor may have become claimable meanwhile (released by another
      // resolver, or due again): one more look from the start before calling it drained.
      cursor = await claimStart(deps.db);
      cursorMoved = false;
      rows = await claim(cursor);
    }
    if (rows.length === 0) break;
    cursor = String(rows[rows.length - 1]!.id);
    cursorMoved = true;
    summary.claimed += rows.length;
    for (const row of rows) {
      inFlight.add(
        processRow(row, claimedAt).catch((err: unknown) => {
          fatal ??= err;
        }),
      );
    }
  }
  await inFlight.all();
  if (fatal) throw fatal;
  finishStop();
  return summary;
}

