/**
 * The decisions of `reconcile report`, pure: what each task row says of its pair, the sample rows of
 * a report.csv, the commands that act on a pair's files, the trend, and when a run is finished.
 */
import { createHash } from 'node:crypto';
import { isAbsolute, relative, sep } from 'node:path';
import { shellLine, shellWord } from '../../cli/shell.js';
import { formulaRead } from '../../files/csv-cell.js';
import {
  CATEGORIES,
  type Category,
  differencesOf,
  emptyCounts,
  REPAIR_CATEGORIES,
  SETTLED_CATEGORIES,
} from '../diff/decide.js';
import { DIFF_FILES } from '../diff/types.js';
import type { PairCommand, Sample, Trend, TrendNight } from './types.js';

/** A task row of the run, as `reportTasks` reads it (./sql.ts). */
export interface ReportTask {
  readonly sch_id: string;
  readonly form_uuid: string;
  readonly state: string;
  readonly claim_owner: string | null;
  readonly host: string | null;
  readonly result_json: string | null;
  readonly create_time: string;
  readonly finished_at: string | null;
  readonly held: boolean;
}

/**
 * The folders a run recorded for its pairs (`runDir` in each finished task's `result_json`, all/decide.ts
 * `taskWriteOf`), most pairs first: one for a run whose processes shared one `--out-dir`.
 * @example runDirsOf([{ result_json: '{"runDir":"/var/lib/fcctl/r"}' }]) // ['/var/lib/fcctl/r']
 */
export function runDirsOf(tasks: ReadonlyArray<Pick<ReportTask, 'result_json'>>): string[] {
  const n = new Map<string, number>();
  for (const t of tasks) {
    let dir: unknown = null;
    try {
      dir = t.result_json === null ? null : (JSON.parse(t.result_json) as { runDir?: unknown }).runDir;
    } catch {
      dir = null;
    }
    if (typeof dir === 'string' && dir !== '') n.set(dir, (n.get(dir) ?? 0) + 1);
  }
  return [...n.entries()].sort((a, b) => b[1] - a[1]).map(([d]) => d);
}

/** What a task's `result_json` records (all/decide.ts `taskWriteOf`); anything else read as nothing. */
export function taskResultOf(json: string | null): {
  counts: Record<Category, number> | null;
  error: string | null;
  seconds: number | null;
  throttledSeconds: number | null;
  process: string | null;
} {
  let v: {
    counts?: Record<string, unknown>;
    error?: unknown;
    seconds?: unknown;
    throttledSeconds?: unknown;
    process?: unknown;
  } = {};
  try {
    const parsed = json === null ? null : (JSON.parse(json) as unknown);
    if (typeof parsed === 'object' && parsed !== null) v = parsed as typeof v;
  } catch {
    v = {};
  }
  const counts =
    typeof v.counts === 'object' && v.counts !== null
      ? (Object.fromEntries(CATEGORIES.map((c) => [c, Number(v.counts?.[c] ?? 0) || 0])) as Record<Category, number>)
      : null;
  return {
    counts,
    error: typeof v.error === 'string' ? v.error : null,
    seconds: typeof v.seconds === 'number' ? v.seconds : null,
    throttledSeconds: typeof v.throttledSeconds === 'number' ? v.throttledSeconds : null,
    process: typeof v.process === 'string' ? v.process : null,
  };
}

/** The processes that finished the run's pairs (as their results recorded them), sorted. */
export function processesOf(results: ReadonlyArray<{ process: string | null }>): string[] {
  return [...new Set(results.map((r) => r.process).filter((p): p is string => p !== null))].sort();
}

/**
 * The run's throttled time: its finished pairs' waits summed (pairs run at once each count their
 * own), or null when no pair recorded one (a run of an fcctl before the throttled time was kept).
 */
export function throttledOf(results: ReadonlyArray<{ throttledSeconds: number | null }>): number | null {
  const waits = results.map((r) => r.throttledSeconds).filter((s): s is number => s !== null);
  return waits.length === 0 ? null : Math.round(waits.reduce((a, b) => a + b, 0) * 10) / 10;
}

/** The categories that are differences listed in report.csv, in report order. */
export const SAMPLE_CATEGORIES: readonly Category[] = CATEGORIES.filter((c) => !SETTLED_CATEGORIES.includes(c));

/** Differences of counts (0 for none recorded). */
export const differencesIn = (counts: Readonly<Record<Category, number>> | null): number =>
  counts === null ? 0 : differencesOf(counts);

