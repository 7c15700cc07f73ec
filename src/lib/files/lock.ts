/**
 * A lock file that survives `kill -9`: it names its holder (host, pid, the process's start time
 * from `/proc`, a random nonce), is created atomically with its content (written to a temp file,
 * then hard-linked to the lock path, which fails if the lock exists), and is stale — taken over —
 * only when its holder is on this host and no longer alive (or its pid now belongs to a process
 * started at another time). A lock held on another host is never taken over.
 *
 * The holder checks the lock is still its own before every checkpoint ({@link FileLock.verify}),
 * so even the narrow race of two processes taking over the same stale lock ends with one refusal.
 *
 * Held for long work (a manifest scan) it refuses a second holder at once; held for a moment (the
 * read-merge-rename of a metrics file) a caller passes `waitMs` to wait that long for it instead.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { SafetyError } from '../cli/exit.js';
import { tempPathFor } from './atomic.js';

/** What a lock file holds. */
export interface LockInfo {
  readonly host: string;
  readonly pid: number;
  /** the holder's start time in clock ticks since boot (`/proc/<pid>/stat` field 22), null where unknown */
  readonly startTicks: string | null;
  readonly nonce: string;
  readonly startedAt: string;
  readonly command: string;
}

/** A process's start time from /proc (Linux), or null where there is none. */
export function processStartTicks(pid: number | 'self'): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Whether the holder named in a lock is still running on this host: its pid exists and, where
 * /proc tells, started at the recorded time (a reused pid is another process).
 * @example isHolderAlive({ pid: process.pid, startTicks: processStartTicks('self') }) // true
 */
export function isHolderAlive(info: Pick<LockInfo, 'pid' | 'startTicks'>): boolean {
  if (!Number.isSafeInteger(info.pid) || info.pid <= 0) return false;
  try {
    process.kill(info.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    // EPERM: it exists and belongs to someone else.
  }
  if (info.startTicks === null) return true;
  const now = processStartTicks(info.pid);
  return now === null ? true : now === info.startTicks;
}

function parseLock(text: string): LockInfo | null {
  try {
    const v = JSON.parse(text) as LockInfo;
    return typeof v.host === 'string' && Number.isSafeInteger(v.pid) && typeof v.nonce === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** A held lock. */
export interface FileLock {
  readonly path: string;
  readonly info: LockInfo;
  /** throws a {@link SafetyError} when the lock file is gone or names another holder */
  verify(): Promise<void>;
  /** removes the lock if it is still ours; safe to call twice */
  release(): Promise<void>;
}

/** How long to wait for a lock held by a live process (or one on another host) before refusing. */
export interface LockWait {
  readonly waitMs: number;
}

/**
 * Takes the lock at `path`, or throws a {@link SafetyError} (exit 4) naming the live holder — at
 * once, or after `wait.waitMs` of retrying every few milliseconds.
 * @example const lock = await acquireLock(`${checkpoint}.lock`, 'manifest scan'); try { … } finally { await lock.release() }
 */
export async function acquireLock(
  path: string,
  command: string,
  what = 'this checkpoint',
  wait?: LockWait,
): Promise<FileLock> {
  const info: LockInfo = {
    host: hostname(),
    pid: process.pid,
    startTicks: processStartTicks('self'),
    nonce: randomBytes(16).toString('hex'),
    startedAt: new Date().toISOString(),
    command,
  };
  const text = `${JSON.stringify(info)}\n`;
  const deadline = Date.now() + (wait?.waitMs ?? 0);
  // A holder still there: wait and try again while the deadline allows, else refuse.
  const busy = async (refusal: SafetyError): Promise<void> => {
    if (Date.now() >= deadline) throw refusal;
    await new Promise((r) => setTimeout(r, 2 + Math.floor(Math.random() * 10)));
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    const tmp = tempPathFor(path);
    await writeFile(tmp, text, { flag: 'wx', mode: 0o644 }).catch(async (err: NodeJS.ErrnoException) => {
      // A write that failed after creating the file (disk full) leaves no temp file behind; an
      // EEXIST temp is not ours to remove.
      if (err.code !== 'EEXIST') await unlink(tmp).catch(() => undefined);
      throw err;
    });
    try {
      const { ino } = await stat(tmp); // a hard link is the same inode
      await link(tmp, path);
      return held(path, info, ino);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      await unlink(tmp).catch(() => undefined);
    }
    let existing: LockInfo | null;
    try {
      existing = parseLock(await readFile(path, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile: try again
      throw err;
    }
    if (existing === null)
      throw new SafetyError(
        `${what} is locked by ${path}, which is not a lock file fcctl wrote; remove it if no scan is running`,
      );
    if (existing.host !== info.host) {
      await busy(
        new SafetyError(
          `${what} is held by ${existing.command} pid ${existing.pid} on host ${existing.host} (${path}); remove the lock only if that process is gone`,
        ),
      );
      attempt--;
      continue;
    }
    if (isHolderAlive(existing)) {
      await busy(
        new SafetyError(
          `${what} is held by a running ${existing.command} (pid ${existing.pid}, since ${existing.startedAt}); refusing to run a second one`,
        ),
      );
      attempt--;
      continue;
    }
    await takeOverStale(path, existing);
  }
  throw new SafetyError(`could not take the lock ${path}: other processes keep taking it`);
}

/** Moves a dead holder's lock aside; puts it back if, in a race, it turned out to be a live one. */
async function takeOverStale(path: string, stale: LockInfo): Promise<void> {
  const aside = `${path}.stale.${randomBytes(4).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const moved = parseLock(await readFile(aside, 'utf8').catch(() => ''));
  if (moved !== null && moved.nonce !== stale.nonce) {
    // Someone took the lock between our read and our rename: give it back.
    await link(aside, path).catch(() => undefined);
  }
  await unlink(aside).catch(() => undefined);
}

function held(path: string, info: LockInfo, ino: number): FileLock {
  let released = false;
  return {
    path,
    info,
    // One stat: a lock taken over is another file (linked from its taker's temp file), so another inode.
    async verify() {
      let current = -1;
      try {
        current = (await stat(path)).ino;
      } catch {
        current = -1;
      }
      if (current !== ino)
        throw new SafetyError(`lost the lock ${path}: another process took it; stopping without writing`);
    },
    async release() {
      if (released) return;
      released = true;
      try {
        const current = parseLock(await readFile(path, 'utf8'));
        if (current?.nonce === info.nonce) await unlink(path);
      } catch {
        /* gone already */
      }
    },
  };
}
