/**
 * `deliveries send`, the runner (SPEC §5): claim due rows with a lease, check each before
 * publishing, publish with confirms and mandatory returns in a bounded window, and adjudicate
 * every outcome with writes guarded by claim and generation. The decisions are in `decide.ts`,
 * the statements in `sql.ts`, executed in `store.ts`; this file orchestrates and publishes.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { isOutage, isReadOnly } from '../../db/outage.js';
import { type Broker, BrokerBlockedError, DELIVERY_EXCHANGE, exchangeExists } from '../../amqp/connect.js';
import { ConfirmPublisher } from '../../amqp/confirm-publisher.js';
import { returnProbeMessage, sendReturnProbe } from '../../amqp/probe.js';
import { InFlight } from '../../batch/in-flight.js';
import { Turns } from '../../batch/turns.js';
import { EnvironmentError } from '../../cli/exit.js';
import type { Progress } from '../../cli/output.js';
import type { Db } from '../../db/connect.js';
import type { PauseState } from '../../pause/decide.js';
import { buildEnvelope, messageOptions } from '../envelope.js';
import { type DeliveryRow, generationOf, grantKey } from '../types.js';
import {
  type BrokerOutcome,
  checkPublisher,
  countResult,
  emptySummary,
  planWrites,
  prePublish,
  type PrePublishDecision,
  progressReason,
  type PublisherFacts,
} from './decide.js';
import {
  applyWrites,
  applyWritesReportingStale,
  claimDue,
  countDue,
  grantsFor,
  peekDue,
  publisherFacts,
} from './store.js';
import { newClaimOwner } from '../../db/claim-owner.js';
import type { RowResult, SendDeps, SendOptions, SendSummary } from './types.js';

/** How old a batch's grant check may be at the moment one of its rows is published. */
export const GRANT_MAX_AGE_MS = 5000;

// ── the publisher identity ──

/**
 * The publisher identity of SPEC §5 step 1, checked before any row is claimed: a wrong
 * FCCTL_APP_KEY or FCCTL_APP_CODE is the run's problem, not each row's (one wrong key would
 * otherwise spend every row's budget and turn the outbox DEAD). Exit 3, naming the setting.
 */
export async function verifiedPublisher(
  db: Db,
  publisher: SendDeps['publisher'],
  consequence = 'no row was claimed',
): Promise<PublisherFacts> {
  const { facts, error } = await publisherFacts(db, publisher);
  const check = checkPublisher(facts);
  if (check.ok) return facts;
  const setting =
    check.reason === 'REGISTRY_UNREACHABLE'
      ? 'the app registry (application_info) could not be read'
      : `${check.detail}: check FCCTL_APP_CODE (${JSON.stringify(publisher.appCode)}) and FCCTL_APP_KEY (${JSON.stringify(publisher.appKey)}) against application_info`;
  // the database's own error kept as the cause: an unreadable registry is an outage, not a wrong key
  throw new PublisherIdentityError(
    `publisher identity: ${setting}; ${consequence}`,
    error === undefined ? undefined : { cause: error },
  );
}

/** The publisher identity failed (exit 3): a misconfiguration, never charged to rows. */
export class PublisherIdentityError extends EnvironmentError {}

type Decided = { row: DeliveryRow; decision: PrePublishDecision };

/** The pre-publish decisions of `rows`, with their grants read now. */
async function decideRows(
  db: Db,
  rows: readonly DeliveryRow[],
  facts: PublisherFacts,
  maxRetries: number,
): Promise<Decided[]> {
  const grants = await grantsFor(db, rows);
  return rows.map((row) => ({
    row,
    decision: prePublish(row, {
      publisher: facts,
      grant: grants.get(grantKey(row.form_uuid, row.consumer_school_id, row.consumer_app_key)),
      maxRetries,
    }),
  }));
}

// ── the run, step by step ──

