/** Reading a run directory's `run.json` (also read by `retire-absent`, src/lib/retire-absent/input.ts). */
import { normalizeDateTime } from '../../time/datetime.js';
import { readFile, rename } from 'node:fs/promises';
import { paramsDigest } from '../../canon/params-digest.js';
import { EnvironmentError, SafetyError } from '../../cli/exit.js';
import { RUN_FORMAT, type RunState } from './types.js';

/**
 * `run.json`, or null when there is none. One that cannot be read (a directory, no permission) or
 * is not a valid run file is exit 4 — unless `restart`: the refusal tells the operator to pass
 * --restart, so --restart must get past it. It is then set aside as `run.json.unreadable-<time>`
 * (kept for a look, never deleted: it may be someone's) and the run starts anew.
 */
export async function readRunState(path: string, restart: boolean, now: () => Date): Promise<RunState | null> {
  const setAside = async (why: string): Promise<null> => {
    const aside = `${path}.unreadable-${now().toISOString().replace(/[:.]/g, '-')}`;
    try {
      await rename(path, aside);
    } catch (err) {
      throw new EnvironmentError(
        `cannot set aside ${path} (${why}) for --restart: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        { cause: err },
      );
    }
    return null;
  };
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    const why = code ?? (err as Error).message;
    if (restart) return setAside(why);
    throw new SafetyError(
      `${path} cannot be read (${why}); pass --restart to set it aside and start a new run in this directory`,
      { cause: err },
    );
  }
  try {
    const v = JSON.parse(text) as RunState;
    if (
      v.format !== RUN_FORMAT ||
      typeof v.runId !== 'string' ||
      typeof v.taskStart !== 'string' ||
      normalizeDateTime(v.taskStart) !== v.taskStart
    )
      throw new Error('bad members');
    if (
      v.taskStartUtc !== undefined &&
      (typeof v.taskStartUtc !== 'string' || normalizeDateTime(v.taskStartUtc) !== v.taskStartUtc)
    )
      throw new Error('bad taskStartUtc');
    if (v.allRunId !== undefined && typeof v.allRunId !== 'string') throw new Error('bad allRunId');
    if (v.paramsDigest !== paramsDigest(v.params)) throw new Error('paramsDigest does not match params');
    return v;
  } catch (err) {
    if (restart) return setAside((err as Error).message);
    throw new SafetyError(
      `${path} is not a valid ${RUN_FORMAT} file (${(err as Error).message}); pass --restart to start a new run in this directory`,
    );
  }
}
