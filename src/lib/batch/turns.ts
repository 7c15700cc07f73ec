/**
 * Turns handed out in order: each holder waits for every earlier one to be done. Batches that are
 * prepared concurrently (claimed, checked) but must do one step one at a time, in claim order —
 * `deliveries send` publishes one batch at a time, so a pause found before a batch's turn leaves
 * it wholly unpublished.
 */
export class Turns {
  private last: Promise<void> = Promise.resolve();

  /**
   * The next turn: `ready` resolves once every earlier turn is done; `done()` ends this one (call
   * it in a `finally`, or every later turn waits forever; a second call does nothing).
   * @example const turn = turns.next(); try { await turn.ready; … } finally { turn.done(); }
   */
  next(): { readonly ready: Promise<void>; readonly done: () => void } {
    const ready = this.last;
    let end!: () => void;
    this.last = new Promise<void>((resolve) => (end = resolve));
    // ended early (an error before its turn came): later turns still wait for the earlier ones
    return { ready, done: () => void ready.then(end) };
  }
}
