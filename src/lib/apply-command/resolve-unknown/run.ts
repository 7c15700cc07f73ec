/**
 * `apply-command resolve-unknown`: settles commands whose send outcome is unknown (SPEC §9).
 * Claim with a lease (short transaction) → look up (no transaction open) → resend only when not
 * found → one guarded write per row. Bounded by p-limit, `--max-rows`, `--max-seconds`, the
 * lease, and a stop signal; a flow center that answers nothing but errors stops the run early
 * instead of spending every row's retry budget, and one that refuses our credentials (any 401; a
 * 403 before it accepted anything signed) stops it at the first refusal: a wrong secret is the
 * run's problem, never the rows'.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import type { RetryPolicy } from '../../deliveries/retry.js';
import { newClaimOwner } from '../../db/claim-owner.js';
import { InFlight } from '../../batch/in-flight.js';
import { WriteBatcher } from '../../db/batch.js';
import type { Db } from '../../db/connect.js';
import type { PauseState } from '../../pause/decide.js';
import { ABANDONED, type ApplyRequest, type ApplyResult, type LookupResult } from '../../flow/client.js';
import {
  bump,
  countReport,
  emptySummary,
  errorVerdict,
  noSuspects,
  planWrite,
  refusesCredentials,
  resolve,
  type ResolveSummary,
  type RowReport,
  signatureAccepted,
  type Suspects,
  type Transition,
} from './decide.js';
import { applyWrite, claimRows, claimStart, countOtherAppKey, peekRows } from './store.js';
import { type ApplyCommandRow, COLUMN_WIDTH, cutText, generationOf } from '../types.js';

/** The two calls resolve makes; `FlowClient` is one, tests may pass another. */
export interface FlowApi {
  /** `signal` abandons the request: a `network` error with {@link ABANDONED} as its detail */
  lookup(bizType: string, bizId: string, signal?: AbortSignal): Promise<LookupResult>;
  apply(req: ApplyRequest, signal?: AbortSignal): Promise<ApplyResult>;
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
  /**
   * `--follow` (issue 34 §1): an error answer is charged to its row only when the flow center is
   * seen answering meanwhile (another row, or the readiness lookup asked then); otherwise it is an
   * outage: the run stops and the row is released uncharged ({@link errorVerdict}).
   */
  readonly confirmErrors?: boolean;
}

/** The biz key of the readiness lookup: a signed GET no command can have (`fcctl-probe` is no biz type). */
export const READINESS_PROBE = { bizType: 'fcctl-probe', bizId: 'readiness' } as const;

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
  /** the pause switch, read at start and before each claim or page (src/lib/pause/run.ts) */
  readonly paused?: () => Promise<PauseState | null>;
  /** `confirmErrors`: the rows whose requests failed alone, kept across passes by a follow resolver */
  readonly suspects?: Suspects;
  /**
   * The end of a service's drain after a stop (`--drain-seconds`): requests still in flight are
   * abandoned and their rows released as they were — no retry spent, no error recorded: an
   * abandoned request says nothing about the row.
   */
  readonly drainEnd?: AbortSignal;
}

/** Whether a request was abandoned at the end of a stop's drain (not the flow center's answer). */
const abandoned = (r: LookupResult | ApplyResult) => r.kind === 'network' && r.detail === ABANDONED;

/** Whether a flow-center answer is an error (any kind): used for the consecutive-error stop. */
const isError = (r: LookupResult | ApplyResult) =>
  r.kind !== 'found' && r.kind !== 'not-found' && r.kind !== 'applied' && r.kind !== 'unknown-branch';

type Decided = { kind: 'transition'; t: Transition } | { kind: 'release'; reason: string };

/** The requests a row makes; the readiness lookup is neither (it vouches for no row's request). */
type RequestKind = 'lookup' | 'apply';

/** Where a request stands among the run's others: how many were sent, and answered well (same kind), before it. */
type Mark = { readonly sent: number; readonly answers: number };

/** Margin a lease must keep beyond one more request. */
const LEASE_MARGIN_MS = 2000;

