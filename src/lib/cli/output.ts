import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { stringify as csvStringify } from 'csv-stringify/sync';
import { formulaSafe } from '../files/csv-cell.js';
import type { Io } from './io.js';
import { jsonLine, printable } from './printable.js';
import { ProgressState, progressLine, type ProgressSnapshot } from './progress.js';
import { summaryRows } from './summary-text.js';
import { cellText, formatTable, type Column, type Row } from './table.js';

export { summaryValueText } from './summary-text.js';
import { terminal } from './terminal.js';
import { isoWithOffset } from './timestamp.js';

export type ListFormat = 'table' | 'json' | 'csv';

export interface OutputOptions {
  /** `--json`: JSON lines even on a terminal */
  readonly json?: boolean;
  /** injected clock for progress rates (default: `now().getTime()`) */
  readonly clock?: () => number;
  /** injected wall clock: the `ts` of every JSON line (default: the system clock) */
  readonly now?: () => Date;
  /** where the summary waits for the process's exit code (see {@link SummaryHold}) */
  readonly hold?: SummaryHold;
  /** the summary's `runId` unless the command names a run of its own (default: a new UUID) */
  readonly runId?: string;
  /** the summary's `host` (default: `os.hostname()`) */
  readonly host?: string;
  /** off a terminal, a `progress` line on stderr this often while a progress handle is open; 0 (the default here) never */
  readonly progressIntervalMs?: number;
}

/**
 * Keeps a command's summary until the process's exit code is known, then prints it with that
 * code: whatever fails after a command printed its summary (a metrics file, an error thrown after
 * it), the summary's `exitCode` is the process's (README "Exit codes").
 * @example const hold = new SummaryHold(); new Output(io, { hold }).summary({ command: 'x', exitCode: 0 }); hold.release(3) // prints exitCode 3
 */
export class SummaryHold {
  private pending: Array<(exitCode: number) => void> = [];

  /** Keeps a summary's `print` until {@link release}. */
  keep(print: (exitCode: number) => void): void {
    this.pending.push(print);
  }

  /** Prints the summaries kept, in order, with `exitCode`; a second call prints nothing. */
  release(exitCode: number): void {
    const pending = this.pending;
    this.pending = [];
    for (const print of pending) print(exitCode);
  }
}

/** A summary closes every command's output: `{"type":"summary","command":…,"exitCode":…}`. */
export interface Summary {
  readonly command: string;
  readonly exitCode: number;
  readonly [key: string]: unknown;
}

/** What a run's summarizer returns: the summary line, and the counts a terminal shows under it (none in JSON). */
export interface SummaryWithCounts {
  summary: { command: string; exitCode: number; [key: string]: unknown };
  counts: Record<string, number> | undefined;
}

/** A handle on a live progress display; `stop()` is safe to call twice. */
export interface Progress {
  record(failureReason?: string): void;
  setTotal(total: number): void;
  /** a service's live facts, read at each redraw or progress line */
  setStatus(status: () => Readonly<Record<string, string | number>>): void;
  snapshot(): ProgressSnapshot;
  stop(): void;
}

/**
 * The one way commands write results (SPEC §2): a live ink view and tables on a terminal;
 * otherwise (or with `--json`) one JSON object per line, events then a final summary.
 * Data goes to stdout; progress and errors to stderr.
 * @example const out = new Output(io, { json: true }); out.event('sent', { eventId }); out.summary({ command: 'x', exitCode: 0 })
 */
export class Output {
  readonly json: boolean;
  /** the summary's `runId` when the command names none */
  readonly runId: string;
  private readonly now: () => Date;
  private readonly clock: () => number;
  private readonly hold: SummaryHold | undefined;
  private readonly host: string;
  private readonly progressIntervalMs: number;
  /** progress handles not stopped yet: {@link close} stops them */
  private readonly open = new Set<Progress>();

  constructor(
    readonly io: Io,
    private readonly options: OutputOptions = {},
  ) {
    this.json = Boolean(options.json) || !io.interactive;
    this.now = options.now ?? (() => new Date());
    this.clock = options.clock ?? (() => this.now().getTime());
    this.hold = options.hold;
    this.runId = options.runId ?? randomUUID();
    this.host = options.host ?? hostname();
    this.progressIntervalMs = options.progressIntervalMs ?? 0;
  }

  /**
   * This output in JSON mode (`--format json` on a terminal), keeping its summary hold, clocks,
   * run id and progress interval, so that summary too is printed with the process's exit code.
   */
  asJson(): Output {
    return this.json ? this : new Output(this.io, { ...this.options, json: true, runId: this.runId });
  }

  /** One JSON line `{"ts":…,"type":type,...data}` in JSON mode; nothing on a terminal (the view shows it). */
  event(type: string, data: Readonly<Record<string, unknown>> = {}): void {
    if (this.json) this.line({ type, ...data });
  }

  /** {@link event} when there is something to say (`data` not null). */
  eventIf(type: string, data: Readonly<Record<string, unknown>> | null): void {
    if (data) this.event(type, data);
  }

  /** Free text for a person (terminal only); JSON mode stays machine-readable. */
  note(text: string): void {
    // a note may carry a value read from a file or a database: its lines printable (lib/cli/printable.ts)
    if (!this.json) this.io.stdout.write(`${text.split('\n').map(printable).join('\n')}\n`);
  }