/**
 * The fields of one CSV line (RFC 4180: quoted fields, "" inside quotes; a line holds no newline,
 * as report.csv's cells never do); each cell's formula mark taken off (csv-cell.ts).
 * @example csvFields('a,"b,""c""",d') // ['a', 'b,"c"', 'd']
 */
export function csvFields(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let cell = '';
      i++;
      while (i < line.length) {
        if (line[i] === '"' && line[i + 1] === '"') {
          cell += '"';
          i += 2;
        } else if (line[i] === '"') break;
        else cell += line[i++];
      }
      out.push(formulaRead(cell));
      i += 2; // the closing quote and the comma
    } else {
      const end = line.indexOf(',', i);
      const stop = end === -1 ? line.length : end;
      out.push(formulaRead(line.slice(i, stop)));
      i = stop + 1;
    }
  }
  return out;
}

/**
 * A report.csv line as a sample, under the columns of the header (diff/types.ts REPORT_COLUMNS);
 * null for a line of no category wanted.
 */
export function sampleOf(
  fields: readonly string[],
  columns: readonly string[],
): { category: Category; sample: Sample } | null {
  const at = (name: string) => fields[columns.indexOf(name)] ?? '';
  const category = at('category') as Category;
  if (!SAMPLE_CATEGORIES.includes(category)) return null;
  return {
    category,
    sample: {
      answerUuid: at('answerUuid'),
      fcRevision: at('fcRevision'),
      fcHash: at('fcContentHash'),
      fcDeleted: at('fcIsDeleted'),
      localRevision: at('localRevision'),
      localHash: at('localContentHash'),
      localDeleted: at('localIsDeleted'),
      localCreateTime: at('localCreateTime'),
    },
  };
}

// a value from the database, such as a form uuid or a folder, can hold anything: every word quoted
const cmd = (...words: string[]) => shellLine(words);

/**
 * The proof id (repair, ≤ 128) and operation prefix (replay, ≤ 91) of this run and school: at most
 * 3 + 64 (a run id) + 1 + 19 (a school) = 87 characters, whole — cut to 64, a long run id lost the
 * school and every school's repairs and replays shared one id.
 */
export function actionId(runId: string, schId: string): string {
  return `rc-${runId}-${schId}`;
}

/**
 * A run id as one word of a file name: characters other than `A-Z a-z 0-9 . _ -` (a run id may hold
 * `/`, quotes, spaces) become `_`, and a changed id gets 8 hex of its SHA-256 so two ids stay apart —
 * the retire proof of run `a/../b` is a file in the pair's folder, never a path elsewhere.
 * @example fileWordOf('2026-12-01T01-00Z') // '2026-12-01T01-00Z'; fileWordOf('a/b') // 'a_b-…'
 */
export function fileWordOf(runId: string): string {
  const safe = runId.replace(/[^A-Za-z0-9._-]/g, '_');
  return safe === runId ? runId : `${safe}-${createHash('sha256').update(runId, 'utf8').digest('hex').slice(0, 8)}`;
}

/**
 * Whether `--out` would overwrite a file of the run it reports: DIR/summary.json (the run's record,
 * which the next report and a resumed `--all` read) or anything inside a pair's folder (report.csv,
 * plans, manifests). Paths absolute and resolved; the reason, or null when the target is free.
 * @example outOverwritesRun('/r', '/r/summary.json') // 'it is the run's summary.json'
 */
export function outOverwritesRun(outDir: string, outFile: string): string | null {
  const rel = relative(outDir, outFile);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return null;
  if (rel.includes(sep)) return "it is inside a pair's folder of the run";
  return rel === DIFF_FILES.summary ? "it is the run's summary.json" : null;
}

/** The actions a pair's commands take, as bits (what the page stores per pair; ./client.ts builds the text). */
export const ACTIONS = { repair: 1, retire: 2 } as const;

/**
 * Which actions a pair's differences call for: the repair plan (missing, stale, conflicting rows,
 * repaired from FC) and the retire candidates (rows FC no longer has). Rows FC has that the consumer
 * never received (MISSING_LOCAL) are in the repair plan, inserted from FC; no replay is suggested for
 * them: `deliveries replay --failed` replays only FAILED/DEAD rows, which a missing row need not have
 * (issue 36 §14: pasted, it answered `items 0`).
 */
export function pairActions(p: {
  counts: Readonly<Record<Category, number>> | null;
  hasRepairPlan: boolean;
  hasRetireCandidates: boolean;
}): number {
  const c = p.counts;
  if (c === null) return 0;
  return (
    (p.hasRepairPlan && REPAIR_CATEGORIES.some((k) => c[k] > 0) ? ACTIONS.repair : 0) |
    (p.hasRetireCandidates && c.ABSENT_AT_FC > 0 ? ACTIONS.retire : 0)
  );
}