/**
 * One run's state and its steps (gh-ost's `Migrator`): the stops, the flow center's answers as
 * they come in, the dry run's peek loop and the claim loop, each row's lookup → apply → write.
 */
class ResolveRun {
  readonly summary = emptySummary();
  private readonly deadline: number;
  readonly http: LimitFunction;
  // Row writes are independent and guarded one by one: they go to the database in groups. A row's
  // request slot is free before its write, so a few milliseconds of lingering cost no throughput.
  private readonly writes: WriteBatcher;
  /** a database error that ends the run (the command maps it to exit 3); rows not started are left alone */
  private fatal: unknown = null;
  private errorStreak = 0;
  private lastError = '';
  private tripped = false;
  /** set by the first 401/403: the run stops, and rows whose answer was an error are released */
  private refused: string | null = null;
  /** whether the flow center has accepted a signed request of this run (then a 403 is the row's) */
  private accepted = false;
  /** flow-center requests sent, and well-formed answers to rows' requests back, so far ({@link Mark}) */
  private sent = 0;
  private readonly answers = { lookup: 0, apply: 0 };
  private readonly suspects: Suspects;
  /** the last readiness lookup (`confirmErrors`): shared by the rows whose errors wait on it */
  private probe: { readonly seq: number; readonly failed: Promise<boolean> } | null = null;

  constructor(
    private readonly options: ResolveOptions,
    private readonly deps: ResolveDeps,
  ) {
    this.deadline = deps.clock() + options.maxSeconds * 1000;
    this.http = pLimit(options.concurrency);
    this.writes = new WriteBatcher(deps.db, { lingerMs: 20 });
    this.suspects = deps.suspects ?? noSuspects();
  }

  report(row: ApplyCommandRow, r: RowReport): void {
    countReport(this.summary, r);
    this.deps.onRow?.(row, r);
  }

  /**
   * Notes one flow-center answer: branches, the credentials refusal, the consecutive-error streak;
   * a row's request answered well clears the suspects of its kind.
   */
  noteAnswer(r: LookupResult | ApplyResult, what: string, kind?: RequestKind): void {
    if (r.kind === 'applied' || r.kind === 'unknown-branch')
      bump(this.summary.branches, cutText(r.branch, COLUMN_WIDTH.lastBranch));
    const refusal = refusesCredentials(r, this.accepted);
    if (signatureAccepted(r)) this.accepted = true;
    if (refusal && this.refused === null) {
      this.refused = `HTTP ${'status' in r ? r.status : ''} on ${what}${'detail' in r && r.detail ? `: ${r.detail}` : ''}`;
      this.tripped = true;
    }
    if (!isError(r)) {
      this.errorStreak = 0;
      if (kind !== undefined) {
        this.answers[kind] += 1;
        this.suspects[kind].clear();
      }
      return;
    }
    this.errorStreak += 1;
    this.lastError = `${r.kind}${'status' in r ? ` ${r.status}` : ''}: ${'detail' in r ? r.detail : ''}`;
    if (this.errorStreak >= this.options.maxConsecutiveErrors) this.tripped = true;
  }

  /** Notes a request about to be sent. */
  private mark(kind: RequestKind): Mark {
    this.sent += 1;
    return { sent: this.sent, answers: this.answers[kind] };
  }

  /**
   * With `confirmErrors`, what an error answer of a row is ({@link errorVerdict}): the row's
   * (`row`), the flow center's (`outage`: the run stops, the row is released uncharged) or a
   * suspect's (released uncharged, remembered). A readiness lookup is asked for a lookup error
   * when nothing else tells: one at a time, shared by the rows whose requests went out before it.
   */
  private async verdict(
    r: LookupResult | ApplyResult,
    kind: RequestKind,
    mark: Mark,
    row: ApplyCommandRow,
    claimedAt: number,
  ): Promise<'row' | 'outage' | 'suspect'> {
    if (!this.options.confirmErrors || !isError(r)) return 'row';
    const id = String(row.id);
    let probeFailed = false;
    let probed = kind === 'apply'; // a lookup answering says nothing about POST apply
    for (;;) {
      const suspects = this.suspects[kind];
      const verdict = errorVerdict({
        answeredSince: this.answers[kind] > mark.answers,
        probeFailed,
        tripped: this.tripped,
        otherSuspects: suspects.size > (suspects.has(id) ? 1 : 0),
        mayProbe: !probed && this.leaseCovers(claimedAt),
        suspectBefore: suspects.has(id),
      });
      if (verdict === 'outage') this.tripped = true;
      // failed with nothing answered since: the next pass judges it with the others; charged, it
      // is the row's (kept, a row that went DEAD would make the next lone failure an outage)
      if (verdict === 'outage' || verdict === 'suspect') suspects.add(id);
      else if (verdict === 'row') suspects.delete(id);
      if (verdict !== 'probe') return verdict;
      if (this.probe === null || this.probe.seq <= mark.sent) this.probe = this.askReadiness();
      probeFailed = await this.probe.failed;
      probed = true;
    }
  }

