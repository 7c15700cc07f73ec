/**
 * How `fcctl status` shows its snapshot: `--json` (or off a terminal) the document as one JSON
 * line; on a terminal an ink report (lib/cli/ui ReportView) of the same sections, which `--watch`
 * redraws in place (watch.ts).
 */
import type { Io } from '../cli/io.js';
import { jsonLine } from '../cli/printable.js';
import { formatDuration } from '../cli/progress.js';
import { type Column, formatTable, type Row } from '../cli/table.js';
import { terminal } from '../cli/terminal.js';
import type { ReportBlock } from '../cli/ui/views.js';
import { clip, DEFAULT_WIDTH, fitHeight, pack } from './layout.js';
import type { Fleet, QueueFacts, StatusFormat, ReconcileRunFacts, Section, Sides, StatusDocument } from './types.js';

const ago = (s: number | null) => (s === null ? '-' : formatDuration(Math.max(0, s)));

/** How the report is fitted: the terminal's columns, and its rows under `--watch`. */
export interface Fit {
  readonly columns: number;
  /** the screen's rows: the report is cut to them (`--watch`); null: printed whole */
  readonly rows: number | null;
  readonly watching: boolean;
}

const FIT_80: Fit = { columns: DEFAULT_WIDTH, rows: null, watching: false };

/** A section that was not read, as what it says, or null when it was. */
function unreadLine(s: Section<object>): string | null {
  if (s.status === 'not configured') return 'not configured';
  if (s.status === 'unreachable') return `unreachable: ${s.error}`;
  return null;
}

/** A section named in the folded lines, and what it is when it says nothing (`none`, or not read). */
interface Folded {
  readonly name: string;
  readonly why: string;
}

/**
 * The report being built: blocks with something to say, and the sections folded into the
 * headline's lines (`none: …`, `not configured: …`), so six empty sections are one line.
 */
class Report {
  readonly blocks: ReportBlock[] = [];
  readonly folded: Folded[] = [];
  constructor(readonly fit: Fit) {}

  add<T extends object>(
    title: string,
    s: Section<T>,
    lines: (ok: T) => string[],
    tone: (ok: T) => ReportBlock['tone'] = () => 'plain',
  ): void {
    const unread = unreadLine(s);
    if (unread !== null || s.status !== 'ok') {
      this.folded.push({ name: title, why: unread ?? '' });
      return;
    }
    const body = lines(s);
    if (body.length === 0) this.folded.push({ name: title, why: 'none' });
    else this.blocks.push({ title, lines: body.map((l) => clip(l, this.fit.columns)), tone: tone(s) });
  }

  /**
   * Both databases' rows of a two-sided section in one table, each row with its `db` (one title and
   * one header, not two); a side not read is folded (`not configured: fleet (SH)`), both empty: `none`.
   */
  joined<T extends object>(
    title: string,
    s: Sides<T>,
    part: (ok: T) => { rows: object[]; lines: string[]; tone?: ReportBlock['tone'] },
    columns: readonly Column[],
  ): void {
    const read = (['fc', 'sh'] as const).flatMap((side) => {
      const sec = s[side];
      const unread = unreadLine(sec);
      if (unread !== null || sec.status !== 'ok') {
        this.folded.push({ name: `${title} (${side.toUpperCase()})`, why: unread ?? '' });
        return [];
      }
      return [{ db: side.toUpperCase(), ...part(sec) }];
    });
    if (read.length === 0) return;
    const rows = read.flatMap((x) => x.rows.map((r) => ({ db: x.db, ...r })));
    const lines = read.flatMap((x) => x.lines.map((l) => `${x.db} ${l}`));
    const body = [...table(rows, [{ key: 'db' }, ...columns], this.fit.columns), ...lines];
    if (body.length === 0) this.folded.push({ name: title, why: 'none' });
    else
      this.blocks.push({
        title,
        lines: body.map((l) => clip(l, this.fit.columns)),
        tone: read.some((x) => x.tone === 'warn') ? 'warn' : 'plain',
      });
  }

