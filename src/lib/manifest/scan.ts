/**
 * `manifest scan`: pages one side of one school and form into a JSONL file, with a checkpoint
 * after every page, so that a scan killed at any point resumes where it stopped and the finished
 * file is byte-identical to an uninterrupted one (SPEC §7).
 *
 * Three loops run side by side:
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
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { SafetyError, UsageError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import { removeStaleTemps } from '../fs/atomic.js';
import { type Checkpoint, CHECKPOINT_FORMAT, lockPathFor, paramsDigest, readCheckpoint, type ScanParams, writeCheckpoint } from './checkpoint.js';
import { acquireLock } from './lock.js';
import { type ManifestLines, readManifestLines, readPageBoundary } from './page.js';
import { type ManifestSide, normalizeDateTime } from './row.js';
import { formatShard, type Shard, shardRange } from './shard.js';

/**
 * Pages read ahead of the writer at most (about 0.5 MB at 500 rows a page): the reader waits when
 * this many pages are waiting to be written.
 */
export const READ_AHEAD_PAGES = 4;

/** Page queries a scan keeps running at once (each on its own pooled connection). */
export const PIPELINE_PAGES = 3;

/** A page read and formatted, waiting for the writer. */
interface QueuedPage {
  readonly rows: number;
  /** its last answer uuid; null for an empty page */
  readonly last: string | null;
  readonly completed: boolean;
  readonly bytes: Buffer;
}

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
  /** set when a stop signal ended the scan before it completed */
  readonly stoppedBy: string | null;
}

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

async function writeAll(fh: FileHandle, data: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await fh.write(data, done, data.length - done, position + done);
    done += bytesWritten;
  }
}

/**
 * The database's NOW() and UTC_TIMESTAMP() as `yyyy-MM-dd HH:mm:ss` (its own clock, whole seconds,
 * as DATETIMEs are), read in one statement so both name the same instant: the local one compares
 * with the side's DATETIMEs, the UTC one with another database's clock in another zone.
 * @example await databaseNow(db) // { local: '2026-11-30 09:00:01', utc: '2026-11-30 01:00:01' }
 */
export async function databaseNow(db: Db): Promise<{ local: string; utc: string }> {
  const rows = await db.query<{ t: string; u: string }>('SELECT CAST(NOW() AS CHAR) AS t, CAST(UTC_TIMESTAMP() AS CHAR) AS u');
  const local = normalizeDateTime(String(rows[0]?.t ?? ''));
  const utc = normalizeDateTime(String(rows[0]?.u ?? ''));
  if (local === null || utc === null) throw new Error(`the database's NOW() is not a DATETIME: ${JSON.stringify(rows[0])}`);
  return { local, utc };
}

