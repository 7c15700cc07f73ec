// What a command's run function gets (Ctx) and the helpers such functions share. Built by
// src/commands/context.ts (makeContext); the library's command runners (`command.ts`) take it.
import type { Output } from './output.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/connect.js';
import type { Io } from './io.js';
import type { SignalMode } from './signal.js';
import type { FlowClient } from '../flow/client.js';
import type { Broker } from '../amqp/connect.js';
import { openThrottles, type Throttle, type ThrottleLimits } from '../db/throttle.js';

/** How a command's database is opened: a read-only report drops a statement still in flight at its end sooner. */
export interface DbOptions {
  readonly closeGraceMs?: number;
}

/** What the process gives every command: streams, environment, clock and the stop signal. */
export interface Deps {
  readonly io: Io;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly now: () => Date;
  readonly signal: AbortSignal;
  /** tells the process's signal handler what the first SIGINT/SIGTERM does to the command that runs (src/lib/cli/signal.ts) */
  readonly setSignalMode?: (mode: SignalMode) => void;
}

/**
 * What a command's run function gets: resolved config, output, and lazy connections — nothing
 * connects until a command asks, so `--help` and bad flags never touch a database.
 */
export interface Ctx extends Deps {
  readonly config: Config;
  readonly output: Output;
  readonly debug: boolean;
  /** this process run's id: the summary's `runId` when the command names no run of its own (docs/output.md) */
  readonly runId: string;
  /** the FC database, opened on first use (with that use's options) and closed when the command ends */
  fcDb(options?: DbOptions): Promise<Db>;
  shDb(options?: DbOptions): Promise<Db>;
  /** the broker at amqpUrl, opened on first use and closed when the command ends */
  amqp(): Promise<Broker>;
  /** milliseconds since the epoch, from the injected clock (commands never read Date.now) */
  clock(): number;
  /** the signed flow-center client; exit 2 when flowUrl, appKey or appSecret is missing or bad (connects nothing) */
  flow(options: { timeoutMs: number; maxSockets?: number }): FlowClient;
  /** registers something to close when the command ends */
  onClose(fn: () => Promise<void> | void): void;
  /** secrets to redact from any message */
  secrets(): string[];
  /** a `--follow` service: the stop signal is its normal end, not an interrupt (exit 0 once drained) */
  signalIsStop(): void;
}

/** Counts `n` rows done on a progress view (a page, or the answers joined since the last report). */
export function recordRows(progress: { record(): void }, n: number): void {
  for (let i = 0; i < n; i++) progress.record();
}

/**
 * The throttles of `--max-load`/`--max-lag` (lib/db/throttle.ts) on the databases a command reads,
 * first-checked now (exit 2 or 3 before anything is written); each start and end of a wait is a
 * `throttled` event line (a line on stderr on a terminal).
 * @example const throttle = await commandThrottles(ctx, options.throttle, { fc: { db: ctx.fcDb, label: 'FC database' } })
 */
export function commandThrottles<K extends string>(
  ctx: Ctx,
  limits: ThrottleLimits,
  dbs: Readonly<Record<K, { readonly db: () => Promise<Db>; readonly label: string }>>,
): Promise<Partial<Record<K, Throttle>>> {
  return openThrottles(limits, ctx.config.replicaUrl.value, dbs, {
    signal: ctx.signal,
    clock: ctx.clock,
    onClose: (fn) => ctx.onClose(fn),
    onEvent: (e) => {
      ctx.output.event('throttled', e);
      if (!ctx.output.json)
        ctx.io.stderr.write(
          e.state === 'start'
            ? `fcctl: throttled on the ${e.database}: ${e.reason}\n`
            : `fcctl: throttle ended after ${e.seconds} s\n`,
        );
    },
  });
}
