/**
 * How `fcctl status` shows its snapshot: `--json` (or off a terminal) the document as one JSON
 * line; on a terminal an ink report (lib/cli/ui ReportView) of the same sections, which `--watch`
 * redraws in place (watch.ts).
 */
import type { Io } from '../cli/io.js';
import { jsonLine } from '../cli/printable.js';
import { formatDuration } from '../cli/progress.js';
import { formatTable, type Row } from '../cli/table.js';
import { terminal } from '../cli/terminal.js';
import type { ReportBlock } from '../cli/ui/views.js';
import type { QueueFacts, Section, Sides, StatusDocument } from './types.js';

const ago = (s: number | null) => (s === null ? '-' : formatDuration(Math.max(0, s)));

/** A section that was not read, as one line, or null when it was. */
function unreadLine(s: Section<object>): string | null {
  if (s.status === 'not configured') return 'not configured';
  if (s.status === 'unreachable') return `unreachable: ${s.error}`;
  return null;
}

function block<T extends object>(
  title: string,
  s: Section<T>,
  lines: (ok: T) => string[],
  tone: (ok: T) => ReportBlock['tone'] = () => 'plain',
): ReportBlock {
  const unread = unreadLine(s);
  if (unread !== null || s.status !== 'ok')
    return { title, lines: [unread ?? ''], tone: s.status === 'unreachable' ? 'bad' : 'warn' };
  const body = lines(s);
  return { title, lines: body.length > 0 ? body : ['none'], tone: tone(s) };
}

/** One block per database of a two-sided section. */
function sideBlocks<T extends object>(
  title: string,
  s: Sides<T>,
  lines: (ok: T) => string[],
  tone?: (ok: T) => ReportBlock['tone'],
): ReportBlock[] {
  return [block(`${title} (FC)`, s.fc, lines, tone), block(`${title} (SH)`, s.sh, lines, tone)];
}

const table = (rows: readonly object[], keys: readonly string[]) =>
  rows.length === 0
    ? []
    : formatTable(
        rows as unknown as Row[],
        keys.map((key) => ({ key })),
      );

function queueLines(q: QueueFacts, acceptedWord: string): string[] {
  const reasons = (state: 'DEAD' | 'FAILED') =>
    q.reasons[state].length === 0
      ? []
      : [`${state} reasons: ${q.reasons[state].map((r) => `${r.reason ?? '(none)'} ×${r.n}`).join(' · ')}`];
  return [
    Object.entries(q.states)
      .map(([k, v]) => `${k} ${q.estimated.includes(k) ? '≈' : ''}${v}`)
      .join(' · ') + (q.estimated.length > 0 ? ' (≈ estimated: --exact-counts to count)' : ''),
    `due ${q.due}${q.held === null ? '' : ` · held ${q.held}`} · stuck ${q.stuck} · oldest due ${ago(q.oldestDueAgeSeconds)}`,
    `${acceptedWord}: ${q.accepted.last5m} in the last 5 min · ${q.accepted.last1h} in the last hour`,
    ...reasons('DEAD'),
    ...reasons('FAILED'),
    ...q.warnings,
  ];
}

const deadTone = (q: QueueFacts): ReportBlock['tone'] => ((q.states['DEAD'] ?? 0) > 0 ? 'warn' : 'plain');

/**
 * The report's blocks: the conditions first, then each section.
 * @example terminal().reportText(statusBlocks(doc))
 */
export function statusBlocks(doc: StatusDocument, watching = false): ReportBlock[] {
  const holding = Object.entries(doc.conditions)
    .filter(([, v]) => v)
    .map(([k]) => k);
  return [
    {
      title: `fcctl status · ${doc.takenAt}${watching ? ' · every 2 s, q to leave' : ''}`,
      lines: [
        holding.length === 0 ? 'no condition holds' : `conditions: ${holding.join(', ')}`,
        ...(doc.unjudged.length === 0 ? [] : [`not judged: ${doc.unjudged.map((u) => u.condition).join(', ')}`]),
      ],
      tone: doc.failing.length > 0 || doc.unjudged.length > 0 ? 'bad' : holding.length > 0 ? 'warn' : 'good',
    },
    block('outbox', doc.outbox, (q) => queueLines(q, 'accepted by the broker'), deadTone),
    block('apply commands', doc.applyCommands, (q) => queueLines(q, 'done'), deadTone),
    ...sideBlocks(
      'fleet',
      doc.fleet,
      (f) => [
        ...table(
          f.workers.map((w) => ({ ...w, stale: w.stale ? 'STALE' : '' })),
          ['command', 'host', 'pid', 'version', 'state', 'rowsPerSecond', 'lastBeatAt', 'stale'],
        ),
        // the list is bounded; the stale count is not
        ...(f.stale > f.workers.filter((w) => w.stale).length ? [`${f.stale} stale in the whole registry`] : []),
      ],
      (f) => (f.stale > 0 ? 'warn' : 'plain'),
    ),
    ...sideBlocks('live claims', doc.claims, (c) => table(c.owners, ['owner', 'host', 'pid', 'rows', 'expiresAt'])),
    ...sideBlocks(
      'pauses in force',
      doc.pauses,
      (p) => p.pauses.map((x) => `${x.command}: ${x.reason} — by ${x.pausedBy}, until ${x.until ?? 'resumed'}`),
      (p) => (p.pauses.length > 0 ? 'warn' : 'plain'),
    ),
    block(
      'reconcile run --all',
      doc.reconcile,
      ({ run }) =>
        run === null
          ? []
          : [
              `run ${run.runId}${run.startedAt === null ? '' : ` (begun ${run.startedAt} UTC)`} · pairs ${run.done + run.failed}/${run.total} · failed ${run.failed} · with differences ${run.withDifferences}`,
              `processes ${run.processes.length}${run.processes.length > 0 ? ` (${run.processes.join(', ')})` : ''} · ETA ${run.etaSeconds === null ? '-' : formatDuration(run.etaSeconds)}`,
            ],
      ({ run }) => ((run?.failed ?? 0) > 0 ? 'warn' : 'plain'),
    ),
  ];
}

/**
 * Prints one snapshot: one JSON line when `json`, else the ink report (ink already loaded by main).
 * @example renderStatus(doc, ctx.io, ctx.output.json)
 */
export function renderStatus(doc: StatusDocument, io: Io, json: boolean): void {
  if (json) {
    io.stdout.write(`${jsonLine(doc)}\n`);
    return;
  }
  io.stdout.write(`${terminal().reportText(statusBlocks(doc))}\n`);
}