/** The scan's parameters as a checkpoint records them. */
export function scanParams(o: ScanOptions): ScanParams {
  return { side: o.side, database: o.database, schId: o.schId, formUuid: o.formUuid, shard: formatShard(o.shard), out: resolve(o.out) };
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
  const digest = paramsDigest(params);
  const checkpointPath = resolve(o.checkpoint);
  if (checkpointPath === params.out) throw new UsageError('--checkpoint and --out must be different files');
  // Before any checkpoint is written: an --out that is a directory would fail only after it.
  const existing = await stat(params.out).catch(() => null);
  if (existing !== null && !existing.isFile()) throw new UsageError(`--out ${params.out} is not a regular file`);
  const lock = await acquireLock(lockPathFor(checkpointPath), deps.command ?? 'manifest scan', `checkpoint ${checkpointPath}`);
  let fh: FileHandle | undefined;
  try {
    // A scan killed while replacing its checkpoint left a temp file.
    await removeStaleTemps(checkpointPath);
    let previous = await readCheckpoint(checkpointPath);
    let restarted = false;
    if (previous !== null && previous.paramsDigest !== digest) {
      if (!o.restart) {
        const theirs = previous.params;
        throw new SafetyError(
          `checkpoint ${checkpointPath} belongs to another scan (side ${theirs.side}, school ${theirs.schId}, form ${theirs.formUuid}, shard ${theirs.shard ?? 'none'}, out ${theirs.out}, database ${theirs.database}); pass --restart to discard it`,
        );
      }
      previous = null;
      restarted = true;
    } else if (previous !== null && o.restart) {
      previous = null;
      restarted = true;
    }

    const hash = createHash('sha256');
    let truncatedBytes = 0;
    let checkpoint: Checkpoint;
    if (previous !== null) {
      let size: number;
      try {
        size = (await stat(params.out)).size;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        size = -1;
      }
      if (size < 0 && previous.outputBytes === 0) {
        // killed between writing a fresh checkpoint and creating the output
        await (await open(params.out, 'w', 0o600)).close();
        size = 0;
      }
      if (size < previous.outputBytes) {
        throw new SafetyError(`output ${params.out} is ${size < 0 ? 'missing' : `${size} bytes`}, shorter than the ${previous.outputBytes} bytes its checkpoint records; pass --restart to scan again`);
      }
      try {
        await hashPrefix(params.out, previous.outputBytes, hash);
      } catch (err) {
        throw new SafetyError(`cannot read the checkpointed part of ${params.out}: ${(err as Error).message}`);
      }
      if (hash.copy().digest('hex') !== previous.sha256) {
        throw new SafetyError(`the first ${previous.outputBytes} bytes of ${params.out} changed since they were checkpointed; pass --restart to scan again`);
      }
      if (previous.completed) {
        if (size !== previous.outputBytes) throw new SafetyError(`output ${params.out} has ${size - previous.outputBytes} bytes after the end of its completed scan; pass --restart to scan again`);
        return { checkpoint: previous, checkpointPath, resumed: true, alreadyComplete: true, restarted, truncatedBytes: 0, rowsThisRun: 0, pagesThisRun: 0, stoppedBy: null };
      }
      fh = await open(params.out, 'r+');
      truncatedBytes = size - previous.outputBytes;
      if (truncatedBytes > 0) {
        await fh.truncate(previous.outputBytes);
        await fh.datasync();
      }
      checkpoint = { ...previous, size: o.size };
    } else {
      const t = now().toISOString();
      // Before any page is read: rows the scan may miss were created after this instant.
      const dbStarted = await databaseNow(deps.db);
      checkpoint = {
        format: CHECKPOINT_FORMAT,
        params,
        paramsDigest: digest,
        size: o.size,
        cursor: null,
        pages: 0,
        rows: 0,
        outputBytes: 0,
        sha256: hash.copy().digest('hex'),
        completed: false,
        startedAt: t,
        updatedAt: t,
        completedAt: null,
        dbStartedAt: dbStarted.local,
        dbStartedAtUtc: dbStarted.utc,
      };
      // The fresh checkpoint replaces any old one before the output is emptied, so a kill from
      // here on always resumes (from nothing).
      await writeCheckpoint(checkpointPath, checkpoint);
      fh = await open(params.out, 'w', 0o600);
      await fh.datasync();
    }

    const range = shardRange(o.shard);
    const base = { schId: o.schId, formUuid: o.formUuid, size: o.size, range };
    let rowsThisRun = 0;
    let pagesThisRun = 0;
    let stoppedBy: string | null = null;
    let failure: { error: unknown } | null = null;
    /** pages read, in order, waiting for the writer (row objects already dropped) */
    const queue: QueuedPage[] = [];
    /** page ranges planned and requested, in order, waiting for the reader */
    const planned: Array<{ upTo: string | null; result: Promise<ManifestLines> }> = [];
    let planDone = false;
    let readerDone = false;
    const wakers: Record<'planner' | 'reader' | 'writer', (() => void) | null> = { planner: null, reader: null, writer: null };
    const wake = (which: 'planner' | 'reader' | 'writer') => {
      const w = wakers[which];
      wakers[which] = null;
      w?.();
    };
    const sleep = (which: 'planner' | 'reader' | 'writer') => new Promise<void>((r) => (wakers[which] = r));
    const stopped = () => failure !== null || stoppedBy !== null;
    const fail = (error: unknown) => {
      failure ??= { error };
      wake('planner');
      wake('reader');
      wake('writer');
    };
    const quiet = <T>(p: Promise<T>): Promise<T> => {
      p.catch(() => undefined); // awaited later; one abandoned by a stop must not be an unhandled rejection
      return p;
    };

    // The planner: finds where each next full page ends from the index alone (a cheap query) and
    // requests that page at once, so up to PIPELINE_PAGES page queries run side by side.
    const planner = (async () => {
      try {
        let after = checkpoint.cursor;
        for (;;) {
          while (planned.length >= PIPELINE_PAGES && !stopped()) await sleep('planner');
          if (stopped()) return;
          const upTo = await readPageBoundary(deps.db, o.side, { ...base, cursor: after });
          planned.push({ upTo, result: quiet(readManifestLines(deps.db, o.side, { ...base, cursor: after, upTo })) });
          wake('reader');
          if (upTo === null) return;
          after = upTo;
        }
      } catch (err) {
        fail(err);
      } finally {
        planDone = true;
        wake('reader');
      }
    })();

    // The reader: takes the planned pages in order and hands them to the writer. A range that
    // grew after it was planned (rows inserted meanwhile) is read on, page by page, to its end.
    const reader = (async () => {
      try {
        for (;;) {
          if (stopped()) return;
          if (deps.signal.aborted) {
            stoppedBy = String((deps.signal.reason as Error | undefined)?.message ?? 'signal');
            wake('planner');
            return;
          }
          if (planned.length === 0) {
            if (planDone) return;
            await sleep('reader');
            continue;
          }
          const entry = planned.shift()!;
          wake('planner');
          let page = await entry.result;
          for (;;) {
            if (stopped()) return;
            const completed = !page.more && entry.upTo === null;
            queue.push({ rows: page.rows, last: page.last, completed, bytes: Buffer.from(page.text, 'utf8') });
            wake('writer');
            if (completed) return;
            while (queue.length >= READ_AHEAD_PAGES && !stopped()) await sleep('reader');
            if (!page.more) break;
            page = await readManifestLines(deps.db, o.side, { ...base, cursor: page.last, upTo: entry.upTo });
          }
        }
      } catch (err) {
        fail(err);
      } finally {
        readerDone = true;
        wake('writer');
      }
    })();

    // The writer: appends what was read, fsyncs it, then replaces the checkpoint (group commit:
    // one page per commit while the disk keeps up, every page waiting when it does not).
    const writer = (async () => {
      try {
        for (;;) {
          if (failure) return;
          if (queue.length === 0) {
            if (readerDone) return;
            await sleep('writer');
            continue;
          }
          const batch = queue.splice(0, queue.length);
          wake('reader');
          const bytes = batch.length === 1 ? batch[0]!.bytes : Buffer.concat(batch.map((b) => b.bytes));
          await writeAll(fh!, bytes, checkpoint.outputBytes);
          await fh!.datasync();
          hash.update(bytes);
          const before = checkpoint;
          let cursor = before.cursor;
          let rows = before.rows;
          for (const q of batch) {
            if (q.last !== null) cursor = q.last;
            rows += q.rows;
          }
          const completed = batch[batch.length - 1]!.completed;
          const t = now().toISOString();
          checkpoint = {
            ...before,
            cursor,
            pages: before.pages + batch.length,
            rows,
            outputBytes: before.outputBytes + bytes.length,
            sha256: hash.copy().digest('hex'),
            completed,
            updatedAt: t,
            completedAt: completed ? t : null,
          };
          await lock.verify();
          await writeCheckpoint(checkpointPath, checkpoint);
          // Each page of the commit reported in order, now that it is durable.
          let pageNo = before.pages;
          let rowsSoFar = before.rows;
          let offset = before.outputBytes;
          let last = before.cursor;
          for (const q of batch) {
            pageNo++;
            rowsSoFar += q.rows;
            offset += q.bytes.length;
            if (q.last !== null) last = q.last;
            rowsThisRun += q.rows;
            pagesThisRun++;
            await deps.onPage?.({ page: pageNo, pageRows: q.rows, rows: rowsSoFar, outputBytes: offset, cursor: last, completed: q.completed });
          }
          if (completed) return;
          if (deps.signal.aborted) {
            // Stop at a commit: pages read but not committed are read again by the next run.
            stoppedBy ??= String((deps.signal.reason as Error | undefined)?.message ?? 'signal');
            queue.length = 0;
            wake('planner');
            wake('reader');
            return;
          }
        }
      } catch (err) {
        fail(err);
      }
    })();

    await Promise.all([planner, reader, writer]);
    if (failure) throw (failure as { error: unknown }).error;
    return { checkpoint, checkpointPath, resumed: previous !== null, alreadyComplete: false, restarted, truncatedBytes, rowsThisRun, pagesThisRun, stoppedBy };
  } finally {
    await fh?.close().catch(() => undefined);
    await lock.release();
  }
}
