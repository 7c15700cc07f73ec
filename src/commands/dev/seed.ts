import type { Command } from '@commander-js/extra-typings';
import { DEFAULT_CONSUMERS, type DevSeedOptions } from '../../lib/dev/run.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { intArg } from '../options.js';
import { runDevSeed } from '../../lib/dev/seed-command.js';

/** `fcctl dev seed` and its flags. */
function seedFlags(parent: Command) {
  return parent
    .command('seed')
    .description(
      'fill a development FC database (marked by `db init --dev`) with a reproducible data set, and the SH projection with drift when FCCTL_SH_DATABASE_URL is set and marked dev',
    )
    .option('--answers <n>', 'answers to create (one outbox row per answer and consumer)', intArg(0, 1_000_000), 200)
    .option(
      '--consumers <n>',
      `consumer apps (default ${DEFAULT_CONSUMERS}, or the number of --consumer-keys)`,
      intArg(1, 1000),
    )
    .option('--consumer-keys <keys>', 'comma-separated consumer app keys, for predictable routing keys', (v: string) =>
      v.split(',').map((k) => k.trim()),
    )
    .option('--schools <n>', 'schools (ids 5, 6, …); answers are spread over them', intArg(1, 10_000), 2)
    .option(
      '--snapshot-bytes <n>',
      'grow each snapshot to this size in bytes (0: natural size, ~1 KB)',
      intArg(0, 1024 * 1024),
      0,
    )
    .option(
      '--seed <n>',
      'seed of the generator: the same seed gives the same ids, values and hashes',
      intArg(0, 2 ** 31 - 1),
      1,
    )
    .option(
      '--include-faults',
      'add rows built to fail the pre-publish checks: dotted and wildcard consumer keys, school 0, a tampered snapshot',
      false,
    )
    .option(
      '--no-grant-mix',
      "every grant active and push-allowed at the rows' version (by default a few are push-disabled, revoked or advanced)",
    )
    .option('--replace', 'delete the rows the seed tables already hold (same transaction)', false)
    .option(
      '--no-sh',
      'leave the SH database alone (by default, when FCCTL_SH_DATABASE_URL is set and marked by `db init --side sh --dev`, fc_answer_projection gets rows with drift of every reconcile category)',
    );
}

export const createDevSeedCommand = verbCommand(seedFlags, seedOptionsOf, runDevSeed);

/** Every option is named as its flag: the parsed values are the options, copied one by one. */
function seedOptionsOf(o: FlagsOf<typeof seedFlags>): DevSeedOptions {
  const { answers, consumers, consumerKeys, schools, snapshotBytes, seed, includeFaults, grantMix, replace, sh } = o;
  return { answers, consumers, consumerKeys, schools, snapshotBytes, seed, includeFaults, grantMix, replace, sh };
}