  private askReadiness(): { seq: number; failed: Promise<boolean> } {
    this.sent += 1;
    const seq = this.sent;
    // abandoned at the drain's end too: an error then is no verdict on the row (released uncharged)
    const failed = this.deps.flow.lookup(READINESS_PROBE.bizType, READINESS_PROBE.bizId, this.deps.drainEnd).then(
      (r) => {
        this.noteAnswer(r, 'the readiness lookup');
        return isError(r);
      },
      () => true,
    );
    return { seq, failed };
  }

  /** After a refusal, an error answer says nothing about the row: it is released, not failed. */
  releasedByRefusal(r: LookupResult | ApplyResult): boolean {
    return this.refused !== null && isError(r);
  }

  private stopReason(): ResolveSummary['stoppedBy'] | null {
    if (this.refused !== null) return 'credentials-refused';
    if (this.tripped) return 'flow-center-errors';
    if (this.deps.signal.aborted) return 'signal';
    if (this.summary.claimed >= this.options.maxRows) return 'max-rows';
    if (this.deps.clock() >= this.deadline) return 'max-seconds';
    return null;
  }

  /**
   * Stops that also give back rows claimed but not started (budgets let them finish): a pause is a
   * brake, so no request starts after it is seen.
   */
  halted(): boolean {
    return this.tripped || this.deps.signal.aborted || this.fatal !== null || this.summary.paused !== undefined;
  }

  /** The reason a row is released without being decided, when the run has stopped. */
  haltReason(): string {
    if (this.tripped) return this.refused !== null ? 'CREDENTIALS_REFUSED' : 'FLOW_CENTER_ERRORS';
    return this.summary.paused !== undefined && !this.deps.signal.aborted ? 'PAUSED' : 'STOPPED';
  }

  /** The pause switch, read once before each claim or page: a pause found stops the run. */
  private async pausedNow(): Promise<boolean> {
    const pause = await this.deps.paused?.();
    if (!pause) return false;
    this.summary.paused = pause;
    this.summary.stoppedBy = 'paused';
    return true;
  }

  /** Keeps the first database error: the run ends with it once the rows in flight have settled. */
  readonly fail = (err: unknown): void => {
    this.fatal ??= err;
  };

  /**
   * Whether the loops go on: false after a database error, or at a stop (recorded); waits for a
   * request slot while the limiter is full, so rows are read or claimed only when about to start.
   */
  async mayTakeMore(pending: InFlight): Promise<boolean> {
    for (;;) {
      if (this.fatal) return false;
      const stop = this.stopReason();
      if (stop) {
        this.summary.stoppedBy = stop;
        return false;
      }
      if (this.http.pendingCount < this.options.concurrency) {
        // A failed read of the switch ends the run like any database error, but only after the
        // requests in flight are settled (the caller awaits them): never rejected from here.
        try {
          return !(await this.pausedNow());
        } catch (err) {
          this.fail(err);
          return false;
        }
      }
      await pending.next();
    }
  }

  /** How many rows the next page or claim may take. */
  nextLimit(): number {
    return Math.min(this.options.batchSize, this.options.maxRows - this.summary.claimed);
  }

