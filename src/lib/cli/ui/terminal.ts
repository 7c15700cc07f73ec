import { createElement } from 'react';
import { render, renderToString } from 'ink';
import { printable } from '../printable.js';
import type { ProgressSnapshot } from '../progress.js';
import { ProgressView, type ReportBlock, ReportView, TableView } from './views.js';

/**
 * The blocks as the terminal gets them: every title and line {@link printable}, so a text read from
 * a database, the broker or the flow center never drives the terminal (a title, colours), whichever
 * view put it in a line.
 */
const printableBlocks = (blocks: readonly ReportBlock[]): ReportBlock[] =>
  blocks.map((b) => ({ ...b, title: printable(b.title), lines: b.lines.map(printable) }));

/**
 * A titled table rendered by ink to a string, as wide as the terminal (ink's default is 80
 * columns, which wrapped every table on a wider one); title and lines {@link printable}.
 */
export function tableText(title: string | undefined, lines: readonly string[], columns?: number): string {
  const view = createElement(TableView, {
    title: title === undefined ? undefined : printable(title),
    lines: lines.map(printable),
  });
  return renderToString(view, columns ? { columns } : {});
}

/**
 * A report of titled blocks rendered by ink to a string (`fcctl explain`), never hard-wrapped: a
 * printed command must paste as one line (ink's 80 columns broke it in two), so the width is
 * the terminal's or the longest line's, whichever is wider; the terminal soft-wraps the rest.
 */
export function reportText(report: readonly ReportBlock[], columns = 80): string {
  const blocks = printableBlocks(report);
  const longest = Math.max(0, ...blocks.flatMap((b) => [b.title, ...b.lines].map((l) => l.length)));
  return renderToString(createElement(ReportView, { blocks }), { columns: Math.max(columns, longest) });
}

/** A live progress view on `stream`, redrawn from `snapshot()`. */
export function liveProgress(stream: NodeJS.WriteStream, stdin: NodeJS.ReadStream, snapshot: () => ProgressSnapshot) {
  const view = () => createElement(ProgressView, { snapshot: snapshot() });
  const instance = render(view(), { stdout: stream, stdin, exitOnCtrlC: false, patchConsole: false });
  return { redraw: () => instance.rerender(view()), unmount: () => instance.unmount() };
}

/** A report redrawn in place on `stream` (`fcctl status --watch`); keys are read by the caller, not ink. */
export function liveReport(stream: NodeJS.WriteStream, stdin: NodeJS.ReadStream, blocks: readonly ReportBlock[]) {
  const instance = render(createElement(ReportView, { blocks: printableBlocks(blocks) }), {
    stdout: stream,
    stdin,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  return {
    update: (next: readonly ReportBlock[]) =>
      instance.rerender(createElement(ReportView, { blocks: printableBlocks(next) })),
    unmount: () => instance.unmount(),
  };
}