  /**
   * The closing summary: a JSON line, or a titled table of its scalar members. With a
   * {@link SummaryHold} it is printed when the hold is released, with the exit code given there.
   */
  summary(summary: Summary, counts?: Readonly<Record<string, number>>): void {
    if (this.hold) {
      this.hold.keep((exitCode) => this.printSummary({ ...summary, exitCode }, counts));
      return;
    }
    this.printSummary(summary, counts);
  }

  private printSummary(summary: Summary, counts?: Readonly<Record<string, number>>): void {
    if (this.json) {
      // A command that names a run of its own (the run id of its evidence, its audit rows, its run
      // directory — null there before one is recorded) keeps it, as it keeps a host of its own.
      this.line({
        type: 'summary',
        ...summary,
        ...(counts ? { counts } : {}),
        ...('runId' in summary ? {} : { runId: this.runId }),
        ...('host' in summary ? {} : { host: this.host }),
      });
      return;
    }
    // never a JSON object on a terminal: maps as `A 1, B 2`, nested ones a row per member (issue 36 §16)
    const { command: _, ...members } = summary;
    const rows: Row[] = summaryRows(members);
    for (const [key, value] of Object.entries(counts ?? {})) rows.push({ key, value });
    this.io.stdout.write(
      `${terminal().tableText(
        summary.command,
        formatTable(
          rows,
          [
            { key: 'key', header: 'summary' },
            { key: 'value', header: '' },
          ],
          this.io.stdout.columns,
        ),
        this.io.stdout.columns,
      )}\n`,
    );
  }

  /**
   * A listing of rows in the chosen format; csv through csv-stringify (a cell a spreadsheet would
   * take for a formula marked with `'`, which fcctl's `--from` reader takes off: `csv-cell.ts`),
   * json as JSON lines.
   */
  rows(rows: readonly Row[], columns: readonly Column[], format: ListFormat, title?: string): void {
    if (format === 'csv') {
      this.io.stdout.write(
        csvStringify(
          rows.map((r) => columns.map((c) => formulaSafe(cellText(r[c.key])))),
          { header: true, columns: columns.map((c) => c.header ?? c.key) },
        ),
      );
      return;
    }
    if (format === 'json' || this.json) {
      for (const r of rows) this.line({ type: 'row', ...r });
      return;
    }
    if (this.io.interactive) {
      // fitted to the terminal, never wrapped by it (issue 36 §16)
      const lines = formatTable(rows, columns, this.io.stdout.columns);
      this.io.stdout.write(`${terminal().tableText(title, lines, this.io.stdout.columns)}\n`);
      return;
    }
    if (title) this.io.stdout.write(`${title}\n`);
    this.io.stdout.write(`${formatTable(rows, columns).join('\n')}\n`);
  }

  /**
   * Live progress on a terminal (ink, on stderr). Otherwise bookkeeping, and with a progress
   * interval a `{"ts":…,"type":"progress",…}` line ({@link progressLine}) on stderr every interval
   * until `stop()` or {@link close}; the timer never keeps the process alive.
   */
  progress(label: string, total?: number): Progress {
    const state = new ProgressState(label, total, this.clock);
    if (this.json) return this.track(this.jsonProgress(state));
    const view = terminal().liveProgress(this.io.stderr as NodeJS.WriteStream, this.io.stdin as NodeJS.ReadStream, () =>
      state.snapshot(),
    );
    // Redraw at most a few times a second: a fast batch must not spend its time repainting.
    const timer = setInterval(() => view.redraw(), 200);
    timer.unref();
    let stopped = false;
    return this.track({
      record: (r) => state.record(r),
      setTotal: (t) => state.setTotal(t),
      setStatus: (f) => state.setStatus(f),
      snapshot: () => state.snapshot(),
      stop: () => {
        if (stopped) return;
        stopped = true;
        clearInterval(timer);
        view.redraw();
        view.unmount();
      },
    });
  }

  /** Stops every progress handle still open: the command has ended, its progress lines end too. */
  close(): void {
    for (const p of [...this.open]) p.stop();
  }

  private track(p: Progress): Progress {
    this.open.add(p);
    return {
      ...p,
      stop: () => {
        this.open.delete(p);
        p.stop();
      },
    };
  }

  private jsonProgress(state: ProgressState): Progress {
    let previousDone = 0;
    const timer =
      this.progressIntervalMs > 0
        ? setInterval(() => {
            const snapshot = state.snapshot();
            this.line({ type: 'progress', ...progressLine(snapshot, previousDone) }, this.io.stderr);
            previousDone = snapshot.done;
          }, this.progressIntervalMs)
        : undefined;
    timer?.unref();
    return {
      record: (r) => state.record(r),
      setTotal: (t) => state.setTotal(t),
      setStatus: (f) => state.setStatus(f),
      snapshot: () => state.snapshot(),
      stop: () => clearInterval(timer),
    };
  }

  /** One JSON line, `ts` first (the time it is written, from the injected clock). */
  private line(obj: Readonly<Record<string, unknown>>, stream: NodeJS.WritableStream = this.io.stdout): void {
    const ts = isoWithOffset(this.now());
    // `ts` keeps its place and its value even if the data holds a member of that name
    // jsonLine: a value read from a database or a server (a last_error) carries no raw C1 to a terminal
    stream.write(`${jsonLine(Object.assign({ ts }, obj, { ts }))}\n`);
  }
}
