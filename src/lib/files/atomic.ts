/**
 * Durable file writes shared by metrics files, manifest checkpoints, reconcile outputs and retire
 * proofs: a reader (or a process restarted after `kill -9` or a power cut) sees the old file or
 * the new one (no file or the whole file, for {@link writeFileExclusive}), never a partial one.
 */
import { randomBytes } from 'node:crypto';
import { link, open, readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * A temp-file name beside `path` (same directory, so a rename cannot cross file systems). It
 * starts with `.` and ends in `.tmp`, so collectors that match `*.prom` or `*.json` skip it.
 * @example tempPathFor('/var/lib/x/state.json') // '/var/lib/x/.state.json.4242.1a2b3c4d.tmp'
 */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
}

/**
 * fsyncs a directory so that a rename or a new file in it is durable; best effort, since not
 * every platform lets a directory be opened and synced.
 * @example await fsyncDir('/var/lib/fcctl')
 */
export async function fsyncDir(dir: string): Promise<void> {
  try {
    const d = await open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch {
    /* best effort */
  }
}

/** A new temp file beside `path` holding `data`, fsynced and closed; removed again if writing fails. */
async function writeTemp(path: string, data: string | Uint8Array, mode: number): Promise<string> {
  const tmp = tempPathFor(path);
  const handle = await open(tmp, 'wx', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
    await handle.close();
  } catch (err) {
    await handle.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  return tmp;
}

/**
 * Writes `data` to `path` atomically: a temp file in the same directory, fsynced, then renamed
 * over the target, then the directory fsynced. On failure the temp file is removed and the old
 * file stays as it was. `mode`: 0o600 for fcctl's own state and evidence (checkpoints, run files,
 * proofs), 0o644 only for what another program must read (the metrics textfile).
 * @example await writeFileAtomic('/tmp/checkpoint.json', JSON.stringify(state))
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  const tmp = await writeTemp(path, data, mode);
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fsyncDir(dirname(path));
}

/**
 * Writes `data` to `path` atomically and never over an existing file: a temp file beside it,
 * fsynced, then hard-linked to `path` (a link, unlike a rename, fails when the path exists), the
 * temp name removed whatever happened, then the directory fsynced. `'exists'` when `path` exists
 * (nothing written there); the caller words the refusal. `mode` as for {@link writeFileAtomic}.
 * @example if ((await writeFileExclusive('/runs/proof.json', text)) === 'exists') throw new Error('choose another path')
 */
export async function writeFileExclusive(
  path: string,
  data: string | Uint8Array,
  mode = 0o600,
): Promise<'written' | 'exists'> {
  const tmp = await writeTemp(path, data, mode);
  try {
    await link(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
    throw err;
  } finally {
    // after a link too: the data stays under `path`, the temp name must go
    await unlink(tmp).catch(() => undefined);
  }
  await fsyncDir(dirname(path));
  return 'written';
}

/**
 * Removes the temp files {@link tempPathFor} left beside `path` by a writer killed before its
 * rename (`kill -9` in the middle of a write). Only for the holder of the lock that guards `path`:
 * no other writer can be using one of them.
 * @example await removeStaleTemps('/var/lib/x/report.csv') // removes /var/lib/x/.report.csv.4242.1a2b3c4d.tmp
 */
export async function removeStaleTemps(path: string): Promise<void> {
  const prefix = `.${basename(path)}.`;
  let names: string[];
  try {
    names = await readdir(dirname(path));
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith(prefix) && /^[0-9]+\.[0-9a-f]{8}\.tmp$/.test(name.slice(prefix.length)))
      await unlink(join(dirname(path), name)).catch(() => undefined);
  }
}
