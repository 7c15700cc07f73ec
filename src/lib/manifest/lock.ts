/**
 * The checkpoint lock of `manifest scan` and `reconcile run`: the lock file moved to
 * src/lib/fs/lock.ts so the metrics writer (infrastructure) can take it too.
 */
export {
  acquireLock,
  type FileLock,
  isHolderAlive,
  type LockInfo,
  type LockWait,
  processStartTicks,
} from '../fs/lock.js';
