/**
 * `reconcile report` as an on-call engineer reads it (issue 36 §13–14): the commands of a pair,
 * pasted through bash as printed — the dry run changes nothing, the write repairs the rows FC has
 * that the consumer never received (no replay of failed deliveries, which answered `items 0`); the
 * page at 390 px in Chromium (nothing wider than the screen, category names broken only after an
 * underscore, one distinct colour per category); `--run-id` alone finds the run's folder; the
 * change is against the last night of the same pairs, not an ad-hoc run of one pair in between.
 * Real MariaDB, the built `bin/fcctl` (`npm run build` first).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'vitest';
import { FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { allArgv } from '../helpers/reconcile-all.js';
import { servicesTest } from '../helpers/services.js';
import { openPage } from './browser.js';

const test = servicesTest({ prefix: 'rphone' });
const CONSUMER = 'svc-hall';
/** Run ids as long as a fleet's nightly ones: the change column's header names the previous night. */
const NIGHT1 = 'fleet-nightly-2026-12-01T01-00Z';
const NIGHT2 = 'fleet-nightly-2026-12-02T01-00Z';
const NIGHT3 = 'fleet-nightly-2026-12-03T01-00Z';

let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;
let out: string;
let bin: string;

const q = async (sql: string, params: unknown[] = []) => (await dbs.admin.query(sql, params))[0] as any[];
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;

/** In the page: every element whose box reaches past the screen's edges (tag, id, class, right edge). */
const WIDE_SCRIPT = `(() => {
  const width = document.documentElement.clientWidth;
  return [...document.querySelectorAll('body *')]
    .filter((e) => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > width + 0.5 || r.left < -0.5); })
    .map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right));
})()`;

/** In the page: each category cell's line break that is not right after an underscore (its text and where). */
const BROKEN_SCRIPT = `(() => {
  const bad = [];
  for (const th of document.querySelectorAll('.cats tbody th')) {
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    let prevTop = null, prevChar = '', at = 0;
    for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) {
      const text = n.textContent || '';
      for (let i = 0; i < text.length; i++, at++) {
        const range = document.createRange();
        range.setStart(n, i);
        range.setEnd(n, i + 1);
        const top = range.getBoundingClientRect().top;
        if (prevTop !== null && top > prevTop + 2 && prevChar !== '_') bad.push(th.textContent + ' before ' + at);
        prevTop = top;
        prevChar = text[i];
      }
    }
  }
  return bad;
})()`;

/** A printed line run by bash exactly as printed, `fcctl` the built one on PATH. */
function pasted(line: string) {
  const r = spawnSync('bash', ['-c', line], {
    env: { ...env, PATH: `${bin}:${process.env['PATH']}` },
    encoding: 'utf8',
    cwd: dir,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  dir = tmp;
  bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'fcctl'), `#!/bin/sh\nexec "${process.execPath}" "${FCCTL_BIN}" "$@"\n`);
  chmodSync(join(bin, 'fcctl'), 0o755);
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '200', '--schools', '3', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env },
  );
  expect(seed.code, seed.stderr).toBe(0);
  out = join(dir, 'night');
  const r = await runCli(allArgv(CONSUMER, out, '--run-id', NIGHT1), { env });
  expect([0, 1], r.stderr).toContain(r.code);
});

test('reconcile report --run-id alone: the folder the run recorded, no --out-dir needed', async () => {
  const file = join(dir, 'n1.html');
  const r = await runCli(['--json', 'reconcile', 'report', '--run-id', NIGHT1, '--out', file], { env });
  expect(r.code, r.stderr).toBe(0);
  expect(existsSync(file)).toBe(true);
  expect(summaryOf(r.stdout)).toMatchObject({ runId: NIGHT1, file });
  // neither: one line, exit 2; a run not in the task table: exit 2
  const none = await runCli(['reconcile', 'report'], { env });
  expect(none.code).toBe(2);
  expect(none.stderr.trim().split('\n')).toHaveLength(1);
  const unknown = await runCli(['reconcile', 'report', '--run-id', 'no-such-night'], { env });
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('no run "no-such-night" in the task table');
});

