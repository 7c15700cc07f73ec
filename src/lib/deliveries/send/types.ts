/** The shapes of `deliveries send`: its options, each row's result, the run's summary, the writes. */
import type { Broker } from '../../amqp/connect.js';
import type { PublishOutcome } from '../../amqp/confirm-publisher.js';
import type { Db } from '../../db/connect.js';
import type { Throttle } from '../../db/throttle.js';
import type { PauseState } from '../../pause/decide.js';
import type { RetryPolicy } from '../retry.js';
import type { DeliveryRow, Generation } from '../types.js';

export interface SendOptions {
  readonly batchSize: number;
  readonly window: number;
  readonly maxRows: number;
  readonly maxSeconds: number;
  readonly leaseSeconds: number;
  readonly confirmTimeoutMs: number;
  readonly holdRecheckSeconds: number;
  readonly retry: RetryPolicy;
  readonly dryRun: boolean;
  /** batches claimed ahead while earlier ones are still being confirmed */
  readonly pipeline: number;
  /** the zone of the service's DATETIMEs, for occurredAt's offset: an IANA name or `±HH:MM` */
  readonly serviceTimeZone: string;
  /** a grant check older than this when its row is published is read again (back-pressure can delay a publish) */
  readonly grantMaxAgeMs?: number;
}

/** The result of one row, as reported in events and counted in the summary. */
export type RowResult =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'failed'; readonly reason: string; readonly dead: boolean }
  | { readonly kind: 'revoked'; readonly reason: string }
  | { readonly kind: 'held' }
  | { readonly kind: 'skipped'; readonly reason: string }
  /** claimed, never published, handed back unchanged (claim cleared): the pause switch came before its batch's turn */
  | { readonly kind: 'released'; readonly reason: 'PAUSED' }
  | { readonly kind: 'would-publish' };

export interface SendSummary {
  claimed: number;
  published: number;
  accepted: number;
  failed: number;
  dead: number;
  revoked: number;
  held: number;
  skipped: number;
  wouldPublish: number;
  failedByReason: Record<string, number>;
  /** claimed rows handed back unpublished, their state unchanged and their claim cleared (counted, not logged) */
  released: number;
  /** {@link released} by why: `PAUSED` (the pause switch came before the batch's turn to publish) */
  releasedByReason: Record<string, number>;
  /** adjudications the generation guard turned away (a replay or another worker got there first) */
  stale: number;
  /** messages the broker refused alone (a channel exception each, found by resending the suspects one at a time) */
  brokerRefusals: number;
  stoppedBy:
    | 'drained'
    | 'max-rows'
    | 'max-seconds'
    | 'signal'
    | 'paused'
    | 'broker-lost'
    | 'broker-refusing'
    | 'broker-blocked'
    | 'publisher-identity';
  /** the pause that stopped the run (`stoppedBy: 'paused'`): `fcctl pause deliveries send` or `--pause-file` */
  paused?: PauseState;
  /** why the broker went away mid-run (or refuses every message: `broker-refusing`); the command then exits 3 after its summary */
  brokerLost?: string;
  /** why the publisher identity failed mid-run (the registry changed); the command exits 3 after its summary */
  publisherIdentity?: string;
  /** why the broker blocked publishing (a resource alarm); the run stopped claiming, exit 3 */
  brokerBlocked?: string;
  /** time spent waiting on `--max-load`/`--max-lag` before claims (absent: no throttle) */
  throttledSeconds?: number;
}

/** What {@link runSend} works with. */
export interface SendDeps {
  readonly db: Db;
  readonly broker: Broker | null;
  readonly publisher: { readonly appKey: string; readonly appCode: string };
  readonly signal: AbortSignal;
  readonly clock: () => number;
  readonly onRow?: (row: DeliveryRow, result: RowResult) => void;
  readonly onBatch?: (summary: Readonly<SendSummary>) => void;
  /** a batch's publish outcomes, once all are in (`undefined`: not published), with when it was claimed and settled */
  readonly onSettled?: (batch: {
    readonly rows: readonly DeliveryRow[];
    readonly outcomes: ReadonlyArray<PublishOutcome | undefined>;
    readonly claimedAt: number;
    readonly settledAt: number;
    /** each row's confirm, in ms after its batch's claim committed (a monotonic clock); undefined: not published */
    readonly confirmMs: ReadonlyArray<number | undefined>;
  }) => void;
  /**
   * the pause switch (src/lib/pause/run.ts), read at start, before each claim and before each
   * claimed batch's turn to publish: a pause stops claiming, releases the batches not yet
   * publishing, and lets the one publishing finish
   */
  readonly paused?: () => Promise<PauseState | null>;
  /** `--max-load`/`--max-lag` on the FC database (lib/db/throttle.ts), awaited before each claim */
  readonly throttle?: Throttle;
}

/** The write of one group of rows that get the same transition. Returns rows matched. */
export type Write =
  | { readonly kind: 'accept'; readonly gens: readonly Generation[] }
  | {
      readonly kind: 'fail';
      readonly gens: readonly Generation[];
      readonly state: 'FAILED' | 'DEAD';
      readonly retryCount: number;
      readonly backoffSeconds: number | null;
      readonly lastError: string;
    }
  | { readonly kind: 'revoke'; readonly gens: readonly Generation[]; readonly lastError: string }
  | { readonly kind: 'hold'; readonly gens: readonly Generation[]; readonly recheckSeconds: number }
  | { readonly kind: 'release'; readonly gens: readonly Generation[] }
  /** budget already spent: DEAD as it stands, its retry count and last error kept */
  | { readonly kind: 'bury'; readonly gens: readonly Generation[] };
