/**
 * What the follow loops (the relay's, the resolver's) share: a wait that keeps telling the loop
 * it is alive, and a state that is said once per change.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { failureKind, retryDelayMs, type ServiceState } from './decide.js';

/**
 * Waits `ms` in steps of at most a second, calling `onProgress` at each (a long backoff is no
 * stuck loop for `/healthz`); false when the stop signal came first.
 * @example if (!(await waitStepping(1000, deps))) break
 */
export async function waitStepping(
  ms: number,
  deps: { readonly clock: () => number; readonly signal: AbortSignal; readonly onProgress?: () => void },
): Promise<boolean> {
  const until = deps.clock() + ms;
  while (!deps.signal.aborted) {
    const left = until - deps.clock();
    if (left <= 0) return true;
    await delay(Math.min(left, 1000), undefined, { signal: deps.signal }).catch(() => undefined);
    deps.onProgress?.();
  }
  return false;
}

/**
 * A setter that tells `onState` of a change of state or of its reason, once: an outage retried
 * every few seconds is one line, not one per retry.
 * @example const setState = stateOnce(deps.onState); setState('outage', 'ECONNREFUSED')
 */
export function stateOnce(
  onState: ((state: ServiceState, detail: string | null) => void) | undefined,
): (next: ServiceState, why?: string | null) => void {
  let state: ServiceState | null = null;
  let detail: string | null = null;
  return (next, why = null) => {
    if (next === state && why === detail) return;
    state = next;
    detail = why;
    onState?.(next, why);
  };
}

/**
 * `open()` tried until it succeeds, an outage waited out with backoff and a misconfiguration looked
 * at again every 30 s (the state said once per change): a service started before its database is
 * up waits for it, serving `/readyz` 503 meanwhile, instead of exiting. Null when the stop signal
 * came first.
 * @example const db = await connectPatiently(() => ctx.fcDb(), { signal, clock, onState, onProgress })
 */
export async function connectPatiently<T>(
  open: () => Promise<T>,
  deps: {
    readonly clock: () => number;
    readonly signal: AbortSignal;
    readonly onState?: (state: ServiceState, detail: string | null) => void;
    readonly onProgress?: () => void;
    readonly random?: () => number;
    /** each failed open: for the connection state set (the target lost) */
    readonly onFailure?: () => void;
  },
): Promise<T | null> {
  const setState = stateOnce(deps.onState);
  for (let attempt = 1; !deps.signal.aborted; attempt++) {
    try {
      return await untilStopped(open(), deps.signal);
    } catch (err) {
      if (deps.signal.aborted) break;
      const kind = failureKind(err);
      setState(kind, (err as Error).message);
      deps.onFailure?.();
      if (!(await waitStepping(retryDelayMs(kind, attempt, deps.random), deps))) break;
    }
  }
  return null;
}

/**
 * `work`, or null as soon as the stop signal comes: an open that hangs on a database that stopped
 * answering (its first statement waits out its 10 s deadline) does not hold the stop. What it
 * opens later is closed with the command (the pool is registered as it is made).
 */
function untilStopped<T>(work: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.resolve(null);
  }
  let onAbort: () => void = () => undefined;
  const stopped = new Promise<null>((resolve) => {
    onAbort = () => {
      work.catch(() => undefined);
      resolve(null);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([work, stopped]).finally(() => signal.removeEventListener('abort', onAbort));
}

/**
 * The end of a stop's drain: a signal aborted `drainMs` after `signal` is (issue 34 §3, §5). What
 * is still in flight then is abandoned, not waited for.
 * @example const drain = drainEnd(deps.signal, options.drainMs); try { … } finally { drain.dispose() }
 */
export function drainEnd(signal: AbortSignal, drainMs: number): { readonly signal: AbortSignal; dispose(): void } {
  return afterStop(signal, drainMs, (c) => c.abort(new Error('the drain is over')));
}

/** Calls `fn` `ms` after `signal` aborts (once); dispose() forgets it. */
export function afterStop(
  signal: AbortSignal,
  ms: number,
  fn: (c: AbortController) => void,
): { readonly signal: AbortSignal; dispose(): void } {
  const c = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    timer = setTimeout(() => fn(c), ms);
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return {
    signal: c.signal,
    dispose: () => {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(timer);
    },
  };
}
