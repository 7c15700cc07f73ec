import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readProm } from '../helpers/textfile.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WATCH = join(ROOT, 'scripts/demo-watch.mjs');
const dir = mkdtempSync(join(tmpdir(), 'fcctl-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The modification times of the demo's files in the default services directories (the repo's, and the runner's). */
function defaultDemoFiles(): Map<string, number> {
  const dirs = [join(ROOT, '.services'), process.env['FCCTL_SERVICES_DIR']].filter((d): d is string => Boolean(d));
  const out = new Map<string, number>();
  for (const d of dirs) {
    for (const f of ['demo', 'fcctl_send.prom', 'flow-center.out']) {
      const p = join(d, f);
      if (existsSync(p)) out.set(p, statSync(p).mtimeMs);
    }
  }
  return out;
}

function watch(env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WATCH, '--quiet'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('npm run demo (scripts/demo.sh, after the build and `services.sh up`)', () => {
  it('finishes in under 60 s, never silent for 5 s, every file under FCCTL_SERVICES_DIR', async () => {
    const before = defaultDemoFiles();
    // The same servers (ports), another directory: services.sh `env` prints the same URLs.
    const r = await watch({ ...process.env, FCCTL_SERVICES_DIR: dir });
    const last = r.out.trim().split('\n').at(-1)!;
    expect(last, r.out.slice(-3000)).toMatch(/^demo-watch: \{/);
    const m = JSON.parse(last.slice('demo-watch: '.length)) as {
      exitCode: number;
      seconds: number;
      maxGapSeconds: number;
      maxGapBefore: string;
    };
    expect(m.exitCode, r.out.slice(-3000)).toBe(0);
    expect(m.seconds).toBeLessThan(60);
    expect(m.maxGapSeconds, `silent before: ${m.maxGapBefore}`).toBeLessThan(5);
    expect(r.code).toBe(0);
    // its files: the send metrics, the stand-in's address, each pair's runs of reconcile run --all
    expect(readProm(join(dir, 'fcctl_send.prom'))).toMatch(/^fcctl_run_exit_code\{command="deliveries send"\} 1$/m);
    expect(existsSync(join(dir, 'flow-center.out'))).toBe(true);
    for (const run of ['before', 'after']) {
      expect(existsSync(join(dir, 'demo', run, 'summary.json')), run).toBe(true);
      expect(
        readdirSync(join(dir, 'demo', run))
          .filter((d) => /^\d+$/.test(d))
          .sort(),
        run,
      ).toEqual(['5', '6']);
    }
    expect(readProm(join(dir, 'demo', 'fcctl_reconcile.prom'))).toMatch(
      /^fcctl_run_exit_code\{[^}]*command="reconcile run"[^}]*\} 0$/m,
    );
    // and none in the default directories
    expect(defaultDemoFiles()).toEqual(before);
  }, 150_000);
});