  /** The summary, once every row has settled; the first database error is thrown instead. */
  finish(): ResolveSummary {
    if (this.fatal) throw this.fatal;
    // The stop the run ended with, when it was the flow center's.
    if (this.refused !== null) {
      this.summary.stoppedBy = 'credentials-refused';
      this.summary.credentialsRefused = this.refused;
    } else if (this.tripped) {
      this.summary.stoppedBy = 'flow-center-errors';
      this.summary.flowCenterErrors = this.lastError;
    } else if (this.deps.signal.aborted && this.summary.stoppedBy === 'drained') {
      // the claims ran out before the signal, but rows in flight were stopped by it
      this.summary.stoppedBy = 'signal';
    }
    return this.summary;
  }

  /** Step 1: rows resolve would take but that belong to another app key (reported, never touched). */
  async countOtherAppKey(): Promise<void> {
    this.summary.otherAppKey = await countOtherAppKey(this.deps.db, this.deps.appKey, this.options.pendingGraceSeconds);
  }

  /**
   * Step 2 of a dry run: lookups only, nothing claimed, posted or written. The next page is read
   * as soon as the limiter runs low, not when a page's last lookup is back (that left it idle).
   */
  async peekAll(): Promise<void> {
    const pages = new InFlight();
    let afterId = '0';
    while (await this.mayTakeMore(pages)) {
      const rows = await peekRows(
        this.deps.db,
        this.deps.appKey,
        this.options.pendingGraceSeconds,
        afterId,
        this.nextLimit(),
      );
      if (rows.length === 0) break;
      afterId = String(rows[rows.length - 1]!.id);
      this.summary.claimed += rows.length;
      for (const row of rows) pages.add(this.http(() => this.peekRow(row)).catch(this.fail));
    }
    await pages.all();
  }

  private async peekRow(row: ApplyCommandRow): Promise<void> {
    if (this.halted()) return;
    const lookup = await this.deps.flow.lookup(row.biz_type, row.biz_id);
    this.summary.lookups += 1;
    this.noteAnswer(lookup, 'GET /oapi/flow/instance');
    if (this.releasedByRefusal(lookup)) return this.report(row, { kind: 'released', reason: 'CREDENTIALS_REFUSED' });
    const step = resolve(row, lookup);
    if (step.kind === 'post') this.report(row, { kind: 'would-post' });
    else this.report(row, planWrite(row, step, this.options.retry).result);
  }

  /** Step 2 of a run: claim batches from the cursor, settle every claimed row. */
  async claimAll(): Promise<void> {
    const owner = this.deps.owner ?? newClaimOwner();
    const inFlight = new InFlight();
    const claim = (afterId: string) =>
      claimRows(
        this.deps.db,
        owner,
        this.deps.appKey,
        this.options.pendingGraceSeconds,
        afterId,
        this.nextLimit(),
        this.options.leaseSeconds,
      );
    let cursor = await claimStart(this.deps.db, this.deps.appKey, this.options.pendingGraceSeconds);
    let cursorMoved = false;
    // Claim only when the limiter is about to run dry, so claimed rows never wait long on their lease.
    while (await this.mayTakeMore(inFlight)) {
      const claimedAt = this.deps.clock();
      let rows = await claim(cursor);
      if (rows.length === 0 && cursorMoved) {
        // Rows behind the cursor may have become claimable meanwhile (released by another
        // resolver, or due again): one more look from the start before calling it drained.
        cursor = await claimStart(this.deps.db, this.deps.appKey, this.options.pendingGraceSeconds);
        cursorMoved = false;
        rows = await claim(cursor);
      }
      if (rows.length === 0) break;
      cursor = String(rows[rows.length - 1]!.id);
      cursorMoved = true;
      this.summary.claimed += rows.length;
      for (const row of rows) inFlight.add(this.settleRow(row, claimedAt, owner, inFlight).catch(this.fail));
    }
    await inFlight.all();
  }

  /** Whether the lease still covers one more request with a margin (time from before the claim). */
  private leaseCovers(claimedAt: number): boolean {
    return (
      this.deps.clock() + this.options.requestTimeoutMs + LEASE_MARGIN_MS <=
      claimedAt + this.options.leaseSeconds * 1000
    );
  }

