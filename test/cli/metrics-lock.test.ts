import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/lib/cli/exit.js';
import { formatMetrics, gauge, updateRunMetrics } from '../../src/lib/metrics/textfile.js';
import { withRunMetrics } from '../../src/lib/metrics/run-metrics.js';
import { cleanEnv, spawnCli } from '../helpers/cli.js';
import { readProm } from '../helpers/textfile.js';

// Review: two processes writing one metrics file lost increments (read, merge and rename were not
// locked). The writer now holds `<file>.lock` (src/lib/files/lock.ts) from the read to the rename.
const dirs: string[] = [];
const dir = () => {
  const d = mkdtempSync(join(tmpdir(), 'fcctl-metrics-lock-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const runsTotal = (text: string, code: string) =>
  Number(
    new RegExp(`^fcctl_runs_total\\{command="deliveries send",exit_code="${code}"\\} (\\d+)$`, 'm').exec(text)?.[1],
  );
const lockOf = (pid: number, host = hostname()) =>
  `${JSON.stringify({ host, pid, startTicks: null, nonce: 'n0', startedAt: '2026-12-01T00:00:00Z', command: 'deliveries send' })}\n`;

describe('metrics file: read, merge and rename under a lock', () => {
  it('4 concurrent writers × 6 rounds: runs_total is exactly 24, and no lock or temp file is left', async () => {
    const d = dir();
    const file = join(d, 'send.prom');
    const writer = async () => {
      for (let round = 0; round < 6; round++) {
        // the body yields, so the four writers' reads and renames interleave
        await withRunMetrics('deliveries send', file, Date.now, async () => {
          await new Promise((r) => setTimeout(r, Math.random() * 3));
          return { exitCode: 0, rowsByResult: { accepted: 1 } };
        });
      }
    };
    await Promise.all([writer(), writer(), writer(), writer()]);
    const text = readProm(file);
    expect(runsTotal(text, '0')).toBe(24);
    expect(text).toContain('fcctl_rows_total{command="deliveries send",result="accepted"} 24\n');
    expect(readdirSync(d)).toEqual(['send.prom']);
  }, 60_000);

  it('4 fcctl processes × 6 runs into one file (exit 2, no app key): runs_total{exit_code="2"} is exactly 24', async () => {
    const d = dir();
    const file = join(d, 'send.prom');
    const env = {
      ...cleanEnv(),
      FCCTL_FC_DATABASE_URL: 'mysql://u:p@127.0.0.1:1/x',
      FCCTL_AMQP_URL: 'amqp://u:p@127.0.0.1:1/x',
    };
    const writer = async () => {
      for (let round = 0; round < 6; round++)
        expect((await spawnCli(['deliveries', 'send', '--metrics-file', file], { env })).code).toBe(ExitCode.USAGE);
    };
    await Promise.all([writer(), writer(), writer(), writer()]);
    expect(runsTotal(readProm(file), '2')).toBe(24);
    expect(readdirSync(d)).toEqual(['send.prom']);
  }, 120_000);

  it('takes over the lock of a dead process on this host', async () => {
    const d = dir();
    const file = join(d, 'send.prom');
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeFileSync(`${file}.lock`, lockOf(dead));
    await updateRunMetrics(file, 'deliveries send', () => [gauge('fcctl_x', 'x', 1)], 200);
    expect(readProm(file)).toContain('fcctl_x 1\n');
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('a lock held by a live process (or on another host) past the wait: exit 3, the file unchanged, the lock left', async () => {
    const d = dir();
    const file = join(d, 'send.prom');
    writeFileSync(file, formatMetrics([gauge('fcctl_x', 'x', 1)]));
    for (const lock of [lockOf(process.pid), lockOf(12345, 'another-host')]) {
      writeFileSync(`${file}.lock`, lock);
      const started = Date.now();
      const err = await updateRunMetrics(file, 'deliveries send', () => [gauge('fcctl_x', 'x', 2)], 100).catch(
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ exitCode: ExitCode.ENVIRONMENT });
      expect(String((err as Error).message)).toMatch(
        /^cannot write --metrics-file .*send\.prom: --metrics-file .* is held by /,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(100);
      expect(readFileSync(file, 'utf8')).toContain('fcctl_x 1\n');
      expect(readFileSync(`${file}.lock`, 'utf8')).toBe(lock);
    }
  });

  it('waits for a lock released within the wait', async () => {
    const d = dir();
    const file = join(d, 'send.prom');
    writeFileSync(`${file}.lock`, lockOf(process.pid));
    setTimeout(() => rmSync(`${file}.lock`), 50);
    await updateRunMetrics(file, 'deliveries send', () => [gauge('fcctl_x', 'x', 3)], 5000);
    expect(readProm(file)).toContain('fcctl_x 3\n');
  });
});
