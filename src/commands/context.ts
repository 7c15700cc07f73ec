import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { type Config, requireSetting, resolveConfig, secretsOf } from '../lib/config/config.js';
import type { Io } from '../lib/cli/io.js';
import { Output, SummaryHold } from '../lib/cli/output.js';
import { type Db, openDb } from '../lib/db/connect.js';
import { UsageError } from '../lib/cli/exit.js';
import { type SignalMode, signalMode } from '../lib/cli/signal.js';
import { FlowClient } from '../lib/flow/client.js';
import { type Broker, openBroker } from '../lib/amqp/connect.js';
import { openThrottles, type Throttle, type ThrottleLimits } from '../lib/db/throttle.js';

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
  /** this process run's id: the summary's `runId` when the command names no run of its own (README "Output") */
  readonly runId: string;
  fcDb(): Promise<Db>;
  shDb(): Promise<Db>;
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

/** Contexts created in this process, so main can close what they opened. */
export class Resources {
  private readonly closers: Array<() => Promise<void> | void> = [];
  add(fn: () => Promise<void> | void): void {
    this.closers.push(fn);
  }
  /** Closes in reverse order; a close that fails is ignored: the command's result is decided. */
  async closeAll(): Promise<void> {
    while (this.closers.length > 0) {
      try {
        await this.closers.pop()!();
      } catch {
        /* the exit code and summary already stand */
      }
    }
  }
  lastSecrets: string[] = [];
  /** set by a `--follow` service ({@link Ctx.signalIsStop}) */
  signalIsStop = false;
  /** set by the action that ran */
  exitCode = 0;
  /** the command's summary, printed by main with the exit code the process ends with */
  readonly summary = new SummaryHold();
  /** a new id per process run (one `main`), in the summary as `runId` */
  readonly runId = randomUUID();
}

/** `deliveries scan` for the scan command under `deliveries` (the root's name left out). */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

export function makeContext(cmd: Command, deps: Deps, resources: Resources): Ctx {
  // Before anything else the command does: a signal from now on is handled as this command needs.
  deps.setSignalMode?.(signalMode(commandPath(cmd)));
  const flags = cmd.optsWithGlobals() as Record<string, unknown>;
  const config = resolveConfig({ flags, env: deps.env });
  resources.lastSecrets = secretsOf(config);
  let broker: Promise<Broker> | undefined;
  const amqp = () =>
    (broker ??= openBroker(requireSetting(config, 'amqpUrl')).then((b) => {
      resources.add(() => b.close());
      return b;
    }));
  const lazy = (label: string, name: 'fcDatabaseUrl' | 'shDatabaseUrl') => {
    let pending: Promise<Db> | undefined;
    return () => {
      pending ??= openDb(label, requireSetting(config, name)).then(
        (db) => {
          resources.add(() => db.close());
          return db;
        },
        (err: unknown) => {
          // not kept: a --follow service asks again once the database is back
          pending = undefined;
          throw err;
        },
      );
      return pending;
    };
  };
  return {
    ...deps,
    config,
    output: new Output(deps.io, {
      json: Boolean(flags['json']),
      hold: resources.summary,
      now: deps.now,
      runId: resources.runId,
      // the global --progress-interval (seconds, validated by its parser; 0 turns the lines off)
      progressIntervalMs: Math.round(((flags['progressInterval'] as number | undefined) ?? 0) * 1000),
    }),
    debug: Boolean(flags['debug']),
    runId: resources.runId,
    fcDb: lazy('FC database', 'fcDatabaseUrl'),
    shDb: lazy('SH database', 'shDatabaseUrl'),
    amqp,
    clock: () => deps.now().getTime(),
    flow: ({ timeoutMs, maxSockets }) => {
      const baseUrl = requireSetting(config, 'flowUrl');
      const appKey = requireSetting(config, 'appKey');
      const secret = requireSetting(config, 'appSecret');
      try {
        const client = new FlowClient({ baseUrl, appKey, secret, timeoutMs, ...(maxSockets ? { maxSockets } : {}) });
        resources.add(() => client.close());
        return client;
      } catch (err) {
        throw new UsageError(`flowUrl: ${(err as Error).message}`);
      }
    },
    onClose: (fn) => resources.add(fn),
    secrets: () => secretsOf(config),
    signalIsStop: () => {
      resources.signalIsStop = true;
    },
  };
}

/**
 * The action every command ends with: its context, its options from the parsed flags (and
 * positional arguments, in order), its run function — replaced in parse tests — and the exit code.
 * @example cmd.action(commandAction(deps, resources, (flags) => ({ window: flags['window'] as number }), runF))
 */
export function commandAction<O>(
  deps: Deps,
  resources: Resources,
  optionsOf: (flags: Record<string, unknown>, args: readonly string[]) => O,
  runF: (options: O, ctx: Ctx) => Promise<number>,
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const flags = args[args.length - 2] as Record<string, unknown>;
    // A bad flag is reported before a bad config file: the flags are the operator's last word.
    const options = optionsOf(flags, args.slice(0, -2) as string[]);
    const ctx = makeContext(cmd, deps, resources);
    try {
      resources.exitCode = await runF(options, ctx);
    } finally {
      // progress lines end with the command, whatever it left open
      ctx.output.close();
    }
  };
}

/** Counts `n` rows done on a progress view (a page, or the answers joined since the last report). */
export function recordRows(progress: { record(): void }, n: number): void {
  for (let i = 0; i < n; i++) progress.record();
}

/** One command's `create…Command(parent, deps, resources)`, as a group adds it. */
export type CreateCommand = (parent: Command, deps: Deps, resources: Resources) => Command;

/**
 * A command group (`fcctl canon …`) and its verbs, in the order `--help` lists them.
 * @example commandGroup(program, 'dev', 'development databases only', deps, resources, [createDevSeedCommand])
 */
export function commandGroup(
  program: Command,
  name: string,
  description: string,
  deps: Deps,
  resources: Resources,
  verbs: readonly CreateCommand[],
): Command {
  const group = program.command(name).description(description);
  for (const create of verbs) create(group, deps, resources);
  return group;
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