test('the pair’s commands pasted as printed: no replay; the repair’s dry run changes nothing, its write inserts the missing rows', async () => {
  const w = await openPage(pathToFileURL(join(out, 'report.html')).href);
  let dry: string[] = [];
  let write = '';
  let pair = { s: '', f: '', missing: 0 };
  try {
    await w.page.waitForSelector('html[data-ready="1"]');
    const tasks = await q(
      `SELECT CAST(sch_id AS CHAR) AS s, form_uuid AS f, result_json FROM \`${dbs.shName}\`.fcctl_reconcile_task WHERE run_id = '${NIGHT1}' AND state = 'DONE'`,
    );
    const withMissing = tasks
      .map((t) => ({ s: t.s, f: t.f, missing: Number(JSON.parse(t.result_json).counts.MISSING_LOCAL) }))
      .filter((t) => t.missing > 0);
    expect(withMissing.length).toBeGreaterThan(0);
    pair = withMissing[0]!;
    await w.page.fill('#f-school', pair.s);
    await w.page.fill('#f-q', pair.f).catch(() => undefined);
    const rows = await w.page.$$eval('#pairs-table tbody tr', (t) => t.length);
    for (let i = 1; i <= rows; i++) {
      await w.page.click(`#pairs-table tbody tr:nth-child(${i})`);
      if (((await w.page.textContent('#detail h2')) ?? '').includes(pair.f)) break;
    }
    expect(await w.page.textContent('#detail h2')).toContain(pair.f);
    const text = (await w.page.textContent('#detail')) ?? '';
    expect(text).not.toContain('deliveries replay');
    expect(text).not.toContain('Replay failed deliveries');
    dry = await w.page.$$eval('#detail pre.dry-run', (p) => p.map((x) => x.textContent ?? ''));
    write = (await w.page.$$eval('#detail pre.execute', (p) => p.map((x) => x.textContent ?? '')))[0] ?? '';
  } finally {
    await w.close();
  }
  const repair = dry.find((c) => c.startsWith('fcctl projection repair-authoritative '))!;
  expect(repair).toBeDefined();
  expect(write).toBe(`${repair} --execute`);
  const count = async () =>
    Number(
      (
        await q(`SELECT COUNT(*) AS n FROM \`${dbs.shName}\`.fc_answer_projection WHERE sch_id = ? AND form_uuid = ?`, [
          pair.s,
          pair.f,
        ])
      )[0].n,
    );
  const before = await count();
  const d = pasted(repair);
  expect([0, 1], d.stderr).toContain(d.code);
  expect(d.stdout + d.stderr).not.toMatch(/"execute":\s*true/);
  expect(await count()).toBe(before);
  const x = pasted(write);
  expect([0, 1], x.stderr).toContain(x.code);
  const s = summaryOf(x.stdout);
  expect(Number(s['items'])).toBeGreaterThan(0);
  expect(await count()).toBe(before + pair.missing);
}, 120_000);

test('an ad-hoc run of one pair between two nights: the second night’s change is against the first; at 390 px nothing overflows, names break only after _, colours distinct', async () => {
  const [p] = await q(
    `SELECT CAST(sch_id AS CHAR) AS s, form_uuid AS f FROM \`${dbs.shName}\`.fcctl_reconcile_task WHERE run_id = '${NIGHT1}' ORDER BY sch_id, form_uuid LIMIT 1`,
  );
  const adhoc = await runCli(
    allArgv(CONSUMER, join(dir, 'adhoc'), '--run-id', 'adhoc-1', '--school', p.s, '--form', p.f),
    { env },
  );
  expect([0, 1], adhoc.stderr).toContain(adhoc.code);
  const r = await runCli(allArgv(CONSUMER, out, '--run-id', NIGHT2), { env });
  expect([0, 1], r.stderr).toContain(r.code);
  // soft: each finding of the page is reported on its own
  expect.soft(readFileSync(join(out, 'report.html'), 'utf8')).toContain(`change since ${NIGHT1}`);
  // a third night: its change is against the second, the header naming a long run id
  const third = await runCli(allArgv(CONSUMER, out, '--run-id', NIGHT3), { env });
  expect([0, 1], third.stderr).toContain(third.code);
  const w = await openPage(pathToFileURL(join(out, 'report.html')).href, { width: 390 });
  try {
    const { page } = w;
    await page.waitForSelector('html[data-ready="1"]');
    expect(await page.textContent('#headline .cats thead')).toContain(`change since ${NIGHT2}`);
    await page.click('#pairs-table tbody tr:first-child');
    await page.waitForSelector('#detail .cats');
    // no element reaches past the screen's right edge (a table's own scroller counts as overflow too)
    const wide = await page.evaluate<string[]>(WIDE_SCRIPT);
    expect.soft(wide).toEqual([]);
    // each category cell: a new line starts only right after an underscore
    const broken = await page.evaluate<string[]>(BROKEN_SCRIPT);
    expect.soft(broken).toEqual([]);
    // the change column is on screen: its cells have their text within the viewport
    const change = await page.$$eval('#headline .cats tbody td:nth-child(3)', (t) =>
      t.map((x) => x.getBoundingClientRect().right),
    );
    for (const right of change) expect.soft(right).toBeLessThanOrEqual(390);
    // every category in the charts its own colour, none close to another (RGB distance)
    const colours = await page.$$eval('#fleet-chart + .legend rect, figure .legend rect', (r) =>
      r.map((x) => x.getAttribute('fill') ?? ''),
    );
    const legend = await page.$$eval('figure .legend span', (s) => s.map((x) => x.textContent ?? ''));
    const byCategory = new Map<string, string>();
    for (const [i, name] of legend.entries()) byCategory.set(name, colours[i]!);
    expect(byCategory.size).toBeGreaterThanOrEqual(2);
    const rgb = (h: string) => [1, 3, 5].map((i) => Number.parseInt(h.slice(i, i + 2), 16));
    const list = [...byCategory.entries()];
    for (let i = 0; i < list.length; i++)
      for (let j = i + 1; j < list.length; j++) {
        const [a, b] = [rgb(list[i]![1]), rgb(list[j]![1])];
        const d = Math.hypot(a[0]! - b[0]!, a[1]! - b[1]!, a[2]! - b[2]!);
        expect.soft(d, `${list[i]![0]} ${list[i]![1]} and ${list[j]![0]} ${list[j]![1]}`).toBeGreaterThan(60);
      }
    expect(w.errors).toEqual([]);
  } finally {
    await w.close();
  }
}, 180_000);
