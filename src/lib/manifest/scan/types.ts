import type { Db } from '../../db/connect.js';
import type { Throttle } from '../../db/throttle.js';
import type { PauseState } from '../../pause/decide.js';
import type { Checkpoint } from '../checkpoint.js';
import type { ManifestSide } from '../row.js';
import type { Shard } from '../shard.js';

export interface ScanOptions {
  readonly side: ManifestSide;
  readonly schId: string;
  readonly formUuid: string;
  readonly shard: Shard | null;
  readonly size: number;
  readonly out: string;
  readonly checkpoint: string;
  /** discard a checkpoint from other parameters (or a finished one) and start over */
  readonly restart: boolean;
  /** `host:port/database` of the side's database, part of the parameters */
  readonly database: string;
}

/** What a page just written looks like to a progress view or a test hook. */
export interface ScanProgress {
  readonly page: number;
  readonly pageRows: number;
  readonly rows: number;
  readonly outputBytes: number;
  readonly cursor: string | null;
  readonly completed: boolean;
}

export interface ScanDeps {
  readonly db: Db;
  readonly signal: AbortSignal;
  readonly now?: () => Date;
  /** called after each page's checkpoint is durable */
  readonly onPage?: (p: ScanProgress) => void | Promise<void>;
  /** named in the lock file */
  readonly command?: string;
  /** the pause switch of the command that scans (`reconcile run`), read before the first page and after each commit */
  readonly paused?: () => Promise<PauseState | null>;
  /** `--max-load`/`--max-lag` on the database read: awaited before each page is requested */
  readonly throttle?: Throttle;
}

export interface ScanResult {
  readonly checkpoint: Checkpoint;
  readonly checkpointPath: string;
  /** a checkpoint of these parameters was found and continued */
  readonly resumed: boolean;
  /** the checkpoint was already complete: nothing was read */
  readonly alreadyComplete: boolean;
  /** a checkpoint was discarded by `restart` */
  readonly restarted: boolean;
  /** bytes cut from the output's end (a page written after the last checkpoint) */
  readonly truncatedBytes: number;
  readonly rowsThisRun: number;
  readonly pagesThisRun: number;
  /** set when a stop signal ended the scan before it completed (`paused`: the pause switch) */
  readonly stoppedBy: string | null;
  /** the pause that stopped the scan */
  readonly paused?: PauseState;
}

/** A page read and formatted, waiting for the writer. */
export interface QueuedPage {
  readonly rows: number;
  /** its last answer uuid; null for an empty page */
  readonly last: string | null;
  readonly completed: boolean;
  readonly bytes: Buffer;
}
