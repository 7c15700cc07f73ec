/**
 * Two whole-run decisions of the reconciliation, pure so they are tested as tables:
 *
 * - {@link taskStartRefusal}: a task start is only trusted when it is earlier than the FC scan's
 *   own start (a row created after the FC scan began may be missing from the FC manifest; its
 *   local copy must then have a createTime after the task start, or it becomes a retire candidate);
 * - {@link emptyPairWarning}: a school and form with no row on either side is most likely a typo
 *   in a cron line, and no row at FC with rows at SH the wrong FC database; either would otherwise
 *   stay green for ever.
 */

/** One FC checkpoint as the task-start check sees it. */
export interface FcScanStart {
  readonly path: string;
  /** `yyyy-MM-dd HH:mm:ss`, the FC database's NOW() when the scan began; undefined in a checkpoint written before fcctl recorded it */
  readonly dbStartedAt: string | undefined;
  /** `yyyy-MM-dd HH:mm:ss`, the FC database's UTC_TIMESTAMP() at the same instant; undefined in older checkpoints */
  readonly dbStartedAtUtc?: string | undefined;
}

/**
 * A task start: `local` is the SH database's NOW(); `utc` its UTC_TIMESTAMP() at the same instant,
 * known when `reconcile run` took it (a `--task-start` typed by hand has no UTC).
 */
export interface TaskStart {
  readonly local: string;
  readonly utc?: string | undefined;
}

/**
 * Why a task start cannot be trusted against these FC scans, or null when it can: each scan
 * (every shard's) must record its start, and the task start must be strictly earlier than each.
 * Whole seconds: an answer created at FC in the scan's first second, after the scan passed its
 * key, and projected locally in that second, has a local createTime equal to that second — so a
 * task start equal to the scan's start would make it a candidate.
 *
 * With a UTC task start (`reconcile run`) the instants are compared in UTC: the task start is the
 * SH clock and the scan's start the FC clock, and the two may be in different zones. A task start
 * given as local text only (`reconcile diff --task-start`) is compared with the scan's local
 * `dbStartedAt`, which is only meaningful when SH and FC are in the same zone (the message says so).
 * A checkpoint without the start needed (written by an older fcctl) is refused: nothing shows when
 * that scan began, so any task start could be too late.
 * @example taskStartRefusal('2026-11-30 01:00:00', [{ path: 'fc.checkpoint.json', dbStartedAt: '2026-11-30 01:00:01' }]) // null
 * @example taskStartRefusal({ local: '2026-11-30 09:00:00', utc: '2026-11-30 01:00:00' }, [{ path: 'fc.checkpoint.json', dbStartedAt: '2026-11-30 02:00:01', dbStartedAtUtc: '2026-11-30 01:00:01' }]) // null
 */
export function taskStartRefusal(taskStart: string | TaskStart, scans: readonly FcScanStart[]): string | null {
  const t: TaskStart = typeof taskStart === 'string' ? { local: taskStart } : taskStart;
  for (const s of scans) {
    if (s.dbStartedAt === undefined) {
      return `FC checkpoint ${s.path} does not record when its scan began in the database's clock (written by an older fcctl), so a task start cannot be checked against it; scan FC again (manifest scan --restart, or reconcile run --restart)`;
    }
    if (t.utc !== undefined && s.dbStartedAtUtc === undefined) {
      return `FC checkpoint ${s.path} does not record when its scan began in UTC (written by an older fcctl), so the task start cannot be checked against it; scan FC again (manifest scan --restart, or reconcile run --restart)`;
    }
  }
  if (t.utc !== undefined) {
    const earliest = scans.map((s) => s.dbStartedAtUtc!).sort()[0];
    if (earliest !== undefined && t.utc >= earliest) {
      return `the task start ${t.utc} UTC (SH database clock) is not before the FC scan's start ${earliest} UTC (FC database clock): answers created at FC after the scan began could be taken as absent at FC; the FC clock is behind the SH clock, or the FC scan began before the task start`;
    }
    return null;
  }
  const earliest = scans.map((s) => s.dbStartedAt!).sort()[0];
  if (earliest !== undefined && t.local >= earliest) {
    return `--task-start ${t.local} is not before the FC scan's start ${earliest} (FC database clock, compared as local time: SH and FC must be in the same time zone): answers created at FC after the scan began could be taken as absent at FC; take the task start (SH database NOW()) before the FC scan begins`;
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
 * The one-line warning for an empty side (exit 1), or null:
 * - no rows at FC nor at SH: most likely a wrong `--school` or `--form` in a cron line;
 * - no rows at FC while SH has some: most likely the wrong FC database — every local row would be
 *   a retire candidate.
 * (Rows at FC and none at SH is a projection not filled yet: the repair plan says so; no warning.)
 * @example emptyPairWarning({ schId: '5', formUuid: 'f…', fcRows: 0, shRows: 0, allowEmpty: false }) // 'warning: no rows at FC or SH for school 5 form f…; …'
 */
export function emptyPairWarning(c: PairCounts): string | null {
  if (c.allowEmpty || c.fcRows > 0) return null;
  if (c.shRows === 0)
    return `warning: no rows at FC or SH for school ${c.schId} form ${c.formUuid}: a wrong --school or --form? (pass --allow-empty if the pair is empty on purpose)`;
  return `warning: no rows at FC but ${c.shRows} at SH for school ${c.schId} form ${c.formUuid}: the wrong FC database (FCCTL_FC_DATABASE_URL)? every local row is a retire candidate (pass --allow-empty if FC is empty on purpose)`;
}
