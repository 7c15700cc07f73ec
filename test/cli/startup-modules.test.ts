import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test as plain } from 'vitest';
import { cleanEnv, FCCTL_BIN } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import { insertRegistry, PUBLISHER } from '../helpers/deliveries.js';
import { servicesTest } from '../helpers/services.js';
import { TmuxSession } from '../helpers/tmux.js';
import { waitFor } from '../helpers/wait.js';

// Issue 20: off a terminal, start-up loads neither ink nor React (most of its time); on a terminal
// a command that draws a view still loads them. What a real process loads is recorded by a module
// hook (bench/record-modules.mjs: every ES module resolved, every CommonJS module required).
const RECORDER = fileURLToPath(new URL('../../bench/record-modules.mjs', import.meta.url));
const INK_OR_REACT = /\/node_modules\/(ink|react)\//;
const test = servicesTest({ prefix: 'startup', init: 'fc' });
let seq = 0;

/** Runs bin/fcctl with stdout and stderr pipes; its exit code, stdout, and the modules it loaded. */
function spawnRecorded(dir: string, argv: readonly string[], env: Record<string, string | undefined>, stdin = '') {
  const file = join(dir, `modules-${++seq}.txt`);
  return new Promise<{ code: number | null; stdout: string; stderr: string; modules: string[] }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', RECORDER, FCCTL_BIN, ...argv], {
      env: { ...env, RECORD_MODULES_FILE: file } as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout, stderr, modules: readFileSync(file, 'utf8').split('\n').filter(Boolean) }),
    );
    child.stdin.end(stdin);
  });
}

/** A command in a real terminal (tmux) until it exits; its screen and the modules it loaded. */
async function ttyRecorded(dir: string, argv: string, env: Record<string, string | undefined>) {
  const file = join(dir, `modules-${++seq}.txt`);
  const session = new TmuxSession(
    `RECORD_MODULES_FILE='${file}' node --import '${RECORDER}' '${FCCTL_BIN}' ${argv}`,
    env,
  );
  try {
    await waitFor('the end of the run', async () => /\[exit \d+\]/.test(session.screen()), 60_000, 100);
    const screen = session.screen();
    return { screen, modules: existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [] };
  } finally {
    session.kill();
  }
}

describe('start-up off a terminal (no services)', () => {
  plain('fcctl --version and canon hash on stdin load neither ink nor React', async () => {
    const { tmpdir } = await import('node:os');
    const version = await spawnRecorded(tmpdir(), ['--version'], cleanEnv());
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    // the recorder works: the command tree's own modules are there
    expect(version.modules.some((m) => m.includes('/node_modules/commander/'))).toBe(true);
    expect(version.modules.filter((m) => INK_OR_REACT.test(m))).toEqual([]);
    const hash = await spawnRecorded(tmpdir(), ['canon', 'hash'], cleanEnv(), '{"b":1,"a":[true,null]}');
    expect(hash.code).toBe(0);
    expect(hash.stdout.trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(hash.modules.filter((m) => INK_OR_REACT.test(m))).toEqual([]);
  });

  // The database driver and the broker client are loaded only when a connection is opened, and
  // `--version` alone loads no command module (src/main.ts COMMANDS, src/lib/db/connect.ts).
  plain(
    '--version loads no command module and no driver; canon hash loads neither driver nor broker client',
    async () => {
      const { tmpdir } = await import('node:os');
      const version = await spawnRecorded(tmpdir(), ['--version'], cleanEnv());
      expect(version.code).toBe(0);
      expect(
        version.modules.filter((m) => /\/dist\/commands\/[a-z-]+\//.test(m) || m.includes('/node_modules/mysql2/')),
      ).toEqual([]);
      const hash = await spawnRecorded(tmpdir(), ['--json', 'canon', 'hash'], cleanEnv(), '{"a":1}');
      expect(hash.code).toBe(0);
      expect(hash.stdout.trim()).toMatch(/^[0-9a-f]{64}$/);
      expect(hash.modules.some((m) => m.includes('/dist/commands/canon/'))).toBe(true);
      expect(hash.modules.filter((m) => /\/node_modules\/(mysql2|amqplib)\//.test(m))).toEqual([]);
      // after a command, `--version` is still the program's (commander), with the command tree loaded
      const late = await spawnRecorded(tmpdir(), ['canon', 'hash', '--version'], cleanEnv(), '{"a":1}');
      expect(late.code).toBe(0);
      expect(late.stdout).toBe(version.stdout);
    },
  );

  plain('help and a mistyped command still see every command (the list, "Did you mean")', async () => {
    const { tmpdir } = await import('node:os');
    const help = await spawnRecorded(tmpdir(), ['--help'], cleanEnv());
    expect(help.code).toBe(0);
    for (const name of [
      'db',
      'deliveries',
      'apply-command',
      'doctor',
      'canon',
      'manifest',
      'reconcile',
      'retire-absent',
      'projection',
      'pause',
      'resume',
      'config',
    ]) {
      expect(help.stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
    }
    const typo = await spawnRecorded(tmpdir(), ['--config', '/nonexistent.json', 'reconcil', 'run'], cleanEnv());
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe("fcctl: unknown command 'reconcil' (did you mean reconcile?)\n");
  });
});

describe('start-up against an empty outbox', () => {
  let dbs: TestDatabases;
  let dir: string;
  test.beforeAll(async ({ dbs: services, tmp }) => {
    dbs = services;
    dir = tmp;
    await insertRegistry(dbs.admin, dbs.fcName);
  });
  const env = () =>
    dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });

  test('deliveries send --dry-run off a terminal loads neither ink nor React', async () => {
    const r = await spawnRecorded(dir, ['deliveries', 'send', '--dry-run'], env());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({
      type: 'summary',
      command: 'deliveries send',
      dryRun: true,
      claimed: 0,
    });
    expect(r.modules.some((m) => m.includes('/node_modules/mysql2/'))).toBe(true);
    expect(r.modules.filter((m) => INK_OR_REACT.test(m))).toEqual([]);
  });

  test('on a terminal the summary table is still drawn by ink; --version and --json there load none', async () => {
    const drawn = await ttyRecorded(dir, 'deliveries send --dry-run', env());
    expect(drawn.screen).toContain('[exit 0]');
    expect(drawn.screen).toMatch(/^dryRun\s+true$/m);
    expect(drawn.screen).not.toMatch(/\{"(ts|type)":/);
    expect(drawn.modules.some((m) => /\/node_modules\/ink\//.test(m))).toBe(true);
    expect(drawn.modules.some((m) => /\/node_modules\/react\//.test(m))).toBe(true);
    // nothing is drawn for --version, nor with --json: nothing is loaded for it either
    const version = await ttyRecorded(dir, '--version', env());
    expect(version.screen).toMatch(/^\d+\.\d+\.\d+/m);
    expect(version.modules.length).toBeGreaterThan(0);
    expect(version.modules.filter((m) => INK_OR_REACT.test(m))).toEqual([]);
    const json = await ttyRecorded(dir, '--json deliveries send --dry-run', env());
    expect(json.screen.replace(/\n/g, '')).toMatch(/"type":"summary".*"dryRun":true/);
    expect(json.modules.filter((m) => INK_OR_REACT.test(m))).toEqual([]);
  }, 120_000);
});