  /** The folded sections, one line per reason: `none: live claims (FC, SH), pauses in force (SH)`. */
  foldedLines(): string[] {
    // what cannot be read first, then what is not set up, then what is empty
    const rank = (why: string) => (why === 'none' ? 2 : why === 'not configured' ? 1 : 0);
    const whys = [...new Set(this.folded.map((f) => f.why))].sort((a, b) => rank(a) - rank(b));
    return whys.flatMap((why) => {
      const [first, ...rest] = sidesJoined(this.folded.filter((f) => f.why === why).map((f) => f.name));
      // a line the list goes on after ends with its comma
      const lines = pack([`${why}: ${first}`, ...rest], this.fit.columns - 1, ', ');
      return lines.map((l, i) => (i < lines.length - 1 ? `${l},` : l));
    });
  }
}

/**
 * Section names with a side each joined per section: `['fleet (FC)', 'fleet (SH)']` → `['fleet (FC, SH)']`.
 * @example sidesJoined(['outbox', 'pauses in force (FC)', 'pauses in force (SH)']) // ['outbox', 'pauses in force (FC, SH)']
 */
export function sidesJoined(names: readonly string[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    const m = /^(.*) \((FC|SH)\)$/.exec(name);
    const prev = out.at(-1);
    if (m && prev === `${m[1]} (FC)` && m[2] === 'SH') out[out.length - 1] = `${m[1]} (FC, SH)`;
    else out.push(name);
  }
  return out;
}

/** A table narrowed to the terminal (free text cut first, identifiers never). */
const table = (rows: readonly object[], columns: readonly Column[], maxWidth: number) =>
  rows.length === 0 ? [] : formatTable(rows as unknown as Row[], columns, maxWidth);

function queueLines(q: QueueFacts, acceptedWord: string, columns: number): string[] {
  const reasons = (state: 'DEAD' | 'FAILED') =>
    q.reasons[state].length === 0
      ? []
      : [`${state} reasons: ${q.reasons[state].map((r) => `${r.reason ?? '(none)'} ×${r.n}`).join(' · ')}`];
  const states = Object.entries(q.states).map(([k, v]) => `${k} ${q.estimated.includes(k) ? '≈' : ''}${v}`);
  return [
    ...pack([...states, ...(q.estimated.length > 0 ? ['(≈ estimated: --exact-counts to count)'] : [])], columns),
    ...pack(
      [
        `due ${q.due}`,
        ...(q.held === null ? [] : [`held ${q.held}`]),
        `stuck ${q.stuck}`,
        `oldest due ${ago(q.oldestDueAgeSeconds)}`,
        `${acceptedWord} ${q.accepted.last5m} in 5 min, ${q.accepted.last1h} in 1 h`,
      ],
      columns,
    ),
    ...reasons('DEAD'),
    ...reasons('FAILED'),
    ...q.warnings,
  ];
}

const deadTone = (q: QueueFacts): ReportBlock['tone'] => ((q.states['DEAD'] ?? 0) > 0 ? 'warn' : 'plain');

/** The registry's rows: the live and stale ones in the table, the gone ones apart (not counted). */
function fleetPart(f: Fleet): { rows: object[]; lines: string[]; tone: ReportBlock['tone'] } {
  const listed = f.workers.filter((w) => !w.gone);
  const gone = f.workers.filter((w) => w.gone);
  return {
    rows: listed.map((w) => ({ ...w, flag: w.stale ? 'STALE' : '' })),
    lines: [
      // the reason of an outage or a misconfiguration, under the table: free text, cut to the width
      ...listed.filter((w) => w.detail !== null).map((w) => `${w.command} ${w.host}:${w.pid} ${w.state}: ${w.detail}`),
      // the list is bounded; the counts are not
      ...(f.stale > listed.filter((w) => w.stale).length ? [`${f.stale} stale in the whole registry`] : []),
      ...gone.map((w) => `gone (not counted): ${w.command} ${w.host}:${w.pid}, last beat ${w.lastBeatAt}`),
      ...(f.gone > gone.length ? [`${f.gone} gone in the whole registry (not counted)`] : []),
    ],
    tone: f.stale > 0 ? 'warn' : 'plain',
  };
}

const FLEET_COLUMNS: readonly Column[] = [
  { key: 'command' },
  { key: 'host', flex: true },
  { key: 'pid', keep: true },
  { key: 'state' },
  { key: 'rowsPerSecond', header: 'rows/s' },
  { key: 'lastBeatAt', header: 'last beat (UTC)', keep: true },
  { key: 'flag', header: '' },
];