/** One run's state, shared by its steps. */
export interface Run {
  readonly options: SendOptions;
  readonly deps: SendDeps;
  readonly summary: SendSummary;
  readonly deadline: number;
  /** the first error that stops the run; raised once what is in flight has settled */
  fatal: unknown;
  /**
   * `--follow` (./follow.ts): with nothing due and nothing in flight, wait for `idle()` (the poll
   * interval; false: stop) and claim again, instead of ending the run
   */
  readonly follow?: {
    readonly idle: () => Promise<boolean>;
    /** a guarded write waiting out a database outage (`why`), or over it (null): the service is not ready meanwhile */
    readonly onWriteOutage?: (why: string | null) => void;
    /** the end of a stop's drain: a write waiting out an outage is given up then (issue 34 §5) */
    readonly drainEnd?: AbortSignal;
    /** the service's zone for each batch's occurredAt, kept fresh (a server's `time_zone` may change under a long run) */
    readonly zone?: () => Promise<string>;
  };
}

function report(run: Run, results: ReadonlyArray<{ row: DeliveryRow; result: RowResult }>): void {
  for (const { row, result } of results) {
    countResult(run.summary, result);
    run.deps.onRow?.(row, result);
  }
  run.deps.onBatch?.(run.summary);
}

function stopReason(run: Run): SendSummary['stoppedBy'] | null {
  // a pause found before a batch's turn: claim no more
  if (run.summary.paused) return 'paused';
  if (run.deps.signal.aborted) return 'signal';
  if (run.summary.claimed >= run.options.maxRows) return 'max-rows';
  if (run.deps.clock() >= run.deadline) return 'max-seconds';
  return null;
}

/** `--dry-run`: every check on the due rows, paged forward by id; nothing claimed, sent or written. */
async function dryRunSend(run: Run): Promise<SendSummary> {
  const { options, deps, summary } = run;
  let afterId = '0';
  for (;;) {
    const stop = stopReason(run);
    if (stop) {
      summary.stoppedBy = stop;
      break;
    }
    if (await stopBeforeClaim(run)) break;
    const facts = await verifiedPublisher(deps.db, deps.publisher);
    const rows = await peekDue(deps.db, afterId, Math.min(options.batchSize, options.maxRows - summary.claimed));
    if (rows.length === 0) break;
    afterId = String(rows[rows.length - 1]!.id);
    summary.claimed += rows.length;
    const decided = await decideRows(deps.db, rows, facts, options.retry.maxRetries);
    const { results } = planWrites(
      decided.map((d) =>
        d.decision.kind === 'publish' ? { ...d, outcome: { kind: 'ack', returned: false } as const } : d,
      ),
      options.retry,
      options.holdRecheckSeconds,
    );
    report(
      run,
      results.map((r) =>
        r.result.kind === 'accepted' ? { row: r.row, result: { kind: 'would-publish' } as const } : r,
      ),
    );
  }
  return summary;
}

/** A confirm channel whose returns are proven where the rows go (seed 004), before any claim. */
export async function openPublisher(
  broker: Broker,
  options: SendOptions,
  clock: () => number,
): Promise<ConfirmPublisher> {
  let channel: Awaited<ReturnType<Broker['confirmChannel']>>;
  try {
    channel = await broker.confirmChannel();
  } catch (err) {
    throw new EnvironmentError(`cannot open a confirm channel: ${(err as Error).message}`, { cause: err });
  }
  const publisher = new ConfirmPublisher(
    channel,
    options.window,
    options.confirmTimeoutMs,
    { reopen: () => broker.confirmChannel(), probe: returnProbeMessage },
    clock,
  );
  // Seed 004: without observable returns no scan-send.
  const probe = await sendReturnProbe(publisher, options.confirmTimeoutMs);
  if (!probe.ok) {
    await publisher.close();
    // A broker under a resource alarm confirms nothing: that, not the exchange, is the cause.
    if (broker.blocked !== null)
      throw new BrokerBlockedError(
        `the broker is blocking publishes (${broker.blocked}: a resource alarm); nothing was claimed or sent`,
      );
    throw new EnvironmentError(`return probe failed: ${probe.detail}; nothing was claimed or sent`);
  }
  return publisher;
}

/** A batch's turn to publish (batches publish one at a time, in claim order). */
type Turn = ReturnType<Turns['next']>;

/**
 * The pause switch at a batch's turn to publish, before any of its rows is: paused, the whole batch
 * is handed back unpublished (claim cleared, guarded by owner and generation), and the run claims
 * no more. Once found, the pause holds for the rest of the run (no read per queued batch).
 * Returns whether the batch was released.
 */
