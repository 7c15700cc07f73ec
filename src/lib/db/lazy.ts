import type { Db } from './connect.js';

/**
 * The two databases a runner connects on first use — the command's lazy connections, so a run
 * refused before it needs them (bad input, nothing to do) connects nothing.
 */
export interface LazyDatabases {
  readonly fcDb: () => Promise<Db>;
  readonly shDb: () => Promise<Db>;
}
