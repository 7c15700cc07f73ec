/**
 * A real Prometheus server (Debian's `prometheus` package, the same as promtool's, installed by
 * `scripts/services.sh up` and kept from starting there), run by a test on loopback with its own
 * config, rules and TSDB in a temp folder: it scrapes the test's processes every second and
 * evaluates the rules every second; the test reads `/api/v1/alerts`. Missing, the test fails with
 * one clear line, as the promtool tests do.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { freePort } from './service.js';

/** The prometheus to run: `FCCTL_PROMETHEUS`, else the first on PATH, else /usr/bin/prometheus. */
export function prometheusPath(): string {
  const given = process.env['FCCTL_PROMETHEUS'];
  if (given) return given;
  const found = spawnSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  if (existsSync('/usr/bin/prometheus')) return '/usr/bin/prometheus';
  throw new Error(
    "prometheus is not installed: run `bash scripts/services.sh up` (installs Debian's prometheus package), or set FCCTL_PROMETHEUS",
  );
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** A Prometheus duration (`2m`, `1h30m`, `500ms`) in milliseconds. */
export function durationMs(text: string): number {
  const parts = [...text.matchAll(/(\d+)(ms|s|m|h|d|w)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new Error(`not a duration: ${text}`);
  return parts.reduce((ms, p) => ms + Number(p[1]) * UNIT_MS[p[2]!]!, 0);
}

interface RuleFile {
  groups: Array<{ name: string; rules: Array<{ alert?: string; expr: string; for?: string }> }>;
}

/** The longest range (`[5m]`, `[1h:1m]`) in an expression, in milliseconds (0: none). */
export function longestRangeMs(expr: string): number {
  return Math.max(0, ...[...expr.matchAll(/\[(\w+?)(?::\w*)?\]/g)].map((m) => durationMs(m[1]!)));
}

/**
 * The rules file's text with every `for:` divided by `divisor` (60: a minute becomes a second), so
 * a test sees in seconds what production waits minutes for. Parsed and written back as YAML, the
 * expressions untouched: what fires is what the shipped rules say, only sooner. A rule whose `for:`
 * is as long as its longest range or longer keeps it: the range windows are not shortened, and a
 * spike inside a window (one slow batch in `rate(…[5m])`) would fire the shortened copy where the
 * shipped rule, held for longer than the window, cannot.
 */
export function shortenedRules(source: string, divisor = 60): string {
  const doc = parse(source) as RuleFile;
  for (const group of doc.groups)
    for (const rule of group.rules) {
      if (
        rule.for === undefined ||
        (durationMs(rule.for) >= longestRangeMs(rule.expr) && longestRangeMs(rule.expr) > 0)
      )
        continue;
      rule.for = `${Math.max(1, Math.round(durationMs(rule.for) / divisor))}ms`;
    }
  return stringify(doc, { lineWidth: 0 });
}

/** One entry of `/api/v1/alerts`. */
export interface Alert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly state: 'pending' | 'firing';
  readonly activeAt: string;
  readonly value: string;
}

export interface Prometheus {
  readonly url: string;
  /** every pending and firing alert now */
  alerts(): Promise<Alert[]>;
  /** the firing alerts named `name` (every firing alert without a name) */
  firing(name?: string): Promise<Alert[]>;
  /** scrapes these targets from now on (the config rewritten, SIGHUP), once the reload took */
  setTargets(targets: Record<string, readonly string[]>): Promise<void>;
  /** evaluates these rules (a rules file's text) from now on (SIGHUP), once the reload took */
  setRules(rules: string): Promise<void>;
  /** the value of an instant query (an empty vector: []) */
  query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  log(): string;
  stop(): Promise<void>;
}

function config(targets: Record<string, readonly string[]>): string {
  return stringify({
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    rule_files: ['rules.yml'],
    scrape_configs: Object.entries(targets).map(([job, list]) => ({
      job_name: job,
      static_configs: [{ targets: [...list] }],
    })),
  });
}

/**
 * Starts Prometheus in `dir` with `rules` (a rules file's text) and the scrape `targets` (job name →
 * host:port list), and waits until it is ready. Stop it in the test's cleanup.
 * @example const prom = await startPrometheus(dir, shortenedRules(text), { fcctl: ['127.0.0.1:9464'] });
 */
export async function startPrometheus(
  dir: string,
  rules: string,
  targets: Record<string, readonly string[]>,
): Promise<Prometheus> {
  mkdirSync(join(dir, 'data'), { recursive: true });
  writeFileSync(join(dir, 'rules.yml'), rules);
  writeFileSync(join(dir, 'prometheus.yml'), config(targets));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    prometheusPath(),
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.once('error', (err) => (output += `spawn error: ${err.message}\n`));
  let exited = false;
  const closed = new Promise<void>((resolve) => child.once('close', () => ((exited = true), resolve())));
  const api = async (path: string): Promise<unknown> => {
    const res = await fetch(`${url}${path}`);
    const body = (await res.json()) as { status: string; data: unknown; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  };
  const stop = async () => {
    if (!exited) child.kill('SIGTERM');
    await closed;
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`prometheus exited before it was ready: ${output}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus was not ready on ${url} in 30 s; its log: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const alerts = async () => ((await api('/api/v1/alerts')) as { alerts: Alert[] }).alerts;
  return {
    url,
    alerts,
    firing: async (name) =>
      (await alerts()).filter((a) => a.state === 'firing' && (name === undefined || a.labels['alertname'] === name)),
    setTargets: async (next) => {
      writeFileSync(join(dir, 'prometheus.yml'), config(next));
      child.kill('SIGHUP');
      const want = Object.values(next).flat().sort().join(' ');
      const until = Date.now() + 15_000;
      for (;;) {
        const data = (await api('/api/v1/targets?state=active')) as {
          activeTargets: Array<{ labels: Record<string, string> }>;
        };
        const have = data.activeTargets.map((t) => t.labels['instance']).sort();
        if (have.join(' ') === want) return;
        if (Date.now() > until) throw new Error(`prometheus still scrapes ${have.join(', ')} after a reload`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    setRules: async (text) => {
      writeFileSync(join(dir, 'rules.yml'), text);
      child.kill('SIGHUP');
      const want = (parse(text) as RuleFile).groups.flatMap((g) => g.rules).length;
      const until = Date.now() + 15_000;
      for (;;) {
        const data = (await api('/api/v1/rules')) as { groups: Array<{ rules: unknown[] }> };
        if (data.groups.flatMap((g) => g.rules).length === want) return;
        if (Date.now() > until) throw new Error(`prometheus did not load the ${want} rules after a reload`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    query: async (expr) => ((await api(`/api/v1/query?query=${encodeURIComponent(expr)}`)) as { result: never }).result,
    log: () => output,
    stop,
  };
}