async function releasedForPause(run: Run, owner: string, rows: readonly DeliveryRow[]): Promise<boolean> {
  const pause = run.summary.paused ?? (await run.deps.paused?.()) ?? null;
  if (!pause) return false;
  run.summary.stoppedBy = 'paused';
  run.summary.paused = pause;
  await applyWrites(run.deps.db, owner, [{ kind: 'release', gens: rows.map(generationOf) }]);
  report(
    run,
    rows.map((row) => ({ row, result: { kind: 'released', reason: 'PAUSED' } as const })),
  );
  return true;
}

/**
 * Publishes the rows of a batch that pass their checks, once it is the batch's turn and the fleet
 * is not paused (null: released for the pause). Under back-pressure a publish can come long after
 * its batch's grant check: the checks are read again after every wait once older than the grant
 * age (the turn is such a wait too).
 */
async function publishChecked(
  run: Run,
  publisher: ConfirmPublisher,
  rows: readonly DeliveryRow[],
  facts: PublisherFacts,
  notAfter: number,
  owner: string,
  turn: Turn,
) {
  const { options, deps } = run;
  const grantMaxAgeMs = options.grantMaxAgeMs ?? GRANT_MAX_AGE_MS;
  const [decided, zone]: [Array<Decided & { outcome?: Promise<BrokerOutcome> }>, string] = await Promise.all([
    decideRows(deps.db, rows, facts, options.retry.maxRetries),
    run.follow?.zone?.() ?? options.serviceTimeZone,
  ]);
  let checkedAt = deps.clock();
  await turn.ready;
  if (await releasedForPause(run, owner, rows)) return null;
  for (let i = 0; i < decided.length; i++) {
    if (decided[i]!.decision.kind !== 'publish') continue;
    for (;;) {
      if (publisher.busy) await publisher.slot();
      if (deps.clock() - checkedAt <= grantMaxAgeMs) break;
      const again = await decideRows(
        deps.db,
        decided.slice(i).map((d) => d.row),
        facts,
        options.retry.maxRetries,
      );
      for (const [k, d] of again.entries()) decided[i + k] = d;
      checkedAt = deps.clock();
      if (decided[i]!.decision.kind !== 'publish') break;
    }
    if (decided[i]!.decision.kind !== 'publish') continue;
    const d = decided[i]!;
    const routingKey = (d.decision as { routingKey: string }).routingKey;
    d.outcome = publisher.publish(
      {
        exchange: DELIVERY_EXCHANGE,
        routingKey,
        body: buildEnvelope(d.row, zone),
        options: messageOptions(d.row),
      },
      notAfter,
    );
  }
  return decided;
}

/**
 * One claimed batch: check, wait for its turn, publish (or release it for a pause), end the turn,
 * await the outcomes, adjudicate with guarded writes, report.
 */
async function publishBatch(
  run: Run,
  publisher: ConfirmPublisher,
  owner: string,
  rows: DeliveryRow[],
  claim: { readonly claimedAt: number; readonly committedAt: number },
  facts: PublisherFacts,
  turn: Turn,
): Promise<void> {
  const { options, deps, summary } = run;
  const { claimedAt } = claim;
  // A confirm must arrive while the claim is still ours; keep a second of margin for the write.
  const notAfter = claimedAt + options.leaseSeconds * 1000 - 1000;
  let decided: Awaited<ReturnType<typeof publishChecked>>;
  try {
    decided = await publishChecked(run, publisher, rows, facts, notAfter, owner, turn);
  } finally {
    // every row published (or none): the next batch may start, whatever happens to these confirms
    turn.done();
  }
  if (decided === null) return;
  // one Promise.all over the outcomes, not an async function per row (a batch's rows all wait here);
  // each row's confirm time taken as it comes only when the metrics want it
  const confirmedAt: Array<number | undefined> = [];
  const settled = await Promise.all(
    deps.onSettled
      ? decided.map((d, i) =>
          d.outcome?.then((o) => {
            confirmedAt[i] = performance.now();
            return o;
          }),
        )
      : decided.map((d) => d.outcome),
  );
  deps.onSettled?.({ rows, outcomes: settled, claimedAt, settledAt: deps.clock(), ...claimTimes(claim, confirmedAt) });
  const outcomes = decided.map(({ row, decision }, i) => {
    const o = settled[i];
    if (!o) return { row, decision };
    if (o.kind !== 'unsent' && !(o.kind === 'refused' && o.sent === false)) summary.published += 1;
    return { row, decision, outcome: o };
  });
  const { writes, results } = planWrites(outcomes, options.retry, options.holdRecheckSeconds);
  const write = () => applyWritesReportingStale(deps.db, owner, writes);
  // A follow relay rides out a short database outage here: the rows are published and their claim
  // is still ours, so the guarded write is tried again until the lease's end instead of leaving
  // them to be claimed and published again (a batch run exits 3 and leaves that to the next run).
  const stale = run.follow ? await whileLeased(write, notAfter, deps, run.follow) : await write();
  summary.stale += stale.size;
  report(
    run,
    results.map((r) =>
      stale.has(String(r.row.id)) ? { row: r.row, result: { kind: 'skipped', reason: 'STALE' } as const } : r,
    ),
  );
}

