import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 26 §3: the default run id of `reconcile run --all` is no longer the UTC date of the start
// (a run active in the last 30 minutes is joined, else one named after the SH clock's minute
// begins). The deployment files an operator reads must not promise the old behaviour: a night
// killed and started again the same day with the same run id, a second start that runs nothing.
const DOCS = [
  'docs/cron/fcctl.crontab',
  'docs/systemd/fcctl-reconcile.service',
  'docs/systemd/fcctl-reconcile.timer',
  'docs/operations.md',
];
const read = (f: string) => readFileSync(fileURLToPath(new URL(`../../${f}`, import.meta.url)), 'utf8');

describe('the deployment docs describe the default run id as it is', () => {
  for (const f of DOCS) {
    it(`${f}: no "UTC date" run id, no "same day (same run id)"`, () => {
      const text = read(f).replace(/\s+/g, ' ');
      expect(text).not.toMatch(/run id[^.]*UTC date|UTC date of the start|same day \(same run id\)/i);
    });
  }
  it('operations.md says how long a stopped night can be continued without --run-id', () => {
    expect(read('docs/operations.md').replace(/\s+/g, ' ')).toMatch(/30 minutes/);
  });
});
