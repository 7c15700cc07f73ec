import mysql from 'mysql2/promise';
import { testMysqlUrl } from './db.js';
import { execFile } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The fault suite's size: `npm test` runs it bounded (`ci`), `npm run test:faults` in full.
 * `pick(ci, full)` chooses a figure by it.
 */
export const FAULT_SIZE: 'ci' | 'full' = process.env['FCCTL_FAULT_SIZE'] === 'full' ? 'full' : 'ci';
export function pick<T>(ci: T, full: T): T {
  return FAULT_SIZE === 'full' ? full : ci;
}

/** What one fault test did and found; scripts/test-summary.mjs adds them up for the closing note. */
export interface FaultTotals {
  faultsInjected?: number;
  runs?: number;
  rowsChecked?: number;
  rowsLost?: number;
  wronglyAccepted?: number;
  duplicates?: number;
  badInputsTried?: number;
  /** refused with the documented code, one line, nothing changed */
  badInputsRefused?: number;
  /** not bad input after all (a parameter that matches nothing): the usual exit, nothing changed */
  badInputsAcceptedHarmlessly?: number;
  /** anything else: must be 0 */
  badInputsMishandled?: number;
}

/** Appends a test's totals to the file named by FCCTL_FAULT_TOTALS (no-op when unset). */
export function recordTotals(test: string, totals: FaultTotals): void {
  const file = process.env['FCCTL_FAULT_TOTALS'];
  if (!file) return;
  appendFileSync(file, `${JSON.stringify({ test, ...totals })}\n`);
}

const SERVICES = fileURLToPath(new URL('../../scripts/services.sh', import.meta.url));

/**
 * A real RabbitMQ memory alarm on the local node (`on`: a watermark of 1 byte; `off`: the default
 * 0.4): while it is on the broker blocks every publishing connection and reads nothing from it.
 */
export async function brokerMemoryAlarm(on: boolean): Promise<void> {
  const args = on ? ['absolute', '1'] : ['0.4'];
  await promisify(execFile)('bash', [SERVICES, 'mq-ctl', 'set_vm_memory_high_watermark', ...args], { timeout: 60_000 });
  // The memory monitor raises or clears the alarm on its next check: wait until it has.
  for (let i = 0; i < 60; i++) {
    const { stdout } = await promisify(execFile)('bash', [SERVICES, 'mq-ctl', 'eval', 'rabbit_alarm:get_alarms().'], {
      timeout: 60_000,
    });
    if (/memory/.test(stdout) === on) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the broker's memory alarm did not turn ${on ? 'on' : 'off'}`);
}

/** A real restart of the local MariaDB or RabbitMQ (all connections drop), down for `downSeconds`. */
export async function restartService(which: 'mariadb' | 'rabbitmq', downSeconds = 0): Promise<void> {
  await promisify(execFile)('bash', [SERVICES, 'restart', which, String(downSeconds)], { timeout: 180_000 });
}

/**
 * Freezes (`kill -STOP`) or thaws the local MariaDB of scripts/services.sh (FCCTL_SERVICES_DIR's,
 * else .services/): a server that takes connections and answers nothing. Fault suite only.
 */
export function freezeMariadb(on: boolean): void {
  const dir = process.env['FCCTL_SERVICES_DIR'] ?? fileURLToPath(new URL('../../.services', import.meta.url));
  const pid = Number(readFileSync(join(dir, 'mariadb', 'mysqld.pid'), 'utf8').trim());
  process.kill(pid, on ? 'SIGSTOP' : 'SIGCONT');
}

/**
 * A connection to one test database for arranging and checking around a fault: a database restart
 * drops it, so callers make a new one; its error after a restart is heard (unheard, it would crash
 * the test process).
 */
export async function replaceableConnection(database: string): Promise<mysql.Connection> {
  const conn = await mysql.createConnection({
    uri: `${testMysqlUrl().replace(/\/$/, '')}/${database}`,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  conn.on('error', () => undefined);
  return conn;
}