const CLAIM_COLUMNS: readonly Column[] = [
  { key: 'owner', flex: true },
  { key: 'host', flex: true },
  { key: 'pid' },
  { key: 'rows' },
  { key: 'expiresAt' },
];

/** The pauses in force, in the headline: they are a condition. */
function pauseLines(doc: StatusDocument): string[] {
  return (['fc', 'sh'] as const).flatMap((side) => {
    const s = doc.pauses[side];
    if (s.status !== 'ok') return [];
    return s.pauses.map(
      (x) =>
        `paused ${x.command} (${side.toUpperCase()}): ${x.reason} — by ${x.pausedBy}, until ${x.until ?? 'resumed'}`,
    );
  });
}

/** The headline: the conditions that hold, those failing, those not judged. */
function headline(doc: StatusDocument, watching: boolean): ReportBlock {
  const holding = Object.entries(doc.conditions)
    .filter(([, v]) => v)
    .map(([k]) => k);
  return {
    title: `fcctl status · ${doc.takenAt}${watching ? ' · every 2 s, q to leave' : ''}`,
    lines: [
      holding.length === 0
        ? 'no condition holds'
        : `conditions: ${holding.join(', ')}${doc.failing.length > 0 ? ` · failing: ${doc.failing.join(', ')}` : ''}`,
      ...(doc.unjudged.length === 0 ? [] : [`not judged: ${doc.unjudged.map((u) => u.condition).join(', ')}`]),
    ],
    tone: doc.exitCode !== 0 ? 'bad' : holding.length > 0 ? 'warn' : 'good',
  };
}

function reconcileLines({ run }: { readonly run: ReconcileRunFacts | null }): string[] {
  if (run === null) return [];
  return [
    `run ${run.runId}${run.startedAt === null ? '' : ` (begun ${run.startedAt} UTC)`} · pairs ${run.done + run.failed}/${run.total} · failed ${run.failed} · with differences ${run.withDifferences}`,
    `processes ${run.processes.length}${run.processes.length > 0 ? ` (${run.processes.join(', ')})` : ''} · ETA ${run.etaSeconds === null ? '-' : formatDuration(run.etaSeconds)}`,
  ];
}

/**
 * The report's blocks, fitted to the terminal (issue 36 §9): the conditions first, with the
 * sections that have nothing to say folded into one line each (`none: …`); then the outbox and the
 * apply commands; then the sections with something in them, tables narrowed to the columns; under
 * `--watch` cut to the screen's rows, the conditions and the outbox kept.
 * @example terminal().reportText(statusBlocks(doc, { columns: 80, rows: null, watching: false }))
 */
export function statusBlocks(doc: StatusDocument, fit: Fit = FIT_80): ReportBlock[] {
  const r = new Report(fit);
  const w = fit.columns;
  r.add('outbox', doc.outbox, (q) => queueLines(q, 'accepted', w), deadTone);
  r.add('apply commands', doc.applyCommands, (q) => queueLines(q, 'done', w), deadTone);
  r.joined('fleet', doc.fleet, fleetPart, FLEET_COLUMNS);
  r.joined('live claims', doc.claims, (c) => ({ rows: [...c.owners], lines: [] }), CLAIM_COLUMNS);
  // the pauses are said in the headline; a side not read is folded like any section
  for (const side of ['fc', 'sh'] as const) {
    const unread = unreadLine(doc.pauses[side]);
    if (unread !== null) r.folded.push({ name: `pauses (${side.toUpperCase()})`, why: unread });
  }
  if (pauseLines(doc).length === 0 && doc.pauses.fc.status === 'ok' && doc.pauses.sh.status === 'ok')
    r.folded.push({ name: 'pauses', why: 'none' });
  r.add('reconcile run --all', doc.reconcile, reconcileLines, ({ run }) => ((run?.failed ?? 0) > 0 ? 'warn' : 'plain'));
  const head = headline(doc, fit.watching);
  // the title cut too (`fcctl status · <time> · every 2 s, q to leave` is 64 columns): a narrow pane
  // (a tmux split) would wrap it, and the redrawn view, a line taller than the screen, lose its top
  const top = {
    ...head,
    title: clip(head.title, w),
    lines: [...[...head.lines, ...pauseLines(doc)].map((l) => clip(l, w)), ...r.foldedLines()],
  };
  const blocks = [top, ...r.blocks.map((b) => ({ ...b, title: clip(b.title, w) }))];
  return fit.rows === null ? blocks : fitHeight(blocks, fit.rows, w);
}

