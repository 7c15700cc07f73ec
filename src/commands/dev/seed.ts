import type { Command } from 'commander';
import { SafetyError, UsageError } from '../../lib/cli/exit.js';
import { isDevDatabase } from '../../lib/db/schema.js';
import {
  countSeedTables,
  DEFAULT_PUBLISHER,
  defaultConsumerKeys,
  planCounts,
  planSeed,
  schoolIds,
  SEED_FORMS,
  writeSeed,
} from '../../lib/dev/seed.js';
import { isRoutableAppKey } from '../../lib/ids.js';
import { countShSeedRows, driftCounts, planShSeed, SH_SEED_TASK_START_WINDOW, writeShSeed } from '../../lib/dev/sh-seed.js';
import type { Db } from '../../lib/db/connect.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { intArg } from '../options.js';

export interface DevSeedOptions {
  readonly answers: number;
  /** number of consumers; when `consumerKeys` is given too, it must match their count */
  readonly consumers: number | undefined;
  readonly consumerKeys: readonly string[] | undefined;
  readonly schools: number;
  readonly snapshotBytes: number;
  readonly seed: number;
  readonly includeFaults: boolean;
  readonly grantMix: boolean;
  readonly replace: boolean;
  /** seed the SH side too when FCCTL_SH_DATABASE_URL is set and marked dev (`--no-sh`: false); default true */
  readonly sh?: boolean;
}

const DEFAULT_CONSUMERS = 3;

/** The consumer keys to use: given ones checked (SPEC §4 routing-key rules), else generated. */
export function resolveConsumerKeys(options: Pick<DevSeedOptions, 'consumers' | 'consumerKeys'>, publisherKey: string): string[] {
  if (options.consumerKeys === undefined) return defaultConsumerKeys(options.consumers ?? DEFAULT_CONSUMERS, publisherKey);
  const keys = [...options.consumerKeys];
  if (options.consumers !== undefined && options.consumers !== keys.length) {
    throw new UsageError(`--consumers ${options.consumers} does not match the ${keys.length} keys of --consumer-keys`);
  }
  const bad = keys.find((k) => !isRoutableAppKey(k));
  if (bad !== undefined) throw new UsageError(`--consumer-keys: ${JSON.stringify(bad)} is not a valid app key (non-empty, at most 64 characters, no . * # or whitespace; --include-faults adds invalid ones)`);
  if (new Set(keys).size !== keys.length) throw new UsageError('--consumer-keys: a key is given twice');
  if (keys.includes(publisherKey)) throw new UsageError(`--consumer-keys: ${publisherKey} is the publisher's app key`);
  return keys;
}

/**
 * `fcctl dev seed`: fills a development FC database with a reproducible data set (see
 * src/lib/dev/seed.ts). Refuses (exit 4) a database `db init --dev` did not mark, or one that
 * already holds rows unless `--replace`.
 */
