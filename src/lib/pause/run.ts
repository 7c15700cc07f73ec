/**
 * The fleet's pause switch (issue 19 §3): `fcctl pause` / `resume` write it, and every pausable
 * cron command reads it through {@link pauseCheck} at start and before each batch or page. The
 * runners get only the check (`paused(): Promise<PauseState | null>`), never the table (`store.ts`).
 */
import { readFile } from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import type { Db } from '../db/connect.js';
import { pauseOfFile, type PauseState } from './decide.js';
import { readPause } from './store.js';

/** The pause a `--pause-file` stands for when it exists (gh-ost's throttle flag file), else null. */
export async function readPauseFile(command: string, path: string): Promise<PauseState | null> {
  try {
    return pauseOfFile(command, path, await readFile(path, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    // It exists but cannot be read (a directory, no permission): it still says "paused".
    return pauseOfFile(command, path, '');
  }
}

/**
 * The check a pausable runner calls at start and before each batch or page: the pause file first
 * (local, no database), then the command's row in the database it writes. `onRead` hears what
 * each check found (`pausedGaugeNotes`, lib/metrics/paused.ts).
 * @example const paused = pauseCheck('deliveries send', () => ctx.fcDb(), options.pauseFile); if (await paused()) …
 */
export function pauseCheck(
  command: string,
  db: () => Promise<Db>,
  pauseFile?: string,
  onRead?: (paused: boolean) => void,
): () => Promise<PauseState | null> {
  const read = async () => {
    if (pauseFile !== undefined) {
      const file = await readPauseFile(command, pauseFile);
      if (file) return file;
    }
    return readPause(await db(), command);
  };
  return async () => {
    const pause = await read();
    onRead?.(pause !== null);
    return pause;
  };
}

/** Who pauses or resumes: `user@host`, and the host alone. */
export function whoAmI(): { actor: string; host: string } {
  const host = hostname().slice(0, 200);
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env['USER'] ?? 'unknown';
  }
  return { actor: `${user.slice(0, 50)}@${host}`, host };
}
