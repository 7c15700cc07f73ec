/**
 * `fcctl status` (issue 29 §2): one snapshot of the fleet — the outbox and the apply commands, the
 * registry of `--follow` processes and the live claim owners of batch runs on both databases, the
 * pauses in force, and the newest `reconcile run --all` run. Read-only; each part is its own short
 * read (store.ts): a side not configured is shown so, a side that fails is shown so and the others
 * still are (exit 3). `--watch` calls {@link readStatus} again every 2 s.
 */
import { type ReadSection, sectionReader } from '../cli/section.js';
import type { Db } from '../db/connect.js';
import { conditionsOf, failingOf, statusExitCode, unjudgedOf } from './decide.js';
import {
  readApplyCommands,
  readClaimOwners,
  readOutbox,
  readPauses,
  readReconcileRun,
  readWorkerCounts,
  readWorkers,
} from './store.js';
import type { FailCondition, Sides, StatusDocument } from './types.js';

/** A side's connection, or null when it is not configured. */
export interface StatusDeps {
  readonly fcDb: (() => Promise<Db>) | null;
  readonly shDb: (() => Promise<Db>) | null;
  /** the local clock: the snapshot's `takenAt` */
  readonly now: () => Date;
}

export interface StatusOptions {
  readonly failIf: readonly FailCondition[];
  /** PENDING apply commands count as due after this, as `apply-command scan` (seconds) */
  readonly pendingGraceSeconds: number;
  /** count the history states (BROKER_ACCEPTED, DONE) exactly, whatever the table's size */
  readonly exactCounts: boolean;
}

type Settled<T extends readonly unknown[]> = { -readonly [K in keyof T]: PromiseSettledResult<Awaited<T[K]>> };

/**
 * Promise.all that waits for every read to end before it throws the first error (a usage error,
 * such as a malformed URL of one side): a pool the other side is still opening would otherwise be
 * opened after the command closed its resources, and keep the process from exiting.
 */
async function allSettledThenThrow<T extends readonly unknown[]>(
  reads: readonly [...T],
): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const results = (await Promise.allSettled(reads)) as Settled<T>;
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof T]: Awaited<T[K]>;
  };
}

/** The same read on both databases. */
async function sides<T extends object>(
  section: ReadSection,
  deps: StatusDeps,
  read: (db: Db, side: 'fc' | 'sh') => Promise<T>,
) {
  const [fc, sh] = await allSettledThenThrow([
    section(deps.fcDb, (db) => read(db, 'fc')),
    section(deps.shDb, (db) => read(db, 'sh')),
  ]);
  return { fc, sh } satisfies Sides<T>;
}

/**
 * One snapshot document, the `--fail-if` conditions decided over it.
 * @example const doc = await readStatus({ failIf: ['dead'], pendingGraceSeconds: 600 }, { fcDb, shDb: null, now })
 */
export async function readStatus(o: StatusOptions, deps: StatusDeps): Promise<StatusDocument> {
  const takenAt = deps.now().toISOString();
  // each section's reads end by the deadline (lib/cli/section.ts), its connect included
  const section = sectionReader();
  // independent reads: sent at once (each database's pool), so the snapshot takes its slowest read
  const [outbox, applyCommands, fleet, claims, pauses, reconcile] = await allSettledThenThrow([
    section(deps.fcDb, (db) => readOutbox(db, o.exactCounts)),
    section(deps.shDb, (db) => readApplyCommands(db, o.pendingGraceSeconds, o.exactCounts)),
    sides(section, deps, async (db) => {
      const [workers, counts] = await Promise.all([readWorkers(db), readWorkerCounts(db)]);
      return { workers, ...counts };
    }),
    sides(section, deps, async (db, side) => ({ owners: await readClaimOwners(db, side) })),
    sides(section, deps, async (db) => ({ pauses: await readPauses(db) })),
    section(deps.shDb, async (db) => ({ run: await readReconcileRun(db) })),
  ]);
  const facts = { outbox, applyCommands, fleet, pauses, reconcile };
  const conditions = conditionsOf(facts);
  const failing = failingOf(conditions, o.failIf);
  const unjudged = unjudgedOf(facts, o.failIf);
  const all = [outbox, applyCommands, reconcile, ...[fleet, claims, pauses].flatMap((s) => [s.fc, s.sh])];
  const unreachable = all.filter((s) => s.status === 'unreachable').length;
  return {
    takenAt,
    outbox,
    applyCommands,
    fleet,
    claims,
    pauses,
    reconcile,
    conditions,
    failing,
    unjudged,
    exitCode: statusExitCode({ unreachable, unjudged: unjudged.length, failing }),
  };
}