/**
 * Waits on `--max-load`/`--max-lag` before a claim (what is in flight goes on meanwhile), the pause
 * switch read on every poll and the wait ended at `--max-seconds`; true when the wait stops the
 * run: the signal, a pause (kept in the summary) or the deadline, as each does outside a wait.
 */
async function throttleStopped(run: Run): Promise<boolean> {
  const t = run.deps.throttle;
  if (!t) return false;
  let pause: PauseState | null = null;
  const probe = run.deps.paused;
  const outcome = await t.wait({
    deadline: run.deadline,
    ...(probe ? { paused: async () => (pause = await probe()) } : {}),
  });
  run.summary.throttledSeconds = Math.round(t.throttledMs / 100) / 10;
  if (outcome === 'ok') return false;
  if (outcome === 'paused') {
    pause ??= (await probe?.()) ?? null;
    if (pause === null) return throttleStopped(run); // lifted meanwhile: wait on the throttle again
    run.summary.paused = pause;
  }
  run.summary.stoppedBy = outcome === 'aborted' ? 'signal' : outcome === 'paused' ? 'paused' : 'max-seconds';
  return true;
}

/**
 * The pause switch, then the throttle, then (when the throttle waited) the switch again: true when
 * the run must claim no more (its reason kept in the summary). Read before every claim: a paused
 * fleet claims nothing more, and a pause set during a long throttle is not missed after it.
 */
async function stopBeforeClaim(run: Run): Promise<boolean> {
  const { deps, summary } = run;
  const readPause = async () => {
    const pause = await deps.paused?.();
    if (!pause) return false;
    summary.stoppedBy = 'paused';
    summary.paused = pause;
    return true;
  };
  if (await readPause()) return true;
  const waitedBefore = deps.throttle?.throttledMs ?? 0;
  if (await throttleStopped(run)) return true;
  return (deps.throttle?.throttledMs ?? 0) !== waitedBefore && (await readPause());
}

/**
 * The next batch's claim, after the identity is checked again; null stops claiming (the reason
 * kept). `claimedAt` is read after every wait (pause, throttle, identity), right before the claim
 * transaction: the publish deadline counts from it, and a wait longer than the lease would
 * otherwise leave the batch's deadline in the past at its claim (issue 26 #4).
 */
async function claimNext(
  run: Run,
  owner: string,
  limit: number,
): Promise<{ rows: DeliveryRow[]; facts: PublisherFacts; claimedAt: number; committedAt: number } | null> {
  const { deps, summary } = run;
  try {
    if (await stopBeforeClaim(run)) return null;
    // Identity again before each claim: a registry changed mid-run stops the run, charging nobody.
    const facts = await verifiedPublisher(
      deps.db,
      deps.publisher,
      'claimed no more rows; what was in flight was finished',
    );
    const claimedAt = deps.clock();
    const rows = await claimDue(deps.db, owner, limit, run.options.leaseSeconds);
    // the claim's commit, on the monotonic clock the confirms are timed on (claim-to-confirm)
    return { facts, claimedAt, committedAt: performance.now(), rows };
  } catch (err) {
    // Stop claiming, but finish (or release) what is in flight before giving up.
    if (err instanceof PublisherIdentityError) {
      summary.stoppedBy = 'publisher-identity';
      summary.publisherIdentity = err.message;
    } else run.fatal ??= err;
    return null;
  }
}

