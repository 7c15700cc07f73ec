/**
 * `dev seed`'s runner: checks the databases may be seeded (marked dev, empty unless replacing),
 * plans the FC rows and, when the SH database is configured and marked, the SH rows with drift,
 * writes both. The summary is {@link summarizeSeed}, pure.
 */
import { SafetyError, UsageError } from '../cli/exit.js';
import type { Summary } from '../cli/output.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/connect.js';
import { isDevDatabase } from '../db/schema.js';
import { isRoutableAppKey } from '../ids.js';
import {
  countSeedTables,
  DEFAULT_PUBLISHER,
  defaultConsumerKeys,
  planCounts,
  planSeed,
  schoolIds,
  SEED_FORMS,
  type SeedPlan,
  writeSeed,
} from './seed.js';
import {
  countShSeedRows,
  driftCounts,
  planShSeed,
  SH_SEED_TASK_START_WINDOW,
  type ShSeedPlan,
  writeShSeed,
} from './sh-seed.js';

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

export const DEFAULT_CONSUMERS = 3;

export interface DevSeedDeps {
  /** appCode and appKey name the publisher; shDatabaseUrl says whether there is an SH side */
  readonly config: Config;
  fcDb(): Promise<Db>;
  shDb(): Promise<Db>;
  clock(): number;
}

/** What a seed run did. */
export interface SeedResult {
  readonly publisher: { readonly appCode: string; readonly appKey: string };
  readonly consumerKeys: readonly string[];
  readonly plan: SeedPlan;
  /** the FC database held rows (deleted by --replace) */
  readonly replaced: boolean;
  readonly shPlan: ShSeedPlan | null;
  readonly shStatus: string;
  readonly shReplaced: boolean;
  readonly seconds: number;
}

/** The consumer keys to use: given ones checked (SPEC §4 routing-key rules), else generated. */
export function resolveConsumerKeys(
  options: Pick<DevSeedOptions, 'consumers' | 'consumerKeys'>,
  publisherKey: string,
): string[] {
  if (options.consumerKeys === undefined)
    return defaultConsumerKeys(options.consumers ?? DEFAULT_CONSUMERS, publisherKey);
  const keys = [...options.consumerKeys];
  if (options.consumers !== undefined && options.consumers !== keys.length) {
    throw new UsageError(`--consumers ${options.consumers} does not match the ${keys.length} keys of --consumer-keys`);
  }
  const bad = keys.find((k) => !isRoutableAppKey(k));
  if (bad !== undefined)
    throw new UsageError(
      `--consumer-keys: ${JSON.stringify(bad)} is not a valid app key (non-empty, at most 64 characters, no . * # or whitespace; --include-faults adds invalid ones)`,
    );
  if (new Set(keys).size !== keys.length) throw new UsageError('--consumer-keys: a key is given twice');
  if (keys.includes(publisherKey)) throw new UsageError(`--consumer-keys: ${publisherKey} is the publisher's app key`);
  return keys;
}

/**
 * `fcctl dev seed`: fills a development FC database with a reproducible data set (see
 * ./seed.ts). Refuses (exit 4) a database `db init --dev` did not mark, or one that already holds
 * rows unless `replace`.
 */
export async function runDevSeed(options: DevSeedOptions, deps: DevSeedDeps): Promise<SeedResult> {
  const started = deps.clock();
  const publisher = {
    appCode: deps.config.appCode.value ?? DEFAULT_PUBLISHER.appCode,
    appKey: deps.config.appKey.value ?? DEFAULT_PUBLISHER.appKey,
  };
  const consumerKeys = resolveConsumerKeys(options, publisher.appKey);
  const db = await deps.fcDb();
  const replaced = await checkFcSide(db, options.replace);
  // Both sides are checked before any write.
  const sh = await checkShSide(options, deps);
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
  const shPlan = sh.db === null ? null : planShSeed(options.seed, plan);
  if (sh.db !== null && shPlan !== null) await writeShSeed(sh.db, shPlan, { replace: options.replace });
  const shStatus = shPlan !== null ? 'seeded' : sh.status;
  return {
    publisher,
    consumerKeys,
    plan,
    replaced,
    shPlan,
    shStatus,
    shReplaced: sh.replaced,
    seconds: Math.round((deps.clock() - started) / 100) / 10,
  };
}

