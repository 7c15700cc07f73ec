/**
 * `manifest scan`: pages one side of one school and form into a JSONL file, with a checkpoint
 * after every page, so that a scan killed at any point resumes where it stopped and the finished
 * file is byte-identical to an uninterrupted one (SPEC §7).
 *
 * The runner reads as its steps (check the arguments, take the lock, plan the resume, open the
 * output, run the page pipeline); three loops run side by side in the pipeline (./pipeline.ts):
 * - the planner finds where the next full page ends from the index alone (`LIMIT 2 OFFSET size-1`
 *   on the key column: no row visited) and requests that page, `(cursor, last key]`, at once — up to
 *   {@link PIPELINE_PAGES} page queries run together, as one streaming SELECT's rows would flow;
 * - the reader takes the pages in key order (a range that grew after it was planned is read on to
 *   its end, page by page) and formats their lines;
 * - the writer appends the lines at the checkpointed length, fsyncs the output, and only then
 *   replaces the checkpoint (cursor, rows, output length, SHA-256 of the output so far) atomically.
 *   While the disk keeps up that is one commit per page; when the reader is ahead, the pages
 *   waiting (at most {@link READ_AHEAD_PAGES}) are committed together — a checkpoint always covers
 *   whole pages.
 *
 * A kill between the output's fsync and the checkpoint's rename leaves the output longer than its
 * checkpoint: the next run checks the checkpointed prefix against its SHA-256, cuts the rest and
 * continues after the checkpointed cursor. Rows are written in key order whatever the page
 * boundaries, so the finished file does not depend on where a run was killed.
 */