/** A batch's claim commit and its rows' confirms, as milliseconds after the claim commit (monotonic). */
function claimTimes(
  claim: { readonly committedAt: number },
  confirmedAt: ReadonlyArray<number | undefined>,
): { confirmMs: ReadonlyArray<number | undefined> } {
  return { confirmMs: Array.from(confirmedAt, (t) => (t === undefined ? undefined : t - claim.committedAt)) };
}

/** Claims batches, at most `pipeline` in flight, until a stop reason or nothing is due; then waits for them. */
export async function claimBatches(
  run: Run,
  broker: Broker,
  publisher: ConfirmPublisher,
  owner: string,
): Promise<void> {
  const { options, summary } = run;
  const inFlight = new InFlight();
  const turns = new Turns();
  for (;;) {
    // A blocking broker confirms nothing until its alarm clears: claim no more rows meanwhile
    // (each would only time out and spend a retry).
    const stop =
      stopReason(run) ??
      (publisher.closed ? 'broker-lost' : null) ??
      (run.fatal ? 'broker-lost' : null) ??
      (broker.blocked !== null ? 'broker-blocked' : null);
    if (stop) {
      summary.stoppedBy = stop;
      // The alarm's reason kept as the stop is decided: it may clear while what is in flight
      // settles, and the run still ended for it (exit 3 and its line, issue 26 #8).
      if (stop === 'broker-blocked') summary.brokerBlocked = broker.blocked ?? 'blocked by the broker';
      break;
    }
    if (inFlight.size >= options.pipeline) {
      await inFlight.next();
      continue;
    }
    const claimed = await claimNext(run, owner, Math.min(options.batchSize, options.maxRows - summary.claimed));
    if (!claimed) break;
    if (claimed.rows.length === 0) {
      if (inFlight.size === 0) {
        if (run.follow && (await run.follow.idle())) continue;
        break;
      }
      // Rows may come back due (held elsewhere, released) only later; finish what is in flight.
      await inFlight.next();
      continue;
    }
    summary.claimed += claimed.rows.length;
    inFlight.add(
      publishBatch(run, publisher, owner, claimed.rows, claimed, claimed.facts, turns.next()).catch((err: unknown) => {
        run.fatal ??= err;
      }),
    );
  }
  await inFlight.all();
}

/**
 * `fn`, tried again after an outage error (a dropped connection, a database restarting) with a
 * doubling pause, for as long as the next try still starts before `notAfter` and the drain of a
 * stop is not over; any other error, the deadline or the drain's end throws (the rows stay claimed
 * until their lease runs out, then go out again). Safe only for writes guarded by claim and
 * generation: a late try after the lease changes nothing, and one whose first reply was lost finds
 * its own write done.
 */
async function whileLeased<T>(
  fn: () => Promise<T>,
  notAfter: number,
  deps: Pick<SendDeps, 'clock'>,
  follow: { readonly onWriteOutage?: (why: string | null) => void; readonly drainEnd?: AbortSignal },
): Promise<T> {
  let failed = false;
  for (let pause = 250; ; pause = Math.min(pause * 2, 2000)) {
    try {
      const result = await fn();
      if (failed) follow.onWriteOutage?.(null);
      return result;
    } catch (err) {
      if (!isOutage(err) || deps.clock() + pause >= notAfter || follow.drainEnd?.aborted) throw err;
      failed = true;
      follow.onWriteOutage?.((err as Error).message);
      await delay(pause, undefined, follow.drainEnd ? { signal: follow.drainEnd } : undefined).catch(() => undefined);
      if (follow.drainEnd?.aborted) throw err;
    }
  }
}

