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

export class WriteBatcher {
  private queue: Queued[] = [];
  private inFlight = 0;

  /**
   * @param maxInFlight batches on the wire at once (each holds a connection)
   * @param maxBatch statements per batch (bounds the time its row locks are held)
   */
  constructor(
    private readonly db: Pick<Db, 'batch'>,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 64,
  ) {}

  /** Same contract as `Db.execute`: resolves once the statement is committed. */
  execute(sql: string, params: readonly unknown[] = []): Promise<{ affectedRows: number }> {
    return new Promise<number>((resolve, reject) => {
      this.queue.push({ sql, params, resolve, reject });
      this.pump();
    }).then((affectedRows) => ({ affectedRows }));
  }

  private pump(): void {
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
              else q.reject(r ? r.reason : new Error(`a batch of ${batch.length} writes answered ${settled.length} results`));
            }),
          (err: unknown) => batch.forEach((q) => q.reject(err)),
        )
        .finally(() => {
          this.inFlight -= 1;
          this.pump();
        });
    }
  }
}
