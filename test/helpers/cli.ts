import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/main.js';
import { testIo } from './io.js';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment a test run gets: only FCCTL_* values it names, never the developer's. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FCCTL_')) env[k] = v;
  return { ...env, ...extra };
}

/** Runs fcctl in this process with captured streams; `tty` switches the interactive view on. */
export async function runCli(
  argv: readonly string[],
  options: { env?: Record<string, string | undefined>; tty?: boolean; stdin?: string; signal?: AbortSignal } = {},
): Promise<CliResult> {
  const t = testIo({
    ...(options.tty !== undefined ? { tty: options.tty } : {}),
    ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
  });
  const code = await main(argv, {
    io: t.io,
    env: options.env ?? cleanEnv(),
    now: () => new Date(),
    signal: options.signal ?? new AbortController().signal,
  });
  return { code, stdout: t.stdout(), stderr: t.stderr() };
}

export const FCCTL_BIN = fileURLToPath(new URL('../../bin/fcctl', import.meta.url));

/** Runs the built `bin/fcctl` as a real process (exit codes, signals, stdin). */
export function spawnCli(
  argv: readonly string[],
  options: { env?: Record<string, string | undefined>; stdin?: string | Buffer; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FCCTL_BIN, ...argv], {
      env: (options.env ?? cleanEnv()) as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      resolve({
        code: code ?? (sig ? 128 : -1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

/** The JSON lines of an output, parsed. */
export function jsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
