/**
 * `fcctl status --watch`: the ink report redrawn from a new snapshot every 2 s until `q` or Ctrl-C
 * is typed (read raw from the terminal, so Ctrl-C is a key here, not an interrupt: exit 0).
 */
import type { Io } from '../cli/io.js';
import { terminal } from '../cli/terminal.js';
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
  const view = terminal().liveReport(io.stdout as NodeJS.WriteStream, stdin, statusBlocks(await read(), true));
  let timer: NodeJS.Timeout | undefined;
  try {
    for (;;) {
      const tick = new Promise<'tick'>((resolve) => {
        timer = setTimeout(() => resolve('tick'), intervalMs);
      });
      if ((await Promise.race([quitting.then(() => 'quit' as const), tick])) === 'quit') break;
      view.update(statusBlocks(await read(), true));
    }
  } finally {
    clearTimeout(timer);
    stdin.off('data', onData);
    if (stdin.isTTY) stdin.setRawMode(false);
    stdin.pause();
    view.unmount();
  }
}
