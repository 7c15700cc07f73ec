import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { cleanEnv, type CliResult, FCCTL_BIN } from './cli.js';
import { waitFor } from './wait.js';

/** A `bin/fcctl … --follow` process that keeps running while the test works around it. */
export interface RunningService {
  readonly child: ChildProcess;
  /** the JSON lines printed so far on stdout */
  lines(): Array<Record<string, unknown>>;
  stderr(): string;
  /** waits for a JSON line that matches */
  waitForLine(
    what: string,
    match: (l: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** sends `signal` and resolves when the process has ended */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<CliResult>;
}

/** Starts `bin/fcctl` with `argv`; killed with SIGKILL after `timeoutMs` whatever happens. */
export function startService(
  argv: readonly string[],
  options: { env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): RunningService {
  const child = spawn(process.execPath, [FCCTL_BIN, ...argv], {
    env: (options.env ?? cleanEnv()) as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const killer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 180_000);
  const ended = new Promise<CliResult>((resolve) => {
    child.on('close', (code, sig) => {
      clearTimeout(killer);
      resolve({ code: code ?? (sig ? 128 : -1), stdout: out, stderr: err });
    });
  });
  const lines = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    child,
    lines,
    stderr: () => err,
    waitForLine: async (what, match, timeoutMs = 30_000) => {
      let found: Record<string, unknown> | undefined;
      await waitFor(what, async () => (found = lines().find(match)) !== undefined, timeoutMs, 50).catch((e: Error) => {
        throw new Error(`${e.message}; stdout: ${out.slice(-1500)}; stderr: ${err.slice(-1500)}`);
      });
      return found!;
    },
    stop: async (signal = 'SIGTERM', timeoutMs = 60_000) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const r = await ended;
      clearTimeout(timer);
      return r;
    },
  };
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** GET on the service's endpoint: status and body. */
export async function httpGet(port: number, path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { method });
  return { status: r.status, body: await r.text() };
}