/** A queue in the one-line mode: `outbox due 3 (5m) dead 2` (the oldest due's age), or why it was not read. */
function queueWord(name: string, s: Section<QueueFacts>): string {
  if (s.status === 'not configured') return `${name} not configured`;
  if (s.status === 'unreachable') return `${name} unreachable`;
  const oldest = s.oldestDueAgeSeconds === null ? '' : ` (${ago(s.oldestDueAgeSeconds)})`;
  return `${name} due ${s.due}${oldest} dead ${s.states['DEAD'] ?? 0}`;
}

/**
 * The databases with a section that did not answer (`FC`, `SH`): what an exit 3 of the line names.
 * @example unreachableSides(doc) // ['SH']
 */
export function unreachableSides(doc: StatusDocument): string[] {
  const fc = [doc.outbox, doc.fleet.fc, doc.claims.fc, doc.pauses.fc];
  const sh = [doc.applyCommands, doc.reconcile, doc.fleet.sh, doc.claims.sh, doc.pauses.sh];
  const down = (xs: ReadonlyArray<Section<object>>) => xs.some((s) => s.status === 'unreachable');
  return [...(down(fc) ? ['FC'] : []), ...(down(sh) ? ['SH'] : [])];
}

/**
 * The one-line mode (`--format line`, for scripts and tmux status bars, as gh-ost's status line):
 * the verdict and the conditions first, then the queues and the fleet, cut to `columns`.
 * @example statusLine(doc, 80) // 'FAILING no-relay · outbox due 3 (2m) dead 0 · apply due 0 dead 0 · workers 0'
 */
export function statusLine(doc: StatusDocument, columns = DEFAULT_WIDTH): string {
  const holding = (Object.entries(doc.conditions) as Array<[string, boolean]>).filter(([, v]) => v).map(([k]) => k);
  const failing = new Set<string>(doc.failing);
  const others = holding.filter((c) => !failing.has(c));
  // every reason of the exit code, never one hiding another: a failing condition stays said when
  // another cannot be judged, and exit 3 names the database it could not read
  const unreachable = unreachableSides(doc);
  const verdict =
    [
      ...(doc.unjudged.length > 0 ? [`NOT JUDGED ${doc.unjudged.map((u) => u.condition).join(',')}`] : []),
      ...(doc.failing.length > 0 ? [`FAILING ${doc.failing.join(',')}`] : []),
      ...(unreachable.length > 0 ? [`UNREACHABLE ${unreachable.join(',')}`] : []),
    ].join('; ') || 'ok';
  const fleets = [doc.fleet.fc, doc.fleet.sh].filter((f) => f.status === 'ok');
  const live = fleets.reduce((a, f) => a + f.live.reduce((n, l) => n + l.n, 0), 0);
  const stale = fleets.reduce((a, f) => a + f.stale, 0);
  const parts = [
    `${verdict}${others.length > 0 ? ` (${others.join(',')})` : ''}`,
    queueWord('outbox', doc.outbox),
    queueWord('apply', doc.applyCommands),
    `workers ${live}${stale > 0 ? ` +${stale} stale` : ''}`,
  ];
  return clip(parts.join(' · '), columns);
}

/** The terminal's columns, or 80 off one. */
const columnsOf = (io: Io) => (io.stdout.isTTY && io.stdout.columns ? io.stdout.columns : DEFAULT_WIDTH);

/**
 * Prints one snapshot: the one line (`--format line`), one JSON line when `json`, else the ink
 * report fitted to the terminal's width (ink already loaded by main).
 * @example renderStatus(doc, ctx.io, { json: ctx.output.json, format: 'report' })
 */
export function renderStatus(doc: StatusDocument, io: Io, o: { json: boolean; format: StatusFormat }): void {
  if (o.format === 'line') {
    io.stdout.write(`${statusLine(doc, Math.min(columnsOf(io), DEFAULT_WIDTH))}\n`);
    return;
  }
  if (o.json) {
    io.stdout.write(`${jsonLine(doc)}\n`);
    return;
  }
  const columns = columnsOf(io);
  const blocks = statusBlocks(doc, { columns, rows: null, watching: false });
  io.stdout.write(`${terminal().reportText(blocks, columns)}\n`);
}
