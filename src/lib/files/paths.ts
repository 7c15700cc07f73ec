import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../cli/exit.js';

/**
 * Exit 2 before anything connects when a file's directory does not exist.
 * @example await requireDirectoryOf('out/fc.jsonl', '--out')
 */
export async function requireDirectoryOf(path: string, option: string): Promise<void> {
  const dir = dirname(resolve(path));
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new UsageError(`${option} ${path}: directory ${dir} does not exist`);
  }
}
