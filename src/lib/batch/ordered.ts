import pLimit from 'p-limit';

/** How an ordered batch ended. */
export interface OrderedSummary<R> {
  readonly results: readonly R[];
  /** items not started because the run was stopped */
  readonly notRun: number;
  readonly stoppedBy: 'done' | 'signal' | 'max-seconds' | 'error';
  /** the error that stopped the run (the command prints its summary, then exits 3) */
  readonly error: unknown;
}

export interface OrderedBudget {
  readonly concurrency: number;
  readonly maxSeconds: number;
}

export interface OrderedDeps<R> {
  readonly signal: AbortSignal;
  readonly clock: () => number;
  /** each result, in input order, as soon as it and every earlier one are known */
  readonly onResult?: (result: R) => void;
}

/**
 * Runs `work` over items with at most `concurrency` at once (p-limit) and reports results in input
 * order. On SIGINT/SIGTERM or `maxSeconds` no new item starts and the started ones finish; an
 * error stops the run the same way and is returned once the started items settle. Incident
 * commands (replay, repair) share it so they stop and report alike.
 * @example const { results } = await runOrdered(items, { concurrency: 4, maxSeconds: 3600 }, { signal, clock: Date.now }, (item) => doOne(item))
 */
export async function runOrdered<T, R>(
  items: readonly T[],
  budget: OrderedBudget,
  deps: OrderedDeps<R>,
  work: (item: T) => Promise<R>,
): Promise<OrderedSummary<R>> {
  const limit = pLimit(budget.concurrency);
  const deadline = deps.clock() + budget.maxSeconds * 1000;
  // undefined: not settled yet; null: not run (or failed); a value: its result
  const slots: Array<{ value: R } | null | undefined> = items.map(() => undefined);
  let next = 0;
  let stoppedBy: OrderedSummary<R>['stoppedBy'] = 'done';
  let failure: unknown = null;
  const flush = () => {
    while (next < slots.length && slots[next] !== undefined) {
      const slot = slots[next];
      if (slot) deps.onResult?.(slot.value);
      next += 1;
    }
  };
  await Promise.all(
    items.map((item, i) =>
      limit(async () => {
        if (stoppedBy === 'done') {
          if (deps.signal.aborted) stoppedBy = 'signal';
          else if (deps.clock() >= deadline) stoppedBy = 'max-seconds';
        }
        if (stoppedBy !== 'done') {
          slots[i] = null;
          flush();
          return;
        }
        try {
          slots[i] = { value: await work(item) };
        } catch (err) {
          failure ??= err;
          stoppedBy = 'error';
          slots[i] = null;
        }
        flush();
      }),
    ),
  );
  const results = slots.filter((s): s is { value: R } => s !== null && s !== undefined).map((s) => s.value);
  return { results, notRun: items.length - results.length, stoppedBy, error: failure };
}
