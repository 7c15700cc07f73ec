/**
 * The page pipeline of `manifest scan`: three loops side by side (see ./run.ts) sharing one queue
 * of planned page ranges and one of pages read, each waking the others when it moves.
 */
import type { Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { Db } from '../../db/connect.js';
import type { Throttle } from '../../db/throttle.js';
import type { PauseState } from '../../pause/decide.js';
import { type Checkpoint, writeCheckpoint } from '../checkpoint.js';
import type { FileLock } from '../../files/lock.js';
import { type ManifestLines, readManifestLines, readPageBoundary } from '../page.js';
import type { ManifestSide } from '../row.js';
import type { ShardRange } from '../shard.js';
import { committedCheckpoint, pageReports } from './decide.js';
import type { QueuedPage, ScanProgress } from './types.js';

/**
 * Pages read ahead of the writer at most (about 0.5 MB at 500 rows a page): the reader waits when
 * this many pages are waiting to be written.
 */
export const READ_AHEAD_PAGES = 4;

/** Page queries a scan keeps running at once (each on its own pooled connection). */
export const PIPELINE_PAGES = 3;

type Loop = 'planner' | 'reader' | 'writer';

export interface PipelineInput {
  readonly db: Db;
  readonly side: ManifestSide;
  readonly page: {
    readonly schId: string;
    readonly formUuid: string;
    readonly size: number;
    readonly range: ShardRange;
  };
  /** the output, open at the checkpointed length */
  readonly fh: FileHandle;
  /** SHA-256 of the output so far, fed with every commit */
  readonly hash: Hash;
  readonly checkpoint: Checkpoint;
  readonly checkpointPath: string;
  readonly lock: FileLock;
  readonly signal: AbortSignal;
  readonly now: () => Date;
  readonly onPage?: (p: ScanProgress) => void | Promise<void>;
  /** the pause switch, read before the first page and after each commit: a pause stops the scan at that commit */
  readonly paused?: () => Promise<PauseState | null>;
  /** `--max-load`/`--max-lag`: the planner waits on it before each page it requests */
  readonly throttle?: Throttle;
}

export interface PipelineResult {
  readonly checkpoint: Checkpoint;
  readonly rowsThisRun: number;
  readonly pagesThisRun: number;
  readonly stoppedBy: string | null;
  /** the pause that stopped the scan (`stoppedBy: 'paused'`) */
  readonly paused?: PauseState;
}

const stopReason = (signal: AbortSignal) => String((signal.reason as Error | undefined)?.message ?? 'signal');

/** Awaited later; one abandoned by a stop must not be an unhandled rejection. */
function quiet<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/**
 * Runs the pipeline from `input.checkpoint` until the scan completes, a stop signal ends it at a
 * commit, or a loop fails (rethrown once all three have ended).
 */
export async function runPagePipeline(input: PipelineInput): Promise<PipelineResult> {
  const before = await input.paused?.();
  if (before)
    return { checkpoint: input.checkpoint, rowsThisRun: 0, pagesThisRun: 0, stoppedBy: 'paused', paused: before };
  const p = new PagePipeline(input);
  await Promise.all([p.plan(), p.read(), p.write()]);
  if (p.failure) throw p.failure.error;
  return {
    checkpoint: p.checkpoint,
    rowsThisRun: p.rowsThisRun,
    pagesThisRun: p.pagesThisRun,
    stoppedBy: p.stoppedBy,
    ...(p.paused ? { paused: p.paused } : {}),
  };
}

class PagePipeline {
  checkpoint: Checkpoint;
  rowsThisRun = 0;
  pagesThisRun = 0;
  stoppedBy: string | null = null;
  paused: PauseState | undefined;
  failure: { error: unknown } | null = null;
  /** pages read, in order, waiting for the writer (row objects already dropped) */
  private readonly queue: QueuedPage[] = [];
  /** page ranges planned and requested, in order, waiting for the reader */
  private readonly planned: Array<{ upTo: string | null; result: Promise<ManifestLines> }> = [];
  private planDone = false;
  private readerDone = false;
  private readonly wakers: Record<Loop, (() => void) | null> = { planner: null, reader: null, writer: null };

  constructor(private readonly i: PipelineInput) {
    this.checkpoint = i.checkpoint;
  }

  private wake(which: Loop): void {
    const w = this.wakers[which];
    this.wakers[which] = null;
    w?.();
  }

  private sleep(which: Loop): Promise<void> {
    return new Promise<void>((r) => (this.wakers[which] = r));
  }

  private stopped(): boolean {
    return this.failure !== null || this.stoppedBy !== null;
  }

  private fail(error: unknown): void {
    this.failure ??= { error };
    this.wake('planner');
    this.wake('reader');
    this.wake('writer');
  }

  private lines(cursor: string | null, upTo: string | null): Promise<ManifestLines> {
    return readManifestLines(this.i.db, this.i.side, { ...this.i.page, cursor, upTo });
  }

  /**
   * The planner: finds where each next full page ends from the index alone (a cheap query) and
   * requests that page at once, so up to PIPELINE_PAGES page queries run side by side.
   */
  async plan(): Promise<void> {
    try {
      let after = this.checkpoint.cursor;
      for (;;) {
        while (this.planned.length >= PIPELINE_PAGES && !this.stopped()) await this.sleep('planner');
        if (this.stopped()) return;
        // Throttled: no new page query; the reader and writer finish the pages already requested.
        // Aborted: the reader sees the signal and stops the scan at its next commit.
        if (this.i.throttle && !(await this.throttled())) return;
        if (this.stopped()) return;
        const upTo = await readPageBoundary(this.i.db, this.i.side, { ...this.i.page, cursor: after });
        this.planned.push({ upTo, result: quiet(this.lines(after, upTo)) });
        this.wake('reader');
        if (upTo === null) return;
        after = upTo;
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.planDone = true;
      this.wake('reader');
    }
  }

  /**
   * Waits on the throttle, the pause switch read on every poll meanwhile: false when the wait
   * ended the planning (the signal: the reader stops the scan; a pause: stopped here, the pages
   * already read still committed).
   */
  private async throttled(): Promise<boolean> {
    const probe = this.i.paused;
    for (;;) {
      let pause: PauseState | null = null;
      // this scan's signal (a `--all` pair's includes its lease), not only the process's the throttle was opened with
      const outcome = await this.i.throttle!.wait({
        signal: this.i.signal,
        ...(probe ? { paused: async () => (pause = await probe()) } : {}),
      });
      if (outcome === 'ok') return true;
      if (outcome === 'aborted') return false;
      if (outcome === 'paused') {
        // a runner sharing the wait may have seen the pause first: read it again if this one did not
        pause ??= (await probe?.()) ?? null;
        if (pause === null) continue; // lifted meanwhile: wait on the throttle again
        this.paused ??= pause;
      }
      this.stoppedBy ??= outcome === 'paused' ? 'paused' : 'max-seconds';
      this.wake('reader');
      this.wake('writer');
      return false;
    }
  }

  /**
   * The reader: takes the planned pages in order and hands them to the writer. A range that grew
   * after it was planned (rows inserted meanwhile) is read on, page by page, to its end.
   */
  async read(): Promise<void> {
    try {
      for (;;) {
        if (this.stopped()) return;
        if (this.i.signal.aborted) {
          this.stoppedBy = stopReason(this.i.signal);
          this.wake('planner');
          return;
        }
        if (this.planned.length === 0) {
          if (this.planDone) return;
          await this.sleep('reader');
          continue;
        }
        const entry = this.planned.shift()!;
        this.wake('planner');
        if (await this.readRange(entry)) return;
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.readerDone = true;
      this.wake('writer');
    }
  }

  /** Queues one planned range, page by page; true when the scan ends with it (or was stopped). */
  private async readRange(entry: { upTo: string | null; result: Promise<ManifestLines> }): Promise<boolean> {
    let page = await entry.result;
    for (;;) {
      if (this.stopped()) return true;
      const completed = !page.more && entry.upTo === null;
      this.queue.push({ rows: page.rows, last: page.last, completed, bytes: Buffer.from(page.text, 'utf8') });
      this.wake('writer');
      if (completed) return true;
      while (this.queue.length >= READ_AHEAD_PAGES && !this.stopped()) await this.sleep('reader');
      if (!page.more) return false;
      page = await this.lines(page.last, entry.upTo);
    }
  }

  /**
   * The writer: appends what was read, fsyncs it, then replaces the checkpoint (group commit: one
   * page per commit while the disk keeps up, every page waiting when it does not).
   */
  async write(): Promise<void> {
    try {
      for (;;) {
        if (this.failure) return;
        if (this.queue.length === 0) {
          if (this.readerDone) return;
          await this.sleep('writer');
          continue;
        }
        const batch = this.queue.splice(0, this.queue.length);
        this.wake('reader');
        if (await this.commit(batch)) return;
        const pause = this.i.signal.aborted ? undefined : await this.i.paused?.();
        if (this.i.signal.aborted || pause) {
          // Stop at a commit: pages read but not committed are read again by the next run.
          this.stoppedBy ??= pause ? 'paused' : stopReason(this.i.signal);
          if (pause) this.paused = pause;
          this.queue.length = 0;
          this.wake('planner');
          this.wake('reader');
          return;
        }
      }
    } catch (err) {
      this.fail(err);
    }
  }

  /** Appends a batch at the checkpointed length, fsyncs, checkpoints; true when the scan completed. */
  private async commit(batch: QueuedPage[]): Promise<boolean> {
    const bytes = batch.length === 1 ? batch[0]!.bytes : Buffer.concat(batch.map((b) => b.bytes));
    await writeAll(this.i.fh, bytes, this.checkpoint.outputBytes);
    await this.i.fh.datasync();
    this.i.hash.update(bytes);
    const before = this.checkpoint;
    this.checkpoint = committedCheckpoint(before, batch, this.i.hash.copy().digest('hex'), this.i.now().toISOString());
    await this.i.lock.verify();
    await writeCheckpoint(this.i.checkpointPath, this.checkpoint);
    // Each page of the commit reported in order, now that it is durable.
    for (const report of pageReports(before, batch)) {
      this.rowsThisRun += report.pageRows;
      this.pagesThisRun++;
      await this.i.onPage?.(report);
    }
    return this.checkpoint.completed;
  }
}

async function writeAll(fh: FileHandle, data: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await fh.write(data, done, data.length - done, position + done);
    done += bytesWritten;
  }
}