  /** Why no (further) request starts for a row now, or null. */
  private holdBack(claimedAt: number): Decided | null {
    if (this.halted()) return { kind: 'release', reason: this.haltReason() };
    if (!this.leaseCovers(claimedAt)) return { kind: 'release', reason: 'LEASE_TOO_SHORT' };
    return null;
  }

  /** A row released uncharged for an error that may be the flow center's (an unanswered apply is looked up first next time). */
  private releaseFor(verdict: 'outage' | 'suspect'): Decided {
    return { kind: 'release', reason: verdict === 'outage' ? this.haltReason() : 'UNCONFIRMED_ERROR' };
  }

  /** Look up; resend only when not found, only while the lease is surely ours and the run goes on. */
  private async decideRow(row: ApplyCommandRow, claimedAt: number): Promise<Decided> {
    const before = this.holdBack(claimedAt);
    if (before) return before;
    const sent = this.mark('lookup');
    const lookup = await this.deps.flow.lookup(row.biz_type, row.biz_id, this.deps.drainEnd);
    this.summary.lookups += 1;
    if (abandoned(lookup)) return { kind: 'release', reason: 'STOPPED' };
    this.noteAnswer(lookup, 'GET /oapi/flow/instance', 'lookup');
    if (this.releasedByRefusal(lookup)) return { kind: 'release', reason: 'CREDENTIALS_REFUSED' };
    const looked = await this.verdict(lookup, 'lookup', sent, row, claimedAt);
    if (looked !== 'row') return this.releaseFor(looked);
    const step = resolve(row, lookup);
    if (step.kind !== 'post') return { kind: 'transition', t: step };
    // After a stop signal no new POST starts: the lookup found nothing, so the row is released as
    // it was and the next run looks again.
    const held = this.holdBack(claimedAt);
    if (held) return held;
    const posted = this.mark('apply');
    const applied = await this.deps.flow.apply(step.request, this.deps.drainEnd);
    this.summary.posts += 1;
    // the POST's outcome is unknown, as for a timeout; released UNKNOWN, the next pass looks it up first
    if (abandoned(applied)) return { kind: 'release', reason: 'STOPPED' };
    this.noteAnswer(applied, 'POST /oapi/flow/apply', 'apply');
    if (this.releasedByRefusal(applied)) return { kind: 'release', reason: 'CREDENTIALS_REFUSED' };
    const answered = await this.verdict(applied, 'apply', posted, row, claimedAt);
    if (answered !== 'row') return this.releaseFor(answered);
    return { kind: 'transition', t: resolve(row, lookup, applied) };
  }

  /** One claimed row: decided under a request slot, then its guarded write. */
  private async settleRow(row: ApplyCommandRow, claimedAt: number, owner: string, inFlight: InFlight): Promise<void> {
    // The claim loop tops the limiter up when a request slot frees, not when a write lands: writes
    // linger in groups, and waiting for them let the limiter run dry between claims.
    const decided = await this.http(() => this.decideRow(row, claimedAt)).finally(() => inFlight.notify());
    if (decided.kind === 'release') {
      await applyWrite(this.writes, owner, { kind: 'release', gen: generationOf(row) });
      this.report(row, { kind: 'released', reason: decided.reason });
      return;
    }
    const { write, result } = planWrite(row, decided.t, this.options.retry);
    const outcome = await applyWrite(this.writes, owner, write, this.deps.db);
    if (outcome.kind === 'stale') {
      this.report(row, { kind: 'stale', would: result.kind });
      return;
    }
    this.report(
      row,
      result.kind === 'done' && outcome.mirror !== null ? { ...result, mirror: outcome.mirror } : result,
    );
  }
}

/**
 * Runs resolve-unknown. Throws only for database errors (the command maps them to exit 3);
 * every flow-center failure is a row result.
 * @example const summary = await runResolve(options, { db, flow, appKey: '100021', signal, clock: () => performance.now() })
 */
export async function runResolve(options: ResolveOptions, deps: ResolveDeps): Promise<ResolveSummary> {
  const run = new ResolveRun(options, deps);
  await run.countOtherAppKey();
  if (options.dryRun) await run.peekAll();
  else await run.claimAll();
  return run.finish();
}
