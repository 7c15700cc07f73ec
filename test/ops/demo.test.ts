import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readProm } from '../helpers/textfile.js';
import { TmuxSession } from '../helpers/tmux.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WATCH = join(ROOT, 'scripts/demo-watch.mjs');
const dir = mkdtempSync(join(tmpdir(), 'fcctl-demo-'));
const ttyDir = mkdtempSync(join(tmpdir(), 'fcctl-demo-tty-'));
let session: TmuxSession | undefined;
afterAll(() => {
  session?.kill();
  rmSync(dir, { recursive: true, force: true });
  rmSync(ttyDir, { recursive: true, force: true });
});

/** The demo's steps on a terminal, in order: `━━ n/16  <command> — <what and why>`. */
const STEPS = [
  'db init --side all --dev',
  'dev seed',
  'consumers bind',
  'doctor --probe',
  'deliveries scan',
  'deliveries send',
  'consumers verify',
  'deliveries scan',
  'metrics',
  'reconcile run --all',
  'projection repair-authoritative',
  'retire-absent prove, retire-absent',
  'apply-command resolve-unknown',
  'apply-command scan',
  'deliveries scan',
  'reconcile run --all',
];

/** Everything the terminal showed (its scrollback too); joined: wrapped lines as one. */
function transcript(s: TmuxSession, joined: boolean): string {
  return execFileSync(
    'tmux',
    ['-L', s.name, 'capture-pane', '-p', ...(joined ? ['-J'] : []), '-S', '-', '-t', s.name],
    { encoding: 'utf8' },
  );
}

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

  it("on a terminal: a header per step, the commands' own views (no JSON lines), failures called out, where to look next", async () => {
    // The same servers, a directory of its own; run after the test above (same file: never two demos at once).
    session = new TmuxSession(`cd '${ROOT}' && bash scripts/demo.sh`, { ...process.env, FCCTL_SERVICES_DIR: ttyDir });
    await waitFor('the end of the demo', async () => /^\[exit \d+\]$/m.test(transcript(session!, true)), 170_000, 500);
    const text = transcript(session, true);
    expect(text, text.slice(-3000)).toMatch(/^\[exit 0\]$/m);
    // what an operator sees on a terminal: tables and live views, never a raw JSON line, nor a
    // JSON object in a summary's cell (issue 36 §16: `failedByReason  NACK 2`, not `{"NACK":2}`)
    expect(text.split('\n').filter((l) => /^\s*\{"(ts|type)":/.test(l))).toEqual([]);
    expect(text.split('\n').filter((l) => /\{"|\{\}|\[\]/.test(l))).toEqual([]);
    // the demo opens with the report's path, the page a person opens first
    expect(text.trimStart().split('\n')[0]).toMatch(
      new RegExp(`^demo: the reconcile report it writes is ${ttyDir}/demo/after/report\\.html `),
    );
    expect(text).toMatch(/^deliveries send 1803\/1803 · /m);
    expect(text).toMatch(/^accepted\s+1499$/m);
    // every step's header, in order, with its one line of what and why
    const headers = [...text.matchAll(/^━━ (\d+)\/16 {2}(.+?) — \S.*$/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(headers).toEqual(STEPS.map((command, i) => `${i + 1} ${command}`));
    // the deliberate failures said to be expected
    expect(text).toMatch(/^▲ expected: deliveries send exit 1: /m);
    expect(text).toMatch(/^▲ expected: resolve-unknown exit 1: /m);
    // each step a screen at most (40 rows, as the terminal shows them, wrapped)
    const rows = transcript(session, false).split('\n');
    const starts = rows.flatMap((l, i) => (/^━━ \d+\/16 /.test(l) ? [i] : []));
    const end = rows.findIndex((l) => l.startsWith('demo: done in'));
    const lengths = starts.map((start, i) => (starts[i + 1] ?? end) - start);
    expect(Math.max(...lengths), JSON.stringify(lengths)).toBeLessThanOrEqual(44);
    // the ending: where to look next, each line true of this run
    const ending = text.slice(text.indexOf('Where to look next'));
    // it opens with the night's report page, which the last --all process wrote
    expect(ending.split('\n')[1]).toMatch(new RegExp(`^ +reconcile report +${ttyDir}/demo/after/report\\.html `));
    expect(existsSync(join(ttyDir, 'demo', 'after', 'report.html'))).toBe(true);
    expect(ending).toMatch(new RegExp(`reconcile output +${ttyDir}/demo/after/summary\\.json`));
    expect(ending).toMatch(/report\.csv/);
    expect(ending).toMatch(/node bin\/fcctl deliveries scan/);
    expect(ending).toMatch(/docs\/ARCHITECTURE\.md/);
    expect(existsSync(join(ROOT, 'docs/ARCHITECTURE.md'))).toBe(true);
  }, 180_000);
});
