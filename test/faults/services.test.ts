import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { recordTotals } from '../helpers/faults.js';

/**
 * `scripts/services.sh` from a directory only its owner can enter (0700, like /root or a
 * `mktemp -d`): both servers run as the invoking user, so they reach their data there. A second
 * pair on its own ports (the FCCTL_SERVICES_DIR recipe), so the shared pair is never touched.
 */

const SERVICES = fileURLToPath(new URL('../../scripts/services.sh', import.meta.url));
const PORTS = {
  FCCTL_LOCAL_MYSQL_PORT: '43306',
  FCCTL_LOCAL_AMQP_PORT: '45672',
  FCCTL_LOCAL_AMQP_DIST_PORT: '45673',
  FCCTL_LOCAL_EPMD_PORT: '44369',
  FCCTL_LOCAL_AMQP_MANAGEMENT_PORT: '45674',
};
const dirs: string[] = [];

function services(dir: string, ...args: string[]) {
  const env = { ...process.env, ...PORTS, FCCTL_SERVICES_DIR: dir, FCCTL_TEST_MYSQL_URL: '', FCCTL_TEST_AMQP_URL: '' };
  return promisify(execFile)('bash', [SERVICES, ...args], { env, timeout: 240_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({
      code: err.code ?? -1,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
    }),
  );
}

function privateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fcctl-services-'));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  for (const dir of dirs) {
    await services(dir, 'down');
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
});

describe('scripts/services.sh from a 0700 directory', () => {
  it('starts both servers as the invoking user, usable on their ports; down stops them and the epmd it started', async () => {
    const dir = privateDir();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const up = await services(dir, 'up');
    expect(up.code, up.stderr).toBe(0);
    expect(up.stderr).not.toMatch(/crash|erl_crash|Traceback/i);
    expect((await services(dir, 'status')).code).toBe(0);

    // The broker runs as this user (not Debian's rabbitmq user, which cannot enter the directory).
    const pid = readFileSync(join(dir, 'rabbitmq', 'rabbit.pid'), 'utf8').trim();
    const { stdout: owner } = await promisify(execFile)('ps', ['-o', 'user=', '-p', pid]);
    expect(owner.trim()).toBe(userInfo().username);

    // What `env` prints works.
    const env = Object.fromEntries(
      [...(await services(dir, 'env')).stdout.matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]),
    );
    const db = await mysql.createConnection(env['FCCTL_FC_DATABASE_URL']!);
    expect((await db.query('SELECT 1 AS one'))[0]).toEqual([{ one: 1 }]);
    await db.end();
    const conn = await amqp.connect(env['FCCTL_AMQP_URL']!);
    const ch = await conn.createConfirmChannel();
    await ch.assertExchange('probe.x', 'topic', { durable: false });
    await conn.close();
    const mgmt = new URL(env['FCCTL_AMQP_MANAGEMENT_URL']!);
    const overview = await fetch(`${mgmt.origin}/api/overview`, {
      headers: { authorization: `Basic ${Buffer.from(`${mgmt.username}:${mgmt.password}`).toString('base64')}` },
    });
    expect(overview.status).toBe(200);

    // A second `up` starts nothing.
    const again = await services(dir, 'up');
    expect(again.stderr).toMatch(/already running/);

    const down = await services(dir, 'down');
    expect(down.code).toBe(0);
    expect(down.stderr).toMatch(/epmd stopped/);
    expect((await services(dir, 'status')).code).toBe(3);
    const epmdOpen = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(true));
      s.listen(Number(PORTS.FCCTL_LOCAL_EPMD_PORT), '127.0.0.1', () => s.close(() => resolve(false)));
    });
    expect(epmdOpen).toBe(false);
    recordTotals('services: a second pair from a 0700 directory', { runs: 1 });
  });

  it('a port already in use: one line naming the port and the setting, exit 3, no crash dump', async () => {
    const dir = privateDir();
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(Number(PORTS.FCCTL_LOCAL_AMQP_PORT), '127.0.0.1', resolve));
    try {
      const up = await services(dir, 'up');
      expect(up.code).toBe(3);
      const last = up.stderr.trim().split('\n').at(-1)!;
      expect(last).toBe(
        `services: port ${PORTS.FCCTL_LOCAL_AMQP_PORT} is already in use by another process, not this RabbitMQ node fcctl@localhost: stop it, or set FCCTL_LOCAL_AMQP_PORT to another port`,
      );
      expect(up.stderr).not.toMatch(/crash|erl_crash|\{|Traceback/i);
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
  });
});
