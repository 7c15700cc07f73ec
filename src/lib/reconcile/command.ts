/** What both `reconcile run` and `reconcile run --all` take from the command's context. */
import { commandThrottles, type Ctx } from '../cli/context.js';
import { requireSetting } from '../config/config.js';
import { databaseIdentity } from '../db/identity.js';
import type { ThrottleLimits } from '../db/throttle.js';
import { pauseCheck } from '../pause/run.js';

/**
 * The two databases as a run's parameters name them (host, port and database, never a secret), and
 * the runner's connections, clock, signal, pause switch and throttles.
 */
export async function reconcileSides(ctx: Ctx, throttleLimits: ThrottleLimits, pauseFile: string | undefined) {
  const fcDatabase = databaseIdentity(requireSetting(ctx.config, 'fcDatabaseUrl'));
  const shDatabase = databaseIdentity(requireSetting(ctx.config, 'shDatabaseUrl'));
  const throttle = await commandThrottles(ctx, throttleLimits, {
    fc: { db: ctx.fcDb, label: 'FC database' },
    sh: { db: ctx.shDb, label: 'SH database' },
  });
  return {
    databases: { fcDatabase, shDatabase },
    throttle,
    deps: {
      fcDb: () => ctx.fcDb(),
      shDb: () => ctx.shDb(),
      signal: ctx.signal,
      now: ctx.now,
      paused: pauseCheck('reconcile run', ctx.shDb, pauseFile),
      throttle,
    },
  };
}
