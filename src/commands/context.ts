import { randomUUID } from 'node:crypto';
import type { Ctx, DbOptions, Deps } from '../lib/cli/context.js';

export type { Ctx, Deps } from '../lib/cli/context.js';
import type { Command, CommandUnknownOpts, OptionValues } from '@commander-js/extra-typings';
import { requireSetting, resolveConfig, secretsOf } from '../lib/config/config.js';
import { Output, SummaryHold } from '../lib/cli/output.js';
import { type Db, openDb } from '../lib/db/connect.js';
import { UsageError } from '../lib/cli/exit.js';
import { signalMode } from '../lib/cli/signal.js';
import { FlowClient } from '../lib/flow/client.js';
import { type Broker, openBroker } from '../lib/amqp/connect.js';

/** Contexts created in this process, so main can close what they opened. */
export class Resources {
  private readonly closers: Array<() => Promise<void> | void> = [];
  private closed = false;
  /**
   * Something to close when the command ends; closed at once when it has ended (a connection a
   * command opened and stopped waiting for, such as a read past its deadline or a view left by q).
   * Returns what takes it off the list (closed already by its owner).
   */
  add(fn: () => Promise<void> | void): () => void {
    if (this.closed)
      void Promise.resolve()
        .then(fn)
        .catch(() => undefined);
    else this.closers.push(fn);
    return () => {
      const i = this.closers.indexOf(fn);
      if (i >= 0) this.closers.splice(i, 1);
    };
  }
  /** Closes in reverse order; a close that fails is ignored: the command's result is decided. */
  async closeAll(): Promise<void> {
    this.closed = true;
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
export function commandPath(cmd: CommandUnknownOpts): string {
  const names: string[] = [];
  for (let c: CommandUnknownOpts | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

export function makeContext(cmd: CommandUnknownOpts, deps: Deps, resources: Resources): Ctx {
  // Before anything else the command does: a signal from now on is handled as this command needs.
  deps.setSignalMode?.(signalMode(commandPath(cmd)));
  const flags = cmd.optsWithGlobals();
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
    return (options: DbOptions = {}) => {
      let forget: () => void = () => undefined;
      pending ??= openDb(label, requireSetting(config, name), {
        ...options,
        // closed with the command even if it stopped waiting for the pool's first answer
        onPool: (db) => {
          forget = resources.add(() => db.close());
        },
      }).catch((err: unknown) => {
        // not kept (openDb closed it): a --follow service asks again once the database is back
        forget();
        pending = undefined;
        throw err;
      });
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
 * The action every command ends with: its context, its options from the parsed flags (typed by the
 * command's option definitions) and positional arguments, its run function — replaced in parse
 * tests — and the exit code.
 * @example cmd.action(commandAction(deps, resources, (flags) => ({ window: flags.window }), runF))
 */
export function commandAction<Args extends unknown[], Flags, O>(
  deps: Deps,
  resources: Resources,
  optionsOf: (flags: Flags, args: Args) => O,
  runF: (options: O, ctx: Ctx) => Promise<number>,
): (...args: [...Args, Flags, CommandUnknownOpts]) => Promise<void> {
  return async (...args) => {
    const cmd = args[args.length - 1] as CommandUnknownOpts;
    const flags = args[args.length - 2] as Flags;
    // A bad flag is reported before a bad config file: the flags are the operator's last word.
    const options = optionsOf(flags, args.slice(0, -2) as Args);
    const ctx = makeContext(cmd, deps, resources);
    try {
      resources.exitCode = await runF(options, ctx);
    } finally {
      // progress lines end with the command, whatever it left open
      ctx.output.close();
    }
  };
}

/**
 * The flags a command's definition parses to, as its action gets them: `flagsOf` is the function
 * that defines the command and its options (a mistyped option name is then a compile error).
 * @example function failedOptionsOf(o: FlagsOf<typeof failedFlags>): DeliveriesFailedOptions
 */
export type FlagsOf<F extends (...args: never[]) => CommandUnknownOpts> = ReturnType<ReturnType<F>['opts']>;

/** One command's `create…Command(parent, deps, resources)`, as a group adds it. */
export type CreateCommand = (parent: Command, deps: Deps, resources: Resources) => CommandUnknownOpts;

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
 * A verb's `create…Command(parent, deps, resources, runF = run)` from its three parts: the function
 * that defines it and its flags, the one that turns the parsed flags into its options, and the
 * library's run function (parse tests pass another `runF`, as GitHub CLI's `NewCmdX(f, runF)`).
 * @example export const createDeliveriesScanCommand = verbCommand(scanFlags, scanOptionsOf, runDeliveriesScan);
 */
export function verbCommand<Args extends unknown[], Opts extends OptionValues, O>(
  flags: (parent: Command) => Command<Args, Opts>,
  optionsOf: (flags: Opts, args: Args) => O,
  run: (options: O, ctx: Ctx) => Promise<number>,
) {
  return (parent: Command, deps: Deps, resources: Resources, runF = run) =>
    flags(parent).action(commandAction(deps, resources, optionsOf, runF));
}
