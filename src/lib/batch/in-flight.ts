/**
 * The tasks a claim loop has started and not yet seen finish. `next()` resolves when any one of
 * them settles. Unlike `Promise.race(set)`, which hangs a new reaction on every member at each
 * call (per-row loops made that quadratic: a hundred reactions per finished row), each task
 * wakes at most the one waiter there is.
 */
export class InFlight {
  private readonly tasks = new Set<Promise<void>>();
  private wake: (() => void) | null = null;

  get size(): number {
    return this.tasks.size;
  }

  /** Tracks a task; it must not reject (catch inside it). */
  add(task: Promise<void>): void {
    const tracked: Promise<void> = task.finally(() => {
      this.tasks.delete(tracked);
      this.notify();
    });
    this.tasks.add(tracked);
  }

  /**
   * Wakes the waiter as a task settling would: for a task that reached a point the loop cares
   * about before it settles (e.g. its request slot is free while its write is still queued).
   */
  notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** Resolves when one task settles or `notify()` is called (at once when there are none). */
  next(): Promise<void> {
    if (this.tasks.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const previous = this.wake;
      this.wake = () => {
        previous?.();
        resolve();
      };
    });
  }

  /** Resolves when every task has settled. */
  async all(): Promise<void> {
    while (this.tasks.size > 0) await Promise.all(this.tasks);
  }
}