/**
 * What to do about a pair's differences, as commands that run as printed (docs/commands/*.md),
 * each dry run first: repair on the plan, retire-absent `prove` then retire on the proof.
 * The page rebuilds the same text from the actions (./client.ts `commandsOf`, tested equal).
 */
export function pairCommands(p: {
  schId: string;
  absDir: string;
  counts: Readonly<Record<Category, number>> | null;
  consumer: string | null;
  runId: string;
  hasRepairPlan: boolean;
  hasRetireCandidates: boolean;
}): PairCommand[] {
  return commandsOf(p, pairActions(p));
}

/** The commands of {@link pairActions}' bits. */
export function commandsOf(
  p: {
    schId: string;
    absDir: string;
    counts: Readonly<Record<Category, number>> | null;
    consumer: string | null;
    runId: string;
  },
  actions: number,
): PairCommand[] {
  if (p.counts === null) return [];
  const counts = p.counts;
  const consumer = p.consumer ?? '<consumer-key>';
  const file = (name: string) => `${p.absDir}/${name}`;
  const out: PairCommand[] = [];
  const id = actionId(p.runId, p.schId);
  if (actions & ACTIONS.repair) {
    const base = cmd('projection', 'repair-authoritative', '--consumer', consumer, '--proof-id', id);
    const plan = `${base} --school ${shellWord(p.schId)} --plan ${shellWord(file('repair-plan.jsonl'))}`;
    out.push({
      title: 'Repair from FC',
      why: `${REPAIR_CATEGORIES.map((c) => counts[c]).reduce((a, b) => a + b, 0)} rows missing, stale or in conflict locally, repaired from FC (the missing ones, which the consumer never received, inserted)`,
      dryRun: [plan],
      execute: `${plan} --execute`,
    });
  }
  if (actions & ACTIONS.retire) {
    const proof = file(`retire-proof-${fileWordOf(p.runId)}.json`);
    out.push({
      title: 'Retire rows FC no longer has',
      why: `${counts.ABSENT_AT_FC} local rows absent at FC: prove (reads FC, writes the proof), then retire on the proof`,
      dryRun: [
        cmd(
          'retire-absent',
          'prove',
          '--candidates',
          file('retire-candidates.jsonl'),
          '--fc-manifest',
          file('fc-manifest.jsonl'),
          '--out',
          proof,
        ),
        cmd('retire-absent', '--proof', proof),
      ],
      execute: `${cmd('retire-absent', '--proof', proof)} --execute`,
    });
  }
  return out;
}

/**
 * How much two nights' pairs must share to be of one scope: the pairs of both, of the larger night's.
 * A fleet gains or loses a few pairs a night (a new form, a school gone) and stays the fleet; an
 * ad-hoc run of one pair or one school shares a small part of it.
 */
export const SAME_SCOPE_SHARE = 0.9;

/**
 * The night the headline's change is against: the newest earlier night in the ledger of the same
 * scope (issue 36 §14) — its pairs and this run's share at least {@link SAME_SCOPE_SHARE} of the
 * larger set: an `--all` night is compared with the last `--all` night though a few pairs came or
 * went (the change is over the pairs of both, `changeBasis`), an ad-hoc run of one pair (or of a
 * filtered set) with runs of (nearly) the same pairs only. Null: none.
 * @example previousNightOf('n3', ['5/f'], nights, pairNights)?.runId // 'n1' when n2 covered other pairs
 */
export function previousNightOf(
  runId: string,
  runPairs: readonly string[],
  nights: readonly TrendNight[],
  pairNights: readonly TrendPairNight[],
): TrendNight | null {
  const scope = new Set(runPairs);
  const byNight = new Map<string, Set<string>>();
  for (const p of pairNights) {
    const set = byNight.get(p.runId) ?? new Set<string>();
    set.add(pairKey(p.schId, p.formUuid));
    byNight.set(p.runId, set);
  }
  const at = nights.findIndex((n) => n.runId === runId);
  const earlier = at < 0 ? nights : nights.slice(0, at);
  for (let i = earlier.length - 1; i >= 0; i--) {
    const n = earlier[i]!;
    if (n.runId === runId) continue;
    const pairs = byNight.get(n.runId) ?? new Set<string>();
    const both = [...scope].filter((k) => pairs.has(k)).length;
    if (both >= SAME_SCOPE_SHARE * Math.max(scope.size, pairs.size)) return n;
  }
  return null;
}