/** The FC database must be marked dev, and empty unless replacing; true when it holds rows. */
async function checkFcSide(db: Db, replace: boolean): Promise<boolean> {
  if (!(await isDevDatabase(db, 'fc'))) {
    throw new SafetyError(
      'refusing to seed: the FC database is not marked as a development database (run `fcctl db init --side fc --dev` on it first)',
    );
  }
  const existing = await countSeedTables(db);
  const nonEmpty = Object.entries(existing).filter(([, n]) => n > 0);
  if (nonEmpty.length > 0 && !replace) {
    throw new SafetyError(
      `refusing to seed: the FC database already holds rows (${nonEmpty.map(([t, n]) => `${t} ${n}`).join(', ')}); pass --replace to delete them first`,
    );
  }
  return nonEmpty.length > 0;
}

/** SH side: only a configured database that `db init --side sh --dev` marked; else why it is skipped. */
async function checkShSide(
  options: DevSeedOptions,
  deps: DevSeedDeps,
): Promise<{ db: Db | null; status: string; replaced: boolean }> {
  if (options.sh === false) return { db: null, status: 'skipped: --no-sh', replaced: false };
  if (deps.config.shDatabaseUrl.value === undefined)
    return { db: null, status: 'skipped: FCCTL_SH_DATABASE_URL is not set', replaced: false };
  const candidate = await deps.shDb();
  if (!(await isDevDatabase(candidate, 'sh'))) {
    return {
      db: null,
      status: 'skipped: the SH database is not marked as a development database (`fcctl db init --side sh --dev`)',
      replaced: false,
    };
  }
  const shRows = await countShSeedRows(candidate);
  if (shRows > 0 && !options.replace) {
    throw new SafetyError(
      `refusing to seed: the SH database already holds rows (fc_answer_projection ${shRows}); pass --replace to delete them first, or --no-sh`,
    );
  }
  return { db: candidate, status: '', replaced: shRows > 0 };
}

/**
 * The summary line of a seed run and its counts; JSON adds the faults and the drift by category.
 * @example summarizeSeed(options, result, false).summary.command // 'dev seed'
 */
export function summarizeSeed(
  options: Pick<DevSeedOptions, 'seed' | 'schools'>,
  r: SeedResult,
  json: boolean,
): { summary: Summary; counts: Record<string, number> } {
  const { plan, shPlan } = r;
  const drift = shPlan === null ? null : driftCounts(shPlan.drift);
  const base = {
    command: 'dev seed',
    exitCode: 0,
    seed: options.seed,
    publisherAppCode: r.publisher.appCode,
    publisherAppKey: r.publisher.appKey,
    consumerKeys: r.consumerKeys.join(','),
    schoolIds: schoolIds(options.schools).join(','),
    forms: SEED_FORMS.length,
    replaced: r.replaced,
    sh: r.shStatus,
    ...(shPlan !== null
      ? {
          shReplaced: r.shReplaced,
          shRows: shPlan.rows.length,
          driftTaskStartFrom: SH_SEED_TASK_START_WINDOW.from,
          driftTaskStartUntil: SH_SEED_TASK_START_WINDOW.until,
        }
      : {}),
    seconds: r.seconds,
  };
  const counts: Record<string, number> = planCounts(plan);
  if (shPlan !== null && drift !== null) {
    counts['fc_answer_projection'] = shPlan.rows.length;
    for (const [category, n] of Object.entries(drift)) counts[`drift_${category}`] = n;
  }
  return { summary: json ? { ...base, faults: plan.faults, ...(drift !== null ? { drift } : {}) } : base, counts };
}
