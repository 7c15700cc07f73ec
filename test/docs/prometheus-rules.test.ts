import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shortenedRules } from '../helpers/prometheus.js';
import { promtool } from '../helpers/promtool.js';

// Issue 19 §5: docs/ ships alerting rules on fcctl's metrics; promtool checks them and runs their
// unit tests. promtool missing is a failure (test/helpers/promtool.ts), never a skip.
const RULES = 'docs/prometheus/fcctl-alerts.yml';
const TESTS = 'docs/prometheus/fcctl-alerts.test.yml';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('docs/prometheus/fcctl-alerts.yml', () => {
  it('promtool check rules', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect(r.stderr).toBe('');
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('promtool test rules: every alert fires and stays quiet on its small series', () => {
    const r = promtool(['test', 'rules', TESTS]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('SUCCESS');
    // each alert of the rules file has a test that fires it and one that does not
    const alerts = [...readFileSync(RULES, 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)].map((m) => m[1]!);
    const tests = readFileSync(TESTS, 'utf8');
    for (const a of alerts) {
      const blocks = tests.split(/\n\s+- eval_time: /).filter((b) => b.includes(`alertname: ${a}\n`));
      expect(
        blocks.some((b) => /exp_alerts: \[\]/.test(b)),
        `${a} never tested quiet`,
      ).toBe(true);
      expect(
        blocks.some((b) => /exp_labels:/.test(b)),
        `${a} never tested firing`,
      ).toBe(true);
    }
  });

  it('uses only metric names fcctl writes', () => {
    const code = sources('src')
      .map((p) => readFileSync(p, 'utf8'))
      .join('\n');
    // a histogram's series are its name with _bucket, _sum and _count
    const names = new Set(
      [...readFileSync(RULES, 'utf8').matchAll(/\b(fcctl_[a-z_]+)\b/g)].map((m) =>
        m[1]!.replace(/_(bucket|sum|count)$/, ''),
      ),
    );
    expect(names.size).toBeGreaterThan(5);
    for (const n of names) {
      expect(code, n).toContain(`'${n}'`);
    }
  });

  // The real-Prometheus test (test/service/prometheus.test.ts) runs a copy with its for: shortened
  // but its range windows not: one minute of slow confirms keeps the p99 of rate(…[5m]) over 0.5 s
  // for 5 minutes, which the shipped for: 10m never fires on; the copy must not either.
  it("the real-Prometheus test's shortened copy fires where the shipped rules do, not on a spike inside a window", () => {
    const dir = mkdtempSync(join(tmpdir(), 'fcctl-rules-'));
    try {
      writeFileSync(join(dir, 'rules.yml'), shortenedRules(readFileSync(RULES, 'utf8')));
      const bucket = (le: string, values: string) =>
        `      - series: 'fcctl_relay_claim_to_confirm_seconds_bucket{le="${le}",job="fcctl",instance="h1:9464"}'\n        values: '${values}'\n`;
      writeFileSync(
        join(dir, 'spike.test.yml'),
        [
          'rule_files: [rules.yml]',
          'evaluation_interval: 1m',
          'tests:',
          '  - interval: 1m',
          '    input_series:',
          bucket('0.25', '0+100x30') +
            bucket('0.5', '0+100x30') +
            bucket('1', '0+100x10 1110+100x20') +
            bucket('+Inf', '0+100x10 1110+100x20'),
          '    alert_rule_test:',
          ...['12m', '16m', '25m'].map(
            (t) => `      - eval_time: ${t}\n        alertname: FcctlRelayLatencyHigh\n        exp_alerts: []`,
          ),
          '',
        ].join('\n'),
      );
      const r = promtool(['test', 'rules', join(dir, 'spike.test.yml')]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