/** A ledger pair-night as the trend reads it (the contract's LedgerPair). */
export interface TrendPairNight {
  readonly runId: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly counts: Readonly<Record<Category, number>>;
  /** the ledger's result (`FAILED`: no counts that night); absent read as DONE */
  readonly result?: string;
}

/**
 * What the headline's change compares with the previous night: each night's counts over the pairs
 * done on both. A pair failed on either night has no counts there: counted on one side only, it
 * reads as rows gone (or back) that never changed — IN_SYNC −196 for a pair that only failed.
 * `leftOut`: the pairs not compared — this run's failed tonight or then, or new since; that night's
 * not run tonight.
 * @example changeBasis([{ key: '5/f', counts }], 'n1', pairNights).leftOut // 0
 */
export function changeBasis(
  tonight: ReadonlyArray<{ readonly key: string; readonly counts: Readonly<Record<Category, number>> | null }>,
  previousRunId: string,
  pairNights: readonly TrendPairNight[],
): { now: Record<Category, number>; before: Record<Category, number>; leftOut: number } {
  const then = new Map<string, Readonly<Record<Category, number>>>();
  const gone = new Set<string>();
  for (const p of pairNights) {
    if (p.runId !== previousRunId) continue;
    gone.add(pairKey(p.schId, p.formUuid));
    if ((p.result ?? 'DONE') === 'DONE') then.set(pairKey(p.schId, p.formUuid), p.counts);
  }
  for (const t of tonight) gone.delete(t.key);
  const now = emptyCounts();
  const before = emptyCounts();
  let leftOut = 0;
  for (const t of tonight) {
    const b = then.get(t.key);
    if (t.counts === null || b === undefined) {
      leftOut++;
      continue;
    }
    for (const c of CATEGORIES) {
      now[c] += t.counts[c] ?? 0;
      before[c] += b[c] ?? 0;
    }
  }
  return { now, before, leftOut: leftOut + gone.size };
}

/** The key of a pair in the trend and the page's data. */
export const pairKey = (schId: string, formUuid: string) => `${schId}/${formUuid}`;

/**
 * The trend from the ledger's nights (oldest first) and their pairs: per pair, only the categories
 * with a count on some night (most pairs are in sync every night: their trend is IN_SYNC alone).
 */
export function trendOf(nights: readonly TrendNight[], pairNights: readonly TrendPairNight[]): Trend {
  const index = new Map(nights.map((n, i) => [n.runId, i]));
  const pairs: Record<string, Partial<Record<Category, (number | null)[]>>> = {};
  for (const pn of pairNights) {
    const i = index.get(pn.runId);
    if (i === undefined) continue;
    const key = pairKey(pn.schId, pn.formUuid);
    const series = (pairs[key] ??= {});
    for (const c of CATEGORIES) {
      if ((pn.counts[c] ?? 0) === 0 && series[c] === undefined) continue;
      const s = (series[c] ??= nights.map(() => null));
      s[i] = pn.counts[c] ?? 0;
    }
  }
  return { nights, pairs };
}

/** Whether the run is over: no pair waits or is held (the process that sees it writes report.html). */
export function runFinished(byState: Readonly<Record<string, number>>): boolean {
  return (byState['PENDING'] ?? 0) === 0 && (byState['CLAIMED'] ?? 0) === 0;
}

/** The run's pairs by state, its hosts, and the processes holding pairs now (claim owner before its `:n`). */
export function runShape(tasks: readonly ReportTask[]): {
  byState: Record<string, number>;
  hosts: string[];
  holders: { owner: string; host: string | null; pairs: number }[];
  startedAt: string | null;
  finishedAt: string | null;
} {
  const byState: Record<string, number> = { PENDING: 0, CLAIMED: 0, DONE: 0, FAILED: 0 };
  const holders = new Map<string, { owner: string; host: string | null; pairs: number }>();
  let startedAt: string | null = null;
  let finishedAt: string | null = null;
  for (const t of tasks) {
    byState[t.state] = (byState[t.state] ?? 0) + 1;
    if (startedAt === null || t.create_time < startedAt) startedAt = t.create_time;
    if (t.finished_at !== null && (finishedAt === null || t.finished_at > finishedAt)) finishedAt = t.finished_at;
    if (t.held && t.claim_owner !== null) {
      const owner = t.claim_owner.replace(/:\d+$/, '');
      const h = holders.get(owner) ?? { owner, host: t.host, pairs: 0 };
      holders.set(owner, { ...h, pairs: h.pairs + 1 });
    }
  }
  const hosts = [...new Set(tasks.map((t) => t.host).filter((h): h is string => h !== null))].sort();
  return { byState, hosts, holders: [...holders.values()], startedAt, finishedAt };
}