import { paramsDigest } from '../../canon/params-digest.js';
import { databaseNow } from '../../db/clock.js';
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { SafetyError, UsageError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import { removeStaleTemps } from '../../files/atomic.js';
import { type Checkpoint, lockPathFor, readCheckpoint, type ScanParams, writeCheckpoint } from '../checkpoint.js';
import { acquireLock } from '../../files/lock.js';
import { formatShard, shardRange } from '../shard.js';
import { freshCheckpoint, outputPlan, resumePlan } from './decide.js';
import { runPagePipeline } from './pipeline.js';
import type { ScanDeps, ScanOptions, ScanResult } from './types.js';

/** SHA-256 of a file's first `bytes` bytes (throws when it is shorter). */
async function hashPrefix(path: string, bytes: number, hash: Hash): Promise<void> {
  if (bytes === 0) return;
  let seen = 0;
  for await (const chunk of createReadStream(path, { start: 0, end: bytes - 1, highWaterMark: 1024 * 1024 })) {
    hash.update(chunk as Buffer);
    seen += (chunk as Buffer).length;
  }
  if (seen !== bytes) throw new Error(`read ${seen} of ${bytes} bytes`);
}

/** The scan's parameters as a checkpoint records them. */
export function scanParams(o: ScanOptions): ScanParams {
  return {
    side: o.side,
    database: o.database,
    schId: o.schId,
    formUuid: o.formUuid,
    shard: formatShard(o.shard),
    out: resolve(o.out),
  };
}

/**
 * Runs (or resumes) a scan. Refusals (exit 4): a checkpoint from other parameters (unless
 * `restart`), a live scan holding the checkpoint's lock, an output shorter than its checkpoint or
 * whose checkpointed part changed.
 * @example const r = await runManifestScan({ side: 'sh', schId: '5', formUuid, shard: null, size: 200, out: 'sh.jsonl', checkpoint: 'sh.checkpoint.json', restart: false, database }, { db, signal })
 */
export async function runManifestScan(o: ScanOptions, deps: ScanDeps): Promise<ScanResult> {
  const now = deps.now ?? (() => new Date());
  const params = scanParams(o);
  const checkpointPath = resolve(o.checkpoint);
  await checkPaths(params.out, checkpointPath);
  const lock = await acquireLock(
    lockPathFor(checkpointPath),
    deps.command ?? 'manifest scan',
    `checkpoint ${checkpointPath}`,
  );
  let fh: FileHandle | undefined;
  try {
    const start = await startingPoint(o, params, checkpointPath, deps.db, now);
    if (start.kind === 'complete') return start.result;
    fh = start.fh;
    const run = await runPagePipeline({
      db: deps.db,
      side: o.side,
      page: { schId: o.schId, formUuid: o.formUuid, size: o.size, range: shardRange(o.shard) },
      fh,
      hash: start.hash,
      checkpoint: start.checkpoint,
      checkpointPath,
      lock,
      signal: deps.signal,
      now,
      ...(deps.onPage ? { onPage: deps.onPage } : {}),
      ...(deps.paused ? { paused: deps.paused } : {}),
      ...(deps.throttle ? { throttle: deps.throttle } : {}),
    });
    return {
      ...run,
      checkpointPath,
      resumed: start.resumed,
      alreadyComplete: false,
      restarted: start.restarted,
      truncatedBytes: start.truncatedBytes,
    };
  } finally {
    await fh?.close().catch(() => undefined);
    await lock.release();
  }
}

/** Exit 2 before any checkpoint is written: an --out that is a directory would fail only after it. */
async function checkPaths(out: string, checkpointPath: string): Promise<void> {
  if (checkpointPath === out) throw new UsageError('--checkpoint and --out must be different files');
  const existing = await stat(out).catch(() => null);
  if (existing !== null && !existing.isFile()) throw new UsageError(`--out ${out} is not a regular file`);
}

type Start =
  | { readonly kind: 'complete'; readonly result: ScanResult }
  | {
      readonly kind: 'open';
      readonly fh: FileHandle;
      readonly hash: Hash;
      readonly checkpoint: Checkpoint;
      readonly resumed: boolean;
      readonly restarted: boolean;
      readonly truncatedBytes: number;
    };

/** The resume plan, carried out: the output open at the length to continue from, and its checkpoint. */
async function startingPoint(
  o: ScanOptions,
  params: ScanParams,
  checkpointPath: string,
  db: Db,
  now: () => Date,
): Promise<Start> {
  // A scan killed while replacing its checkpoint left a temp file.
  await removeStaleTemps(checkpointPath);
  const digest = paramsDigest(params);
  const plan = resumePlan({
    previous: await readCheckpoint(checkpointPath),
    digest,
    restart: o.restart,
    checkpointPath,
  });
  if (plan.kind === 'refuse') throw new SafetyError(plan.message);
  const hash = createHash('sha256');
  if (plan.kind === 'resume') return resumeOutput(plan.previous, o.size, params.out, checkpointPath, hash);
  // Before any page is read: rows the scan may miss were created after this instant.
  const at = now().toISOString();
  const checkpoint = freshCheckpoint({
    params,
    digest,
    size: o.size,
    emptySha256: hash.copy().digest('hex'),
    at,
    dbStarted: await databaseNow(db),
  });
  // The fresh checkpoint replaces any old one before the output is emptied, so a kill from here
  // on always resumes (from nothing).
  await writeCheckpoint(checkpointPath, checkpoint);
  const fh = await open(params.out, 'w', 0o600);
  await fh.datasync();
  return { kind: 'open', fh, hash, checkpoint, resumed: false, restarted: plan.restarted, truncatedBytes: 0 };
}

/** A checkpoint of these parameters: its output checked against it, and cut back to its length. */
async function resumeOutput(
  previous: Checkpoint,
  size: number,
  out: string,
  checkpointPath: string,
  hash: Hash,
): Promise<Start> {
  let length = await fileSize(out);
  if (length < 0 && previous.outputBytes === 0) {
    // killed between writing a fresh checkpoint and creating the output
    await (await open(out, 'w', 0o600)).close();
    length = 0;
  }
  let prefix: string | null = null;
  if (length >= previous.outputBytes) {
    try {
      await hashPrefix(out, previous.outputBytes, hash);
    } catch (err) {
      throw new SafetyError(`cannot read the checkpointed part of ${out}: ${(err as Error).message}`);
    }
    prefix = hash.copy().digest('hex');
  }
  const plan = outputPlan(previous, out, length, prefix);
  if (plan.kind === 'refuse') throw new SafetyError(plan.message);
  if (plan.kind === 'complete') {
    return {
      kind: 'complete',
      result: {
        checkpoint: previous,
        checkpointPath,
        resumed: true,
        alreadyComplete: true,
        restarted: false,
        truncatedBytes: 0,
        rowsThisRun: 0,
        pagesThisRun: 0,
        stoppedBy: null,
      },
    };
  }
  const fh = await open(out, 'r+');
  if (plan.truncatedBytes > 0) {
    await fh.truncate(previous.outputBytes);
    await fh.datasync();
  }
  return {
    kind: 'open',
    fh,
    hash,
    checkpoint: { ...previous, size },
    resumed: true,
    restarted: false,
    truncatedBytes: plan.truncatedBytes,
  };
}

/** A file's length; -1 when it does not exist. */
async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return -1;
  }
}
