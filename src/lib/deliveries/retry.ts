/** Backoff and budget (SPEC §5): `base × 2^retryCount`, capped; DEAD once the count reaches max. */
export interface RetryPolicy {
  readonly baseSeconds: number;
  readonly capSeconds: number;
  readonly maxRetries: number;
}
export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseSeconds: 20, capSeconds: 3600, maxRetries: 8 };

/**
 * The failure of a row that had failed `retryCount` times before.
 * @example afterFailure(0, DEFAULT_RETRY_POLICY) // { state: 'FAILED', retryCount: 1, backoffSeconds: 20 }
 */
export function afterFailure(
  retryCount: number,
  policy: RetryPolicy,
): { state: 'FAILED' | 'DEAD'; retryCount: number; backoffSeconds: number | null } {
  const next = retryCount + 1;
  if (next >= policy.maxRetries) return { state: 'DEAD', retryCount: next, backoffSeconds: null };
  return {
    state: 'FAILED',
    retryCount: next,
    backoffSeconds: Math.min(policy.capSeconds, policy.baseSeconds * 2 ** retryCount),
  };
}
