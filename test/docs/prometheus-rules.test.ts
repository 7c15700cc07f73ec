import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
});
