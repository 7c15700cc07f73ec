/**
 * `reconcile report --run-id` alone when the folder the run recorded now holds a later night (the
 * documented cron reuses one `--out-dir` every night): the report of the old run must not be written
 * over the later night's report.html (issue 36 §14, review).
 */
import { readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { allArgv } from '../helpers/reconcile-all.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'rrundir' });
const CONSUMER = 'svc-hall';
const NIGHT1 = 'nightly-2026-12-01T01-00Z';
const NIGHT2 = 'nightly-2026-12-02T01-00Z';

let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let out: string;
let dir: string;

const q = async (sql: string, params: unknown[] = []) => (await dbs.admin.query(sql, params))[0] as any[];

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  dir = tmp;
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '40', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env },
  );
  expect(seed.code, seed.stderr).toBe(0);
  out = join(dir, 'reconcile');
  for (const night of [NIGHT1, NIGHT2]) {
    const r = await runCli(allArgv(CONSUMER, out, '--run-id', night), { env });
    expect([0, 1], r.stderr).toContain(r.code);
  }
});

test('--run-id alone of a night whose folder a later night rewrote: exit 2, one line, the later report untouched', async () => {
  const page = join(out, 'report.html');
  const before = readFileSync(page, 'utf8');
  expect(before).toContain(NIGHT2);
  const r = await runCli(['reconcile', 'report', '--run-id', NIGHT1], { env });
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toContain(NIGHT2);
  expect(readFileSync(page, 'utf8')).toBe(before);
  // the night the folder holds is still found by --run-id alone
  const now = await runCli(['--json', 'reconcile', 'report', '--run-id', NIGHT2], { env });
  expect(now.code, now.stderr).toBe(0);
});

test('--run-id alone of a run whose folder was moved away: exit 2, one line naming the recorded folder', async () => {
  renameSync(out, join(dir, 'moved'));
  try {
    const r = await runCli(['reconcile', 'report', '--run-id', NIGHT2], { env });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(out);
    // hostile run ids: one line, exit 2, nothing echoed raw
    for (const id of ['../../etc', "x' OR '1'='1", 'a\u001b[2Jb', 'x'.repeat(300)]) {
      const h = await runCli(['reconcile', 'report', '--run-id', id], { env });
      expect(h.code, `${JSON.stringify(id)}: ${h.stderr}`).toBe(2);
      expect(h.stderr.trim().split('\n')).toHaveLength(1);
      expect(h.stderr).not.toContain('\u001b');
    }
  } finally {
    renameSync(join(dir, 'moved'), out);
  }
});

test('the change against a night on which one pair failed: over the pairs done both nights (±0 for the same data), the failed one said left out', async () => {
  const sh = `\`${dbs.shName}\`.fcctl_reconcile_ledger`;
  const [p] = await q(
    `SELECT sch_id, form_uuid, in_sync FROM ${sh} WHERE run_id = ? ORDER BY sch_id, form_uuid LIMIT 1`,
    [NIGHT1],
  );
  expect(Number(p.in_sync)).toBeGreaterThan(0);
  // what the ledger records for a pair that failed that night (all/decide.ts ledgerEntryOf): no counts
  await q(
    `UPDATE ${sh} SET result = 'FAILED', in_sync = 0, missing_local = 0, stale_local = 0, hash_conflict = 0, differences = 0, error = 'FC unreachable' WHERE run_id = ? AND sch_id = ? AND form_uuid = ?`,
    [NIGHT1, p.sch_id, p.form_uuid],
  );
  const file = join(dir, 'n2.html');
  const r = await runCli(['--json', 'reconcile', 'report', '--out-dir', out, '--run-id', NIGHT2, '--out', file], {
    env,
  });
  expect(r.code, r.stderr).toBe(0);
  const html = readFileSync(file, 'utf8');
  const headline = html.slice(html.indexOf('id="headline"'), html.indexOf('</section>', html.indexOf('id="headline"')));
  expect(headline).toContain(`change since ${NIGHT1}`);
  expect.soft(headline).toContain('1 failed on one, new or gone left out');
  // nothing changed between the nights: every category's change is ±0, IN_SYNC not +N for the failed pair
  const inSync = headline.match(/IN_<wbr>SYNC<\/th><td>[^<]*<\/td><td>([^<]*)<\/td>/);
  expect.soft(inSync?.[1]).toBe('±0');
});
