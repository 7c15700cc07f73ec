import { type ChildProcess, spawn } from 'node:child_process';
import mysql from 'mysql2/promise';
import { type CliResult, cleanEnv, FCCTL_BIN } from './cli.js';
import { testMysqlUrl } from './db.js';
import { waitFor } from './wait.js';

/**
 * A real `LOCK TABLES … WRITE` on one table, on a connection of its own: every other session's
 * query on that table waits until {@link TableLock.unlock}. Tests use it to hold a real fcctl
 * process at a known point (its first query on the table) — to interrupt it there, or to change
 * something while it waits — without hooks in the code under test.
 */
export interface TableLock {
  /** resolves once another connection's query waits on the lock (the process is at that query) */
  waitForBlocked(timeoutMs?: number): Promise<void>;
  unlock(): Promise<void>;
}

export async function lockTable(database: string, table: string): Promise<TableLock> {
  const conn = await mysql.createConnection(testMysqlUrl());
  await conn.query(`LOCK TABLES \`${database}\`.\`${table}\` WRITE`);
  let unlocked = false;
  return {
    waitForBlocked: (timeoutMs = 60_000) =>
      waitFor(
        `a query waiting on ${database}.${table}`,
        async () => {
          const [rows] = await conn.query(
            "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID() AND STATE LIKE 'Waiting for table%'",
            [database],
          );
          return Number((rows as Array<{ n: number | string }>)[0]!.n) > 0;
        },
        timeoutMs,
        20,
      ),
    unlock: async () => {
      if (unlocked) return;
      unlocked = true;
      await conn.query('UNLOCK TABLES');
      await conn.end();
    },
  };
}

/** A real `bin/fcctl` process: its handle (to signal it) and its result once it exits. */
export interface RunningCli {
  readonly child: ChildProcess;
  readonly done: Promise<CliResult>;
}

/** Starts the built `bin/fcctl` (like `spawnCli`, but returns at once with the child). */
export function startCli(
  argv: readonly string[],
  options: { env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): RunningCli {
  const child = spawn(process.execPath, [FCCTL_BIN, ...argv], {
    env: (options.env ?? cleanEnv()) as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout!.on('data', (c: Buffer) => out.push(c));
  child.stderr!.on('data', (c: Buffer) => err.push(c));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      resolve({
        code: code ?? (sig ? 128 : -1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
  return { child, done };
}