/** Closes the publisher and records why the broker ended the run, if it did. */
export async function finishRun(run: Run, broker: Broker, publisher: ConfirmPublisher): Promise<SendSummary> {
  const { summary } = run;
  summary.brokerRefusals = publisher.refusals;
  const lost = publisher.lost;
  await publisher.close();
  if (run.fatal) throw run.fatal;
  if (summary.publisherIdentity) return summary;
  if (lost) {
    summary.stoppedBy = publisher.refusing ? 'broker-refusing' : 'broker-lost';
    summary.brokerLost = lost;
  } else if (broker.blocked !== null) {
    summary.stoppedBy = 'broker-blocked';
    summary.brokerBlocked = broker.blocked;
  }
  return summary;
}

/**
 * The v2 outbox relay. No transaction is held across broker I/O: the claim commits before
 * publishing, the adjudication is a separate short write.
 * @example const summary = await runSend(options, { db, broker, publisher: { appKey, appCode }, signal, clock: Date.now })
 */
export async function runSend(options: SendOptions, deps: SendDeps): Promise<SendSummary> {
  const run: Run = {
    options,
    deps,
    summary: emptySummary(),
    deadline: deps.clock() + options.maxSeconds * 1000,
    fatal: null,
  };
  if (options.dryRun) return dryRunSend(run);
  if (!deps.broker) throw new Error('runSend needs a broker unless dryRun');
  const broker = deps.broker;
  const owner = newClaimOwner();
  // Paused at start: no probe, no claim.
  const pause = await deps.paused?.();
  if (pause) return { ...run.summary, stoppedBy: 'paused', paused: pause };
  await verifiedPublisher(deps.db, deps.publisher);
  const publisher = await openPublisher(broker, options, deps.clock);
  await claimBatches(run, broker, publisher, owner);
  try {
    return await finishRun(run, broker, publisher);
  } catch (err) {
    // a failover's demoted writer: said as such (exit 3), not as an unexpected error
    if (!isReadOnly(err)) throw err;
    throw new EnvironmentError(
      `the FC database is read-only (a failover?): ${(err as Error).message}; rows claimed and not written go out again after their lease`,
      { cause: err },
    );
  }
}

/** `--declare` declares the exchange (topic, durable); otherwise it must exist. A dry run declares nothing. */
export async function prepareExchange(
  broker: Broker,
  options: { readonly declare: boolean; readonly dryRun: boolean },
): Promise<void> {
  if (options.declare && !options.dryRun) {
    const ch = await broker.channel();
    await ch.assertExchange(DELIVERY_EXCHANGE, 'topic', { durable: true });
    await ch.close();
  } else if (!(await exchangeExists(broker, DELIVERY_EXCHANGE))) {
    throw new EnvironmentError(
      `exchange ${DELIVERY_EXCHANGE} does not exist on the broker: create it, or pass --declare`,
    );
  }
}

/** What `deliveries send` works with beyond {@link runSend}'s dependencies. */
export interface SendCommandDeps extends Omit<SendDeps, 'broker'> {
  readonly broker: Broker;
  /** the progress display, opened once the exchange is checked */
  readonly progress: () => Progress;
  /** count the due backlog for the progress total (a terminal's bar; cron runs count nothing) */
  readonly countTotal: boolean;
}

/**
 * `deliveries send` as a whole: the exchange checked (or declared), the relay run with its
 * progress, and the run's time for the summary's rate.
 * @example const { summary, seconds } = await sendDeliveries(options, { db, broker, publisher, signal, clock, progress: () => output.progress('deliveries send'), countTotal: false })
 */
export async function sendDeliveries(
  options: SendOptions & { readonly declare: boolean },
  deps: SendCommandDeps,
): Promise<{ summary: SendSummary; seconds: number }> {
  await prepareExchange(deps.broker, options);
  const started = deps.clock();
  const progress = deps.progress();
  if (deps.countTotal) progress.setTotal(await countDue(deps.db, Math.min(options.maxRows, 1_000_000)));
  let summary: SendSummary;
  try {
    summary = await runSend(options, {
      ...deps,
      // A dry run writes nothing, on the broker either: it only checks.
      broker: options.dryRun ? null : deps.broker,
      onRow: (row, result) => {
        progress.record(progressReason(result));
        deps.onRow?.(row, result);
      },
    });
  } finally {
    progress.stop();
  }
  return { summary, seconds: (deps.clock() - started) / 1000 };
}
