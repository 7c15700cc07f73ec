/**
 * The category a reconcile run gave one answer. The task table keeps only each pair's counts; the
 * per-answer category is in the run directory's `report.csv` (every category but IN_SYNC and
 * RETIRED, docs/commands/reconcile.md), so it is read from there when `--reconcile-dir` names the
 * run's directory (an `--all` run's `DIR/<school>/<form>/`, or a one-pair run's `DIR`).
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface CategoryFound {
  readonly runId: string | null;
  readonly category: string;
  readonly source: string;
}

interface PairSummary {
  readonly schId?: unknown;
  readonly formUuid?: unknown;
}

async function readJson(path: string): Promise<Record<string, unknown> | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** The pair's folder in `dir`: `dir/<school>/<form>` of an `--all` run, or `dir` itself for that pair. */
async function pairDir(dir: string, schId: string, formUuid: string): Promise<string | null> {
  for (const d of [join(dir, schId, formUuid), dir]) {
    const s = (await readJson(join(d, 'summary.json'))) as PairSummary | null;
    if (s !== null && String(s.schId) === schId && s.formUuid === formUuid) return d;
  }
  return null;
}

/**
 * The answer's category in the run directory, or null when the directory holds no finished diff of
 * the pair. An answer not in `report.csv` had no difference: IN_SYNC or RETIRED.
 * @example await categoryInRunDir('/var/lib/fcctl/reconcile/2026-12-01', '5', 'f…', 'a…')
 */
export async function categoryInRunDir(
  dir: string,
  schId: string,
  formUuid: string,
  answerUuid: string,
): Promise<CategoryFound | null> {
  const d = await pairDir(dir, schId, formUuid);
  if (d === null) return null;
  const run = await readJson(join(d, 'run.json'));
  // a pair of an --all run names the run it belongs to (the task table's run id) beside its own
  const named = run?.['allRunId'] ?? run?.['runId'];
  const runId = typeof named === 'string' ? named : null;
  const report = join(d, 'report.csv');
  const lines = createInterface({ input: createReadStream(report, 'utf8'), crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const line of lines) {
      const [category, uuid] = line.split(',', 3);
      if (uuid === answerUuid && category !== undefined) return { runId, category, source: report };
    }
  } finally {
    lines.close();
  }
  return { runId, category: 'IN_SYNC or RETIRED (not in report.csv)', source: report };
}