export async function runDevSeed(options: DevSeedOptions, ctx: Ctx): Promise<number> {
  const started = ctx.now().getTime();
  const publisher = { appCode: ctx.config.appCode.value ?? DEFAULT_PUBLISHER.appCode, appKey: ctx.config.appKey.value ?? DEFAULT_PUBLISHER.appKey };
  const consumerKeys = resolveConsumerKeys(options, publisher.appKey);

  const db = await ctx.fcDb();
  if (!(await isDevDatabase(db, 'fc'))) {
    throw new SafetyError('refusing to seed: the FC database is not marked as a development database (run `fcctl db init --side fc --dev` on it first)');
  }
  const existing = await countSeedTables(db);
  const nonEmpty = Object.entries(existing).filter(([, n]) => n > 0);
  if (nonEmpty.length > 0 && !options.replace) {
    throw new SafetyError(`refusing to seed: the FC database already holds rows (${nonEmpty.map(([t, n]) => `${t} ${n}`).join(', ')}); pass --replace to delete them first`);
  }

  // SH side: only a configured database that `db init --side sh --dev` marked; checked before any write.
  let shDb: Db | null = null;
  let shStatus = options.sh === false ? 'skipped: --no-sh' : 'skipped: FCCTL_SH_DATABASE_URL is not set';
  let shReplaced = false;
  if (options.sh !== false && ctx.config.shDatabaseUrl.value !== undefined) {
    const candidate = await ctx.shDb();
    if (!(await isDevDatabase(candidate, 'sh'))) {
      shStatus = 'skipped: the SH database is not marked as a development database (`fcctl db init --side sh --dev`)';
    } else {
      const shRows = await countShSeedRows(candidate);
      if (shRows > 0 && !options.replace) {
        throw new SafetyError(`refusing to seed: the SH database already holds rows (fc_answer_projection ${shRows}); pass --replace to delete them first, or --no-sh`);
      }
      shReplaced = shRows > 0;
      shDb = candidate;
    }
  }

  const plan = planSeed({
    seed: options.seed,
    answers: options.answers,
    consumerKeys,
    schools: options.schools,
    snapshotBytes: options.snapshotBytes,
    publisher,
    grantMix: options.grantMix,
    includeFaults: options.includeFaults,
  });
  await writeSeed(db, plan, { replace: options.replace });
  const shPlan = shDb === null ? null : planShSeed(options.seed, plan);
  if (shDb !== null && shPlan !== null) {
    await writeShSeed(shDb, shPlan, { replace: options.replace });
    shStatus = 'seeded';
  }
  const drift = shPlan === null ? null : driftCounts(shPlan.drift);

  for (const f of plan.faults) ctx.output.event('fault', { ...f });
  if (!ctx.output.json && plan.faults.length > 0) {
    ctx.output.rows(plan.faults, [{ key: 'kind', header: 'fault' }, { key: 'eventId', header: 'event id' }], 'table', 'rows built to fail the pre-publish checks');
  }
  const base = {
    command: 'dev seed',
    exitCode: 0,
    seed: options.seed,
    publisherAppCode: publisher.appCode,
    publisherAppKey: publisher.appKey,
    consumerKeys: consumerKeys.join(','),
    schoolIds: schoolIds(options.schools).join(','),
    forms: SEED_FORMS.length,
    replaced: nonEmpty.length > 0,
    sh: shStatus,
    ...(shPlan !== null ? { shReplaced, shRows: shPlan.rows.length, driftTaskStartFrom: SH_SEED_TASK_START_WINDOW.from, driftTaskStartUntil: SH_SEED_TASK_START_WINDOW.until } : {}),
    seconds: Math.round((ctx.now().getTime() - started) / 100) / 10,
  };
  const counts: Record<string, number> = planCounts(plan);
  if (shPlan !== null && drift !== null) {
    counts['fc_answer_projection'] = shPlan.rows.length;
    for (const [category, n] of Object.entries(drift)) counts[`drift_${category}`] = n;
  }
  ctx.output.summary(ctx.output.json ? { ...base, faults: plan.faults, ...(drift !== null ? { drift } : {}) } : base, counts);
  return 0;
}

export function createDevSeedCommand(parent: Command, deps: Deps, resources: Resources, runF = runDevSeed): Command {
  return parent
    .command('seed')
    .description('fill a development FC database (marked by `db init --dev`) with a reproducible data set, and the SH projection with drift when FCCTL_SH_DATABASE_URL is set and marked dev')
    .option('--answers <n>', 'answers to create (one outbox row per answer and consumer)', intArg(0, 1_000_000), 200)
    .option('--consumers <n>', `consumer apps (default ${DEFAULT_CONSUMERS}, or the number of --consumer-keys)`, intArg(1, 1000))
    .option('--consumer-keys <keys>', 'comma-separated consumer app keys, for predictable routing keys', (v: string) => v.split(',').map((k) => k.trim()))
    .option('--schools <n>', 'schools (ids 5, 6, …); answers are spread over them', intArg(1, 10_000), 2)
    .option('--snapshot-bytes <n>', 'grow each snapshot to this size in bytes (0: natural size, ~1 KB)', intArg(0, 1024 * 1024), 0)
    .option('--seed <n>', 'seed of the generator: the same seed gives the same ids, values and hashes', intArg(0, 2 ** 31 - 1), 1)
    .option('--include-faults', 'add rows built to fail the pre-publish checks: dotted and wildcard consumer keys, school 0, a tampered snapshot', false)
    .option('--no-grant-mix', 'every grant active and push-allowed at the rows\' version (by default a few are push-disabled, revoked or advanced)')
    .option('--replace', 'delete the rows the seed tables already hold (same transaction)', false)
    .option('--no-sh', 'leave the SH database alone (by default, when FCCTL_SH_DATABASE_URL is set and marked by `db init --side sh --dev`, fc_answer_projection gets rows with drift of every reconcile category)')
    .action(async (opts: { answers: number; consumers?: number; consumerKeys?: string[]; schools: number; snapshotBytes: number; seed: number; includeFaults: boolean; grantMix: boolean; replace: boolean; sh: boolean }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        {
          answers: opts.answers,
          consumers: opts.consumers,
          consumerKeys: opts.consumerKeys,
          schools: opts.schools,
          snapshotBytes: opts.snapshotBytes,
          seed: opts.seed,
          includeFaults: opts.includeFaults,
          grantMix: opts.grantMix,
          replace: opts.replace,
          sh: opts.sh,
        },
        ctx,
      );
    });
}
