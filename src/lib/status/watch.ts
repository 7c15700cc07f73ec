/**
 * `fcctl status --watch`: the ink report redrawn from a new snapshot every 2 s until `q` or Ctrl-C
 * is typed (read raw from the terminal, so Ctrl-C is a key here, not an interrupt: exit 0).
 */
import type { Io } from '../cli/io.js';
import { terminal } from '../cli/terminal.js';
import { DEFAULT_WIDTH } from './layout.js';
import { statusBlocks } from './render.js';
import type { StatusDocument } from './types.js';

export const WATCH_INTERVAL_MS = 2000;

/** The keys that leave the view: q, Q, Ctrl-C. */
export const isQuitKey = (data: string) => /^[qQ]$/.test(data) || data.includes('\u0003');

/**
 * Shows `read()`'s snapshot, again every `intervalMs`, until a quit key (or `signal`).
 * @example await watchStatus(() => readStatus(o, deps), ctx.io, ctx.signal)
 */
export async function watchStatus(
  read: () => Promise<StatusDocument>,
  io: Io,
  signal: AbortSignal,
  intervalMs = WATCH_INTERVAL_MS,
): Promise<void> {
  const stdin = io.stdin as NodeJS.ReadStream;
  let quit!: () => void;
  const quitting = new Promise<void>((resolve) => {
    quit = resolve;
  });
  const onData = (d: Buffer | string) => {
    if (isQuitKey(d.toString())) quit();
  };
  signal.addEventListener('abort', () => quit(), { once: true });
  if (stdin.isTTY) stdin.setRawMode(true);
  stdin.on('data', onData);
  stdin.resume();
  // a quit key leaves at once, even while a snapshot is being read (a database slow to answer)
  const readOrQuit = () => Promise.race([read(), quitting.then(() => null)]);
  let timer: NodeJS.Timeout | undefined;
  let view: ReturnType<ReturnType<typeof terminal>['liveReport']> | undefined;
  // fitted to the screen at each redraw (a resized terminal too): the conditions and the outbox stay on it
  const out = io.stdout as NodeJS.WriteStream;
  const blocks = (doc: StatusDocument) =>
    statusBlocks(doc, { columns: out.columns || DEFAULT_WIDTH, rows: out.rows || 24, watching: true });
  // a resized terminal is fitted at once, from the last snapshot: until the next one, the old fit
  // wraps (a narrower screen) and scrolls the headline away
  let last: StatusDocument | null = null;
  const onResize = () => {
    if (view && last) view.update(blocks(last));
  };
  out.on('resize', onResize);
  try {
    const first = await readOrQuit();
    if (first === null) return;
    last = first;
    view = terminal().liveReport(io.stdout as NodeJS.WriteStream, stdin, blocks(first));
    for (;;) {
      const tick = new Promise<'tick'>((resolve) => {
        timer = setTimeout(() => resolve('tick'), intervalMs);
      });
      if ((await Promise.race([quitting.then(() => 'quit' as const), tick])) === 'quit') break;
      const doc = await readOrQuit();
      if (doc === null) break;
      last = doc;
      view.update(blocks(doc));
    }
  } finally {
    clearTimeout(timer);
    out.off('resize', onResize);
    stdin.off('data', onData);
    if (stdin.isTTY) stdin.setRawMode(false);
    stdin.pause();
    view?.unmount();
  }
}
