/** `run.json`, the run directory's files, and the shapes `reconcile run`'s runner takes and returns. */
import type { Db } from '../../db/connect.js';
import type { Throttle } from '../../db/throttle.js';
import type { PauseState } from '../../pause/decide.js';
import type { ManifestSide } from '../../manifest/row.js';
import type { ScanProgress, ScanResult } from '../../manifest/scan/types.js';
import type { Category } from '../diff/decide.js';
import type { DiffSummary } from '../diff/types.js';

export const RUN_FORMAT = 'fcctl.reconcile.run.v1';

/** File names inside a run directory, besides the manifests ({@link RUN_MANIFESTS}) and the diff's files. */
export const RUN_FILES = { run: 'run.json', lock: 'reconcile.lock' } as const;

/** Each side's manifest and its checkpoint inside a run directory. */
export const RUN_MANIFESTS: Readonly<Record<ManifestSide, { readonly manifest: string; readonly checkpoint: string }>> =
  {
    fc: { manifest: 'fc-manifest.jsonl', checkpoint: 'fc-manifest.checkpoint.json' },
    sh: { manifest: 'sh-manifest.jsonl', checkpoint: 'sh-manifest.checkpoint.json' },
  };

export interface RunParams {
  readonly schId: string;
  readonly formUuid: string;
  readonly fcDatabase: string;
  readonly shDatabase: string;
}

/** `run.json`. */
export interface RunState {
  readonly format: typeof RUN_FORMAT;
  readonly runId: string;
  readonly params: RunParams;
  readonly paramsDigest: string;
  /** `yyyy-MM-dd HH:mm:ss`, the SH database's NOW() when the run began */
  readonly taskStart: string;
  /**
   * `yyyy-MM-dd HH:mm:ss`, the SH database's UTC_TIMESTAMP() at the same instant: the task start is
   * checked against the FC scan's start in UTC (the two databases may be in different zones);
   * absent in a run.json of an older fcctl (its diff then compares local times, as it did)
   */
  readonly taskStartUtc?: string;
  readonly startedAt: string;
  readonly state: 'scanning' | 'completed';
  readonly completedAt: string | null;
  readonly counts: Readonly<Record<Category, number>> | null;
  /** the `reconcile run --all` run this pair's run belongs to (absent: run alone) */
  readonly allRunId?: string;
}

export interface ReconcileRunOptions {
  readonly schId: string;
  readonly formUuid: string;
  readonly outDir: string;
  readonly size: number;
  readonly restart: boolean;
  readonly fcDatabase: string;
  readonly shDatabase: string;
  /** `--all`'s run id, recorded in a new run's run.json */
  readonly allRunId?: string;
}

export type RunPhase = 'task-start' | 'scan-fc' | 'scan-sh' | 'diff';

export interface ReconcileRunDeps {
  readonly fcDb: () => Promise<Db>;
  readonly shDb: () => Promise<Db>;
  readonly signal: AbortSignal;
  readonly now?: () => Date;
  readonly onPhase?: (phase: RunPhase, detail: Record<string, unknown>) => void;
  readonly onPage?: (side: ManifestSide, p: ScanProgress) => void | Promise<void>;
  readonly onDiffProgress?: (answers: number) => void;
  /**
   * the task start of a new run; default: {@link takeTaskStart} on the SH database. `--all` shares
   * one among pairs begun within seconds of each other (an earlier start is as safe: it only marks
   * more rows as created after it), instead of waiting up to a second per pair
   */
  readonly taskStart?: () => Promise<{ local: string; utc: string } | null>;
  /** the pause switch (`fcctl pause reconcile run`, `--pause-file`), read at start and before each manifest page */
  readonly paused?: () => Promise<PauseState | null>;
  /** `--max-load`/`--max-lag` (lib/db/throttle.ts): each side's scan waits on its own database's throttle before each page */
  readonly throttle?: Readonly<Partial<Record<ManifestSide, Throttle>>>;
}

export type ReconcileRunResult =
  | {
      readonly kind: 'done';
      readonly run: RunState;
      readonly resumed: boolean;
      readonly scans: Readonly<Record<ManifestSide, ScanResult>>;
      readonly summary: DiffSummary;
      readonly outDir: string;
    }
  /** `run` is null when the run was stopped before its task start was taken (nothing recorded) */
  | {
      readonly kind: 'stopped';
      readonly run: RunState | null;
      readonly resumed: boolean;
      readonly phase: RunPhase;
      readonly reason: string;
      readonly outDir: string;
      readonly paused?: PauseState;
    };
