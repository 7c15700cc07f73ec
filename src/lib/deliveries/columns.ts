import type { Column } from '../cli/table.js';

/** A FAILED/DEAD row's columns as `deliveries scan` lists them (CSV headers are these). */
export const FAILED_ROW_COLUMNS: readonly Column[] = [
  { key: 'eventId', header: 'event id', whole: true },
  { key: 'state' },
  { key: 'consumerAppKey', header: 'consumer' },
  { key: 'consumerSchoolId', header: 'school' },
  { key: 'answerUuid', header: 'answer', whole: true },
  { key: 'answerRevision', header: 'rev' },
  { key: 'retryCount', header: 'retries' },
  { key: 'nextRetryAt', header: 'next retry' },
  { key: 'lastError', header: 'last error', flex: true },
  { key: 'updateTime', header: 'updated' },
];

/**
 * `deliveries failed` lists one consumer and school: their columns left out, and the last error
 * headed `reason` (what a responder decides on).
 */
export const ONE_CONSUMER_COLUMNS: readonly Column[] = [
  ...FAILED_ROW_COLUMNS.filter((c) => c.key !== 'consumerAppKey' && c.key !== 'consumerSchoolId').map((c) =>
    c.key === 'lastError' ? { ...c, header: 'reason' } : c,
  ),
  // a newer revision of the answer exists: replay answers REVISION_MISMATCH, replay --failed skips it
  { key: 'superseded' },
];
