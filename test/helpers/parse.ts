import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { type Ctx, type Deps, Resources } from '../../src/commands/context.js';
import { cleanEnv } from './cli.js';
import { testIo } from './io.js';

type RunF<O> = (options: O, ctx: Ctx) => Promise<number>;
type Create<O> = (parent: Command, deps: Deps, resources: Resources, runF: RunF<O>) => CommandUnknownOpts;

/**
 * Parses `argv` with one command's own definition and returns the options its run function was
 * called with, the run function replaced (GitHub CLI's `NewCmdX(f, runF)` tests): what the flags
 * mean is tested without a database, a broker or a clock.
 * @example expect((await parseWith(createDeliveriesSendCommand, ['send', '--window', '8'])).options.window).toBe(8)
 */
export async function parseWith<O>(
  create: Create<O>,
  argv: readonly string[],
  env: Record<string, string> = {},
): Promise<{ options: O; ctx: Ctx }> {
  const t = testIo();
  const deps: Deps = {
    io: t.io,
    env: cleanEnv(env),
    now: () => new Date('2026-12-01T00:00:00Z'),
    signal: new AbortController().signal,
  };
  const parent = new Command('fcctl')
    .exitOverride()
    .option('--json')
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  let seen: { options: O; ctx: Ctx } | undefined;
  create(parent, deps, new Resources(), async (options, ctx) => {
    seen = { options, ctx };
    return 0;
  }).exitOverride();
  await parent.parseAsync(argv, { from: 'user' });
  if (!seen) throw new Error(`${argv.join(' ')}: the run function was not called`);
  return seen;
}

/** The one-line error commander gives for `argv` (what the run function never sees). */
export async function parseError<O>(create: Create<O>, argv: readonly string[]): Promise<string> {
  try {
    await parseWith(create, argv);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${argv.join(' ')}: parsed without an error`);
}
