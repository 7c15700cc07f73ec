import { stringify as csvStringify } from 'csv-stringify/sync';
import type { Io } from './io.js';
import { ProgressState, type ProgressSnapshot } from './progress.js';
import { cellText, formatTable, type Column, type Row } from './table.js';
import { terminal } from './terminal.js';

export type ListFormat = 'table' | 'json' | 'csv';

export interface OutputOptions {
  /** `--json`: JSON lines even on a terminal */
  readonly json?: boolean;
  /** injected clock for progress rates */
  readonly clock?: () => number;
  /** where the summary waits for the process's exit code (see {@link SummaryHold}) */
  readonly hold?: SummaryHold;
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

/** A handle on a live progress display; `stop()` is safe to call twice. */
export interface Progress {
  record(failureReason?: string): void;
  setTotal(total: number): void;
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
  private readonly clock: () => number;
  private readonly hold: SummaryHold | undefined;

  constructor(
    readonly io: Io,
    options: OutputOptions = {},
  ) {
    this.json = Boolean(options.json) || !io.interactive;
    this.clock = options.clock ?? Date.now;
    this.hold = options.hold;
  }

  /**
   * This output in JSON mode (`--format json` on a terminal), keeping its summary hold, so that
   * summary too is printed with the process's exit code.
   */
  asJson(): Output {
    return this.json ? this : new Output(this.io, { json: true, clock: this.clock, ...(this.hold ? { hold: this.hold } : {}) });
  }

  /** One JSON line `{"type":type,...data}` in JSON mode; nothing on a terminal (the view shows it). */
  event(type: string, data: Readonly<Record<string, unknown>> = {}): void {
    if (this.json) this.line({ type, ...data });
  }

  /** Free text for a person (terminal only); JSON mode stays machine-readable. */
  note(text: string): void {
    if (!this.json) this.io.stdout.write(`${text}\n`);
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
      this.line({ type: 'summary', ...summary, ...(counts ? { counts } : {}) });
      return;
    }
    const rows: Row[] = Object.entries(summary)
      .filter(([k]) => k !== 'command')
      .map(([key, value]) => ({ key, value: cellText(value) }));
    for (const [key, value] of Object.entries(counts ?? {})) rows.push({ key, value });
    this.io.stdout.write(
      `${terminal().tableText(summary.command, formatTable(rows, [{ key: 'key', header: 'summary' }, { key: 'value', header: '' }]))}\n`,
    );
  }

  /** A listing of rows in the chosen format; csv through csv-stringify, json as JSON lines. */
  rows(rows: readonly Row[], columns: readonly Column[], format: ListFormat, title?: string): void {
    if (format === 'csv') {
      this.io.stdout.write(
        csvStringify(
          rows.map((r) => columns.map((c) => cellText(r[c.key]))),
          { header: true, columns: columns.map((c) => c.header ?? c.key) },
        ),
      );
      return;
    }
    if (format === 'json' || this.json) {
      for (const r of rows) this.line({ type: 'row', ...r });
      return;
    }
    const lines = formatTable(rows, columns);
    if (this.io.interactive) {
      this.io.stdout.write(`${terminal().tableText(title, lines)}\n`);
    } else {
      if (title) this.io.stdout.write(`${title}\n`);
      this.io.stdout.write(`${lines.join('\n')}\n`);
    }
  }

  /** Live progress on a terminal (ink, on stderr); silent bookkeeping otherwise. */
  progress(label: string, total?: number): Progress {
    const state = new ProgressState(label, total, this.clock);
    if (this.json) {
      return {
        record: (r) => state.record(r),
        setTotal: (t) => state.setTotal(t),
        snapshot: () => state.snapshot(),
        stop: () => undefined,
      };
    }
    const view = terminal().liveProgress(this.io.stderr as NodeJS.WriteStream, this.io.stdin as NodeJS.ReadStream, () => state.snapshot());
    // Redraw at most a few times a second: a fast batch must not spend its time repainting.
    const timer = setInterval(() => view.redraw(), 200);
    timer.unref();
    let stopped = false;
    return {
      record: (r) => state.record(r),
      setTotal: (t) => state.setTotal(t),
      snapshot: () => state.snapshot(),
      stop: () => {
        if (stopped) return;
        stopped = true;
        clearInterval(timer);
        view.redraw();
        view.unmount();
      },
    };
  }

  private line(obj: Readonly<Record<string, unknown>>): void {
    this.io.stdout.write(`${JSON.stringify(obj)}\n`);
  }
}
