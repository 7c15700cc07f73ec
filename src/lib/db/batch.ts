/**
 * Group commit for independent single-row writes. Each caller awaits its own statement's
 * affected rows (or its own error), as with `Db.execute`; statements that arrive while earlier
 * batches are in flight go out together in the next one (one round trip, each statement still its
 * own autocommit, so no row lock is held for the group). At hundreds of rows a second the
 * per-statement round trip, not the database, is what costs: this turns N of them into a few.
 */
import type { Db } from './connect.js';

interface Queued {
  readonly sql: string;
  readonly params: readonly unknown[];
  resolve(affectedRows: number): void;
  reject(err: unknown): void;
}

export interface WriteBatcherOptions {
  /** batches on the wire at once (each holds a connection; Db.batch's pool has 2) */
  readonly maxInFlight?: number;
  /** statements per batch (bounds one packet and one round trip) */
  readonly maxBatch?: number;
  /**
   * how long a write may wait for company before its batch goes out. Each round trip also
   * wakes the database (on a small machine the sender loses its core meanwhile), so a few
   * milliseconds of waiting buys several writes per wake-up; 0 sends at once.
   */
  readonly lingerMs?: number;
}

export class WriteBatcher {
  private queue: Queued[] = [];
  private inFlight = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly lingerMs: number;

  constructor(
    private readonly db: Pick<Db, 'batch'>,
    options: WriteBatcherOptions = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? 2;
    this.maxBatch = options.maxBatch ?? 64;
    this.lingerMs = options.lingerMs ?? 0;
  }

  /** Same contract as `Db.execute`: resolves once the statement is committed. */
  execute(sql: string, params: readonly unknown[] = []): Promise<{ affectedRows: number }> {
    return new Promise<number>((resolve, reject) => {
      this.queue.push({ sql, params, resolve, reject });
      this.pump();
    }).then((affectedRows) => ({ affectedRows }));
  }

  private pump(): void {
    // A full batch goes at once; a partial one waits up to lingerMs for more.
    if (this.lingerMs > 0 && this.queue.length > 0 && this.queue.length < this.maxBatch) {
      this.timer ??= setTimeout(() => {
        this.timer = null;
        this.flush();
      }, this.lingerMs);
      return;
    }
    this.flush();
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight += 1;
      Promise.resolve()
        .then(() => this.db.batch(batch))
        .then(
          (settled) =>
            batch.forEach((q, i) => {
              const r = settled[i];
              if (r?.status === 'fulfilled') q.resolve(r.value);
              else
                q.reject(
                  r ? r.reason : new Error(`a batch of ${batch.length} writes answered ${settled.length} results`),
                );
            }),
          (err: unknown) => {
            for (const q of batch) q.reject(err);
          },
        )
        .finally(() => {
          this.inFlight -= 1;
          // What queued up meanwhile has waited long enough.
          this.flush();
        });
    }
  }
}
