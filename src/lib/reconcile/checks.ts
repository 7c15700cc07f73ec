/**
 * Two whole-run decisions of the reconciliation, pure so they are tested as tables:
 *
 * - {@link taskStartRefusal}: a task start is only trusted when it is earlier than the FC scan's
 *   own start (a row created after the FC scan began may be missing from the FC manifest; its
 *   local copy must then have a createTime after the task start, or it becomes a retire candidate);
 * - {@link emptyPairWarning}: a school and form with no row on either side is most likely a typo
 *   in a cron line, which would otherwise stay green for ever.
 */

/** One FC checkpoint as the task-start check sees it. */
export interface FcScanStart {
  readonly path: string;
  /** `yyyy-MM-dd HH:mm:ss`, the FC database's NOW() when the scan began; undefined in a checkpoint written before fcctl recorded it */
  readonly dbStartedAt: string | undefined;
}

/**
 * Why a task start cannot be trusted against these FC scans, or null when it can: each scan
 * (every shard's) must record its start, and the task start must be strictly earlier than each.
 * Whole seconds: an answer created at FC in the scan's first second, after the scan passed its
 * key, and projected locally in that second, has a local createTime equal to that second — so a
 * task start equal to the scan's start would make it a candidate.
 * A checkpoint without the start (written by an older fcctl) is refused: nothing shows when that
 * scan began, so any task start could be too late.
 * @example taskStartRefusal('2026-11-30 01:00:00', [{ path: 'fc.checkpoint.json', dbStartedAt: '2026-11-30 01:00:01' }]) // null
 */
export function taskStartRefusal(taskStart: string, scans: readonly FcScanStart[]): string | null {
  for (const s of scans) {
    if (s.dbStartedAt === undefined) {
      return `FC checkpoint ${s.path} does not record when its scan began in the database's clock (written by an older fcctl), so a task start cannot be checked against it; scan FC again (manifest scan --restart, or reconcile run --restart)`;
    }
  }
  const earliest = scans.map((s) => s.dbStartedAt!).sort()[0];
  if (earliest !== undefined && taskStart >= earliest) {
    return `--task-start ${taskStart} is not before the FC scan's start ${earliest} (FC database clock): answers created at FC after the scan began could be taken as absent at FC; take the task start (SH database NOW()) before the FC scan begins`;
  }
  return null;
}

/** What the empty-pair check looks at. */
export interface PairCounts {
  readonly schId: string;
  readonly formUuid: string;
  readonly fcRows: number;
  readonly shRows: number;
  /** `--allow-empty`: an empty pair is expected */
  readonly allowEmpty: boolean;
}

/**
 * The one-line warning for a school and form with no rows at FC nor at SH (exit 1), or null.
 * @example emptyPairWarning({ schId: '5', formUuid: 'f…', fcRows: 0, shRows: 0, allowEmpty: false }) // 'warning: no rows at FC or SH for school 5 form f…; …'
 */
export function emptyPairWarning(c: PairCounts): string | null {
  if (c.allowEmpty || c.fcRows > 0 || c.shRows > 0) return null;
  return `warning: no rows at FC or SH for school ${c.schId} form ${c.formUuid}: a wrong --school or --form? (pass --allow-empty if the pair is empty on purpose)`;
}
