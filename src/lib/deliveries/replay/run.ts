/**
 * `deliveries replay`: read the facts (`store.ts`), decide (`decide.ts`), and — with `execute` — record
 * the answer and apply the row's write in ONE short transaction. The operation row is inserted
 * first and acts as the idempotency lock: a second call with the same operation id (or a
 * concurrent one, which waits on that row's lock until the first commits) gets a duplicate key
 * and returns the recorded answer, writing nothing.
 */
import { type OrderedDeps, runOrdered, type OrderedSummary } from '../../batch/ordered.js';
import type { Progress } from '../../cli/output.js';
import type { Db } from '../../db/connect.js';
import { isRefused, opDigest, type ReplayRequest, type ReplayResult } from './decide.js';
import { failedOperationId } from '../failed/decide.js';
import { selectFailed } from '../failed/store.js';
import { type FailedReplay, MAX_REPLAY_ITEMS, type ReplayItem } from './input.js';
import { replayOne } from './store.js';

export interface BatchOptions {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly execute: boolean;
  readonly concurrency: number;
  readonly maxSeconds: number;
}

export interface BatchDeps extends OrderedDeps<ReplayResult> {
  readonly db: Db;
}

export type BatchSummary = OrderedSummary<ReplayResult>;

/**
 * Replays items with at most `concurrency` at once (p-limit); results are reported in input
 * order. On SIGINT/SIGTERM or `maxSeconds` no new item starts, the started ones finish. A
 * database error stops the run the same way and is returned once the started items settle.
 * @example const { results } = await runReplayBatch(items, { consumerAppKey: '100100', consumerSchoolId: '5', execute: false, concurrency: 4, maxSeconds: 3600 }, { db, signal, clock: Date.now })
 */
export async function runReplayBatch(
  items: readonly ReplayItem[],
  options: BatchOptions,
  deps: BatchDeps,
): Promise<BatchSummary> {
  return runOrdered(items, options, deps, async (it) => {
    const request: ReplayRequest = {
      answerUuid: it.answerUuid,
      consumerAppKey: options.consumerAppKey,
      consumerSchoolId: options.consumerSchoolId,
      expectedRevision: it.expectedRevision,
      opDigest: opDigest(it.operationId),
    };
    const d = await replayOne(deps.db, request, options.execute);
    const note = 'stillFailed' in d ? d.stillFailed : undefined;
    const again = note === undefined ? { stillFailed: false } : { stillFailed: true, note };
    return {
      line: it.line,
      answerUuid: it.answerUuid,
      expectedRevision: it.expectedRevision,
      operationId: it.operationId,
      code: d.code,
      reason: d.reason,
      eventId: d.eventId,
      repeated: d.repeated,
      ...again,
    };
  });
}

/**
 * `deliveries replay` as a whole: the batch run with its progress (a `--from` batch only), each
 * result handed to `onResult`.
 * @example const end = await replayDeliveries(items, options, { db, signal, clock, progress: null })
 */
export async function replayDeliveries(
  items: readonly ReplayItem[],
  options: BatchOptions,
  deps: BatchDeps & { readonly progress: Progress | null },
): Promise<BatchSummary> {
  let end: BatchSummary;
  try {
    end = await runReplayBatch(items, options, {
      ...deps,
      onResult: (r) => {
        deps.progress?.record(isRefused(r.code) ? r.code : undefined);
        deps.onResult?.(r);
      },
    });
  } finally {
    deps.progress?.stop();
  }
  return end;
}

/**
 * The requests of `deliveries replay --failed`: every matching FAILED/DEAD row of the consumer and
 * school that no newer revision of its answer superseded (replay would answer it REVISION_MISMATCH),
 * newest first, at most {@link MAX_REPLAY_ITEMS} (`more` when others match), each asking for the
 * row's own revision under the operation id `P:<eventId>`; `line` is its place in the list.
 * `superseded` counts the rows left out as superseded.
 * @example const { items } = await failedReplayItems(db, '100100', '5', { filter: ALL_FAILED, operationPrefix: 'INC-42' })
 */
export async function failedReplayItems(
  db: Db,
  consumerAppKey: string,
  consumerSchoolId: string,
  failed: FailedReplay,
): Promise<{ items: ReplayItem[]; more: boolean; superseded: number }> {
  const { rows, more, superseded } = await selectFailed(
    db,
    consumerAppKey,
    consumerSchoolId,
    failed.filter,
    MAX_REPLAY_ITEMS,
  );
  const items = rows.map((r, i) => ({
    line: i + 1,
    answerUuid: r.answerUuid,
    expectedRevision: r.answerRevision,
    operationId: failedOperationId(failed.operationPrefix, r.eventId),
  }));
  return { items, more, superseded };
}
