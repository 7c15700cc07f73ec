/**
 * The decisions of `manifest scan`, pure: whether a checkpoint is resumed, restarted or refused,
 * what the output's state allows, the checkpoint after a commit, the exit code and the summary.
 */
import { ExitCode } from '../../cli/exit.js';
import type { Summary } from '../../cli/output.js';
import { type Checkpoint, CHECKPOINT_FORMAT, type ScanParams } from '../checkpoint.js';
import type { ManifestSide } from '../row.js';
import { formatShard, type Shard } from '../shard.js';
import type { QueuedPage, ScanProgress, ScanResult } from './types.js';

/** What to do with the checkpoint found (or not) at the checkpoint path. */
export type ResumePlan =
  | { readonly kind: 'fresh'; readonly restarted: boolean }
  | { readonly kind: 'resume'; readonly previous: Checkpoint }
  | { readonly kind: 'refuse'; readonly message: string };

/**
 * A checkpoint of other parameters is refused unless `restart`; one of these parameters is
 * resumed, or discarded by `restart`.
 * @example resumePlan({ previous: null, digest, restart: false, checkpointPath }) // { kind: 'fresh', restarted: false }
 */
export function resumePlan(o: {
  readonly previous: Checkpoint | null;
  readonly digest: string;
  readonly restart: boolean;
  readonly checkpointPath: string;
}): ResumePlan {
  const { previous } = o;
  if (previous === null) return { kind: 'fresh', restarted: false };
  if (previous.paramsDigest !== o.digest && !o.restart) {
    const theirs = previous.params;
    return {
      kind: 'refuse',
      message: `checkpoint ${o.checkpointPath} belongs to another scan (side ${theirs.side}, school ${theirs.schId}, form ${theirs.formUuid}, shard ${theirs.shard ?? 'none'}, out ${theirs.out}, database ${theirs.database}); pass --restart to discard it`,
    };
  }
  if (o.restart) return { kind: 'fresh', restarted: true };
  return { kind: 'resume', previous };
}

/** What a resumed scan does with its output, once its size and the SHA-256 of its checkpointed prefix are known. */
export type OutputPlan =
  | { readonly kind: 'complete' }
  | { readonly kind: 'continue'; readonly truncatedBytes: number }
  | { readonly kind: 'refuse'; readonly message: string };

/**
 * `size` is the output's length (-1: missing); `prefixSha256` the SHA-256 of its first
 * `previous.outputBytes` bytes (null when it is shorter: not read).
 * @example outputPlan(previous, 'out.jsonl', previous.outputBytes + 10, previous.sha256) // { kind: 'continue', truncatedBytes: 10 }
 */
export function outputPlan(
  previous: Pick<Checkpoint, 'outputBytes' | 'sha256' | 'completed'>,
  out: string,
  size: number,
  prefixSha256: string | null,
): OutputPlan {
  if (size < previous.outputBytes || prefixSha256 === null) {
    return {
      kind: 'refuse',
      message: `output ${out} is ${size < 0 ? 'missing' : `${size} bytes`}, shorter than the ${previous.outputBytes} bytes its checkpoint records; pass --restart to scan again`,
    };
  }
  if (prefixSha256 !== previous.sha256)
    return {
      kind: 'refuse',
      message: `the first ${previous.outputBytes} bytes of ${out} changed since they were checkpointed; pass --restart to scan again`,
    };
  if (!previous.completed) return { kind: 'continue', truncatedBytes: size - previous.outputBytes };
  if (size !== previous.outputBytes)
    return {
      kind: 'refuse',
      message: `output ${out} has ${size - previous.outputBytes} bytes after the end of its completed scan; pass --restart to scan again`,
    };
  return { kind: 'complete' };
}

/** The checkpoint a scan starts from: nothing written yet. */
export function freshCheckpoint(o: {
  params: ScanParams;
  digest: string;
  size: number;
  emptySha256: string;
  at: string;
  dbStarted: { local: string; utc: string };
}): Checkpoint {
  return {
    format: CHECKPOINT_FORMAT,
    params: o.params,
    paramsDigest: o.digest,
    size: o.size,
    cursor: null,
    pages: 0,
    rows: 0,
    outputBytes: 0,
    sha256: o.emptySha256,
    completed: false,
    startedAt: o.at,
    updatedAt: o.at,
    completedAt: null,
    dbStartedAt: o.dbStarted.local,
    dbStartedAtUtc: o.dbStarted.utc,
  };
}

/** The checkpoint once `batch` (whole pages, in order) is appended and fsynced. */
export function committedCheckpoint(
  before: Checkpoint,
  batch: readonly QueuedPage[],
  sha256: string,
  at: string,
): Checkpoint {
  let cursor = before.cursor;
  let rows = before.rows;
  let bytes = 0;
  for (const q of batch) {
    if (q.last !== null) cursor = q.last;
    rows += q.rows;
    bytes += q.bytes.length;
  }
  const completed = batch[batch.length - 1]!.completed;
  return {
    ...before,
    cursor,
    pages: before.pages + batch.length,
    rows,
    outputBytes: before.outputBytes + bytes,
    sha256,
    completed,
    updatedAt: at,
    completedAt: completed ? at : null,
  };
}

/** Each page of a commit as the progress hook hears it, in order. */
export function pageReports(before: Checkpoint, batch: readonly QueuedPage[]): ScanProgress[] {
  let page = before.pages;
  let rows = before.rows;
  let outputBytes = before.outputBytes;
  let cursor = before.cursor;
  return batch.map((q) => {
    page++;
    rows += q.rows;
    outputBytes += q.bytes.length;
    if (q.last !== null) cursor = q.last;
    return { page, pageRows: q.rows, rows, outputBytes, cursor, completed: q.completed };
  });
}

/** Exit 0 for a complete manifest, 1 when a stop signal ended it early (run again to continue). */
export function scanExitCode(result: Pick<ScanResult, 'checkpoint'>): number {
  return result.checkpoint.completed ? ExitCode.OK : ExitCode.ITEMS_FAILED;
}

/** The summary line of `manifest scan`. */
export function summarizeScan(
  o: { side: ManifestSide; schId: string; formUuid: string; shard: Shard | null },
  result: ScanResult,
  elapsedMs: number,
): Summary {
  const c = result.checkpoint;
  return {
    command: 'manifest scan',
    exitCode: scanExitCode(result),
    side: o.side,
    schId: o.schId,
    formUuid: o.formUuid,
    shard: formatShard(o.shard),
    out: c.params.out,
    checkpoint: result.checkpointPath,
    completed: c.completed,
    rows: c.rows,
    pages: c.pages,
    outputBytes: c.outputBytes,
    sha256: c.completed ? c.sha256 : null,
    completedAt: c.completedAt,
    resumed: result.resumed,
    alreadyComplete: result.alreadyComplete,
    restarted: result.restarted,
    truncatedBytes: result.truncatedBytes,
    rowsThisRun: result.rowsThisRun,
    // only the process's SIGINT/SIGTERM aborts the signal: the same word as every batch command
    stoppedBy: result.stoppedBy === null ? null : 'signal',
    seconds: Math.round(elapsedMs / 100) / 10,
  };
}
