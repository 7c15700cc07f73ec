import { createElement } from 'react';
import { render, renderToString } from 'ink';
import type { ProgressSnapshot } from '../progress.js';
import { ProgressView, TableView } from './views.js';

/** A titled table rendered by ink to a string. */
export function tableText(title: string | undefined, lines: readonly string[]): string {
  return renderToString(createElement(TableView, { title, lines }));
}

/** A live progress view on `stream`, redrawn from `snapshot()`. */
export function liveProgress(stream: NodeJS.WriteStream, stdin: NodeJS.ReadStream, snapshot: () => ProgressSnapshot) {
  const view = () => createElement(ProgressView, { snapshot: snapshot() });
  const instance = render(view(), { stdout: stream, stdin, exitOnCtrlC: false, patchConsole: false });
  return { redraw: () => instance.rerender(view()), unmount: () => instance.unmount() };
}
