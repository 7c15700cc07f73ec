import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, spawnCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

// A real MariaDB of its own that calls itself MySQL 5.7 (`--version` sets the text VERSION()
// answers): fcctl must refuse it before running anything, exit 3, one line naming what it supports.
const dir = mkdtempSync(join(tmpdir(), 'fcctl-oldver-'));
let server: ChildProcess | undefined;
let port = 0;

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const p = (s.address() as net.AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return p;
}

beforeAll(async () => {
  execFileSync('mariadb-install-db', [
    '--no-defaults',
    `--datadir=${dir}/data`,
    '--user=root',
    '--auth-root-authentication-method=socket',
  ]);
  port = await freePort();
  server = spawn(
    'mariadbd',
    [
      '--no-defaults',
      '--user=root',
      `--datadir=${dir}/data`,
      `--socket=${dir}/s.sock`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      '--version=5.7.44-log',
      // any user and password: what is refused must be the version, not the login
      '--skip-grant-tables',
      `--log-error=${dir}/error.log`,
    ],
    { stdio: 'ignore' },
  );
  await waitFor(
    'the old-version MariaDB to listen',
    () =>
      new Promise<boolean>((resolve) => {
        const c = net.connect(port, '127.0.0.1', () => {
          c.destroy();
          resolve(true);
        });
        c.on('error', () => resolve(false));
      }),
    60_000,
    200,
  );
});

afterAll(() => {
  server?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('a server older than fcctl supports (issue 35 §4)', () => {
  it('deliveries scan against "MySQL 5.7.44": exit 3, one line naming the versions supported', async () => {
    const r = await spawnCli(['deliveries', 'scan', '--json'], {
      env: cleanEnv({ FCCTL_FC_DATABASE_URL: `mysql://fcctl:x@127.0.0.1:${port}/mysql` }),
    });
    expect(r.code).toBe(3);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('MySQL 5.7.44 is older than fcctl supports (MySQL 8.0.21+, MariaDB 10.6+)');
    expect(r.stdout).not.toContain('"kind":"summary","states"');
  });
});

describe('the gate on every command that opens a database (review)', () => {
  it.each([
    ['doctor', ['doctor', '--json']],
    ['status', ['status', '--json']],
  ])('%s against "MySQL 5.7.44" names the versions supported', async (_, argv) => {
    const r = await spawnCli(argv, {
      env: cleanEnv({
        FCCTL_FC_DATABASE_URL: `mysql://fcctl:x@127.0.0.1:${port}/mysql`,
        FCCTL_SH_DATABASE_URL: `mysql://fcctl:x@127.0.0.1:${port}/mysql`,
      }),
    });
    expect(r.code).toBe(3);
    expect(r.stdout + r.stderr).toContain('MySQL 5.7.44 is older than fcctl supports');
  });
});
