/**
 * The drift ledger's pure decisions: which older night `--keep-nights` may prune.
 */

/**
 * A night's work queue as the pruner finds it: leases still running, pairs still waiting, and
 * whether a pair was registered or finished within {@link NIGHT_QUIET_MINUTES}.
 */
export interface NightActivity {
  readonly liveLeases: number;
  readonly pending: number;
  readonly recent: boolean;
}

/**
 * A night whose last pair was registered or finished this recently, with pairs still waiting, may
 * have a process between two claims (the window a default run is joined in, ../all/store.ts).
 */
export const NIGHT_QUIET_MINUTES = 30;

/**
 * Whether an older night may be pruned: never the pruning process's own run, never a night still
 * being written — a lease running (a process of it holds a pair: its finish would match no row and
 * its ledger row be lost) or pairs waiting with activity in the last {@link NIGHT_QUIET_MINUTES}
 * (a process about to claim the next). A night abandoned with pairs waiting goes once quiet.
 * @example mayPruneNight('n1', 'n9', { liveLeases: 1, pending: 0, recent: true }) // false
 */
export function mayPruneNight(runId: string, spare: string | null, a: NightActivity): boolean {
  if (runId === spare) return false;
  return a.liveLeases === 0 && !(a.pending > 0 && a.recent);
}
