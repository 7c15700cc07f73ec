/**
 * What the follow loops (the relay's, the resolver's) share: a wait that keeps telling the loop
 * it is alive, and a state that is said once per change.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { ServiceState } from './decide.js';

/**
 * Waits `ms` in steps of at most a second, calling `onProgress` at each (a long backoff is no
 * stuck loop for `/healthz`); false when the stop signal came first.
 * @example if (!(await waitStepping(1000, deps))) break
 */
export async function waitStepping(ms: number, deps: { readonly clock: () => number; readonly signal: AbortSignal; readonly onProgress?: () => void }): Promise<boolean> {
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
export function stateOnce(onState: ((state: ServiceState, detail: string | null) => void) | undefined): (next: ServiceState, why?: string | null) => void {
  let state: ServiceState | null = null;
  let detail: string | null = null;
  return (next, why = null) => {
    if (next === state && why === detail) return;
    state = next;
    detail = why;
    onState?.(next, why);
  };
}
