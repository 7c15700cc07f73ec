import { spawn } from 'node:child_process';
import { FCCTL_BIN } from './cli.js';

export interface TimedResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** ms from the start to the first byte on stdout (null: nothing printed) */
  readonly printedMs: number | null;
  /** ms from the start to the process's exit (its kill at `timeoutMs` included) */
  readonly exitedMs: number;
}

/**
 * Runs the built `bin/fcctl` and times it: when it printed, when the process ended. A process
 * still alive at `timeoutMs` is killed (code 137): a read command that printed but did not end.
 */
export function spawnTimed(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  timeoutMs = 40_000,
): Promise<TimedResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FCCTL_BIN, ...argv], {
      env: env as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let printedMs: number | null = null;
    child.stdout.on('data', (c: Buffer) => {
      printedMs ??= Date.now() - started;
      out.push(c);
    });
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    let exitedMs = 0;
    child.on('exit', () => {
      exitedMs = Date.now() - started;
    });
    // 'close' comes after the exit and the pipes' last bytes
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      resolve({
        code: code ?? (sig === 'SIGKILL' ? 137 : 128),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        printedMs,
        exitedMs,
      });
    });
  });
}
