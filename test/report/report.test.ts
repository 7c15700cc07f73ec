import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'vitest';
import { FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { insertProjections, testUuid } from '../helpers/manifest.js';
import { servicesTest } from '../helpers/services.js';
import { openPage } from './browser.js';
import { allArgv } from '../helpers/reconcile-all.js';

// Issue 30 §1, §3: report.html of a real `reconcile run --all` over seeded drift, in Chromium.
const test = servicesTest({ prefix: 'report' });

const CONSUMER = 'svc-hall';
/** A projection pair whose form uuid is markup (36 characters: the column's width). */
const XSS_FORM = '</script><img src=x onerror=alert()>';
const XSS_SCHOOL = '900';
/** A failed pair's error that would fetch and run script if it were read as HTML. */
const XSS_ERROR =
  '</script><img src=http://127.0.0.1:9/x onerror=alert(document.domain)><!-- <script>alert(2)</script>';
const ARTIFACTS = join(process.cwd(), '.artifacts', 'report');

let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;
let out: string;

const sh = async (sql: string, params: unknown[] = []) => (await dbs.admin.query(sql, params))[0];
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  dir = tmp;
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '240', '--schools', '4', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env },
  );
  expect(seed.code, seed.stderr).toBe(0);
  expect(XSS_FORM).toHaveLength(36);
  await insertProjections(
    dbs.admin,
    dbs.shName,
    Array.from({ length: 3 }, (_, i) => ({
      answerUuid: testUuid('report', 'xss', i),
      schId: Number(XSS_SCHOOL),
      formUuid: XSS_FORM,
      createTime: '2026-10-01 08:00:00',
    })),
  );
  out = join(dir, 'night');
  const r = await runCli(
    ['--json', 'reconcile', 'run', '--all', '--consumer', CONSUMER, '--run-id', 'night-1', '--out-dir', out],
    { env },
  );
  expect([0, 1], r.stderr).toContain(r.code);
  expect(summaryOf(r.stdout)).toMatchObject({ reportFile: join(out, 'report.html') });
  mkdirSync(ARTIFACTS, { recursive: true });
});

test('reconcile run --all writes DIR/report.html at its end: one file, no outside fetch allowed', () => {
  const html = readFileSync(join(out, 'report.html'), 'utf8');
  const csp = (/<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1] ?? '').replaceAll(
    '&#39;',
    "'",
  );
  expect(csp).toMatch(/^default-src 'none'; script-src 'sha256-[^']+'; style-src 'sha256-[^']+'/);
  expect(csp).not.toContain('unsafe-inline');
  // nothing is loaded from anywhere: no src= or stylesheet link in the markup
  expect(html).not.toMatch(/<(script|img|link|iframe)[^>]*\s(src|href)=/i);
  expect(statSync(join(out, 'report.html')).mode & 0o777).toBe(0o600);
});

test('the page loads with no console error and no request; filter, sort and drill-down work', async () => {
  const w = await openPage(pathToFileURL(join(out, 'report.html')).href);
  try {
    const { page } = w;
    await page.waitForSelector('html[data-ready="1"]');
    const pairs = Number(
      (
        (await sh(
          `SELECT COUNT(*) AS n FROM \`${dbs.shName}\`.fcctl_reconcile_task WHERE run_id = 'night-1'`,
        )) as Array<{ n: number }>
      )[0]!.n,
    );
    expect(await page.textContent('#pairs-count')).toContain(`${pairs} of ${pairs} pairs`);
    // sorted by differences, most first (failed pairs above)
    const diffs = await page.$$eval('#pairs-table tbody tr td:nth-child(4)', (tds) =>
      tds.map((t) => Number(t.textContent!.replace(/,/g, ''))),
    );
    expect(diffs).toEqual([...diffs].sort((a, b) => b - a));
    expect(diffs[0]).toBeGreaterThan(0);
    // filter by school
    await page.fill('#f-school', XSS_SCHOOL);
    expect(await page.$$eval('#pairs-table tbody tr td:first-child', (t) => t.map((x) => x.textContent))).toEqual([
      XSS_SCHOOL,
    ]);
    await page.fill('#f-school', '');
    // filter by category: every row shown has that category
    await page.selectOption('#f-cat', { label: 'ABSENT_AT_FC' });
    const cats = await page.$$eval('#pairs-table tbody tr td:nth-child(5)', (t) => t.map((x) => x.textContent ?? ''));
    expect(cats.length).toBeGreaterThan(0);
    for (const c of cats) expect(c).toContain('ABSENT_AT_FC');
    await page.selectOption('#f-cat', '');
    // sort by school, ascending
    await page.click('button[data-sort="s"]');
    const schools = await page.$$eval('#pairs-table tbody tr td:first-child', (t) =>
      t.map((x) => Number(x.textContent)),
    );
    expect(schools).toEqual([...schools].sort((a, b) => a - b));
    // search by form
    await page.fill('#f-q', 'onerror');
    expect(await page.$$eval('#pairs-table tbody tr td:nth-child(2)', (t) => t.map((x) => x.textContent))).toEqual([
      XSS_FORM,
    ]);
    await page.fill('#f-q', '');
    // drill-down into the pair with the most differences
    await page.click('button[data-sort="d"]');
    await page.click('#pairs-table tbody tr:first-child');
    await page.waitForSelector('#detail:not([hidden]) table.samples');
    const hash = await page.$eval('table.samples tbody tr td:nth-child(3) span', (s) => ({
      text: s.textContent,
      title: s.getAttribute('title'),
    }));
    expect(hash.title!.length).toBeGreaterThan(12);
    expect(hash.text).toBe(`${hash.title!.slice(0, 12)}…`);
    const links = await page.$$eval('#detail .files a', (a) => a.map((x) => x.getAttribute('href')));
    expect(links, links.join(' ')).toContainEqual(expect.stringMatching(/^\d+\/[0-9a-f-]{36}\/report\.csv$/));
    expect(await page.$$eval('#detail pre.dry-run', (p) => p.length)).toBeGreaterThan(0);
    await page.locator('#headline').screenshot({ path: join(ARTIFACTS, 'headline.png') });
    await page.locator('#detail').screenshot({ path: join(ARTIFACTS, 'drilldown.png') });
    console.log(`report screenshots: ${ARTIFACTS}/headline.png, drilldown.png`);
    expect(w.errors).toEqual([]);
    expect(w.outside).toEqual([]);
  } finally {
    await w.close();
  }
}, 120_000);

/** Every pair's commands, as the page shows them, by pair. */
async function commandsShown(file: string): Promise<Array<{ pair: string; dry: string[] }>> {
  const w = await openPage(pathToFileURL(file).href);
  try {
    await w.page.waitForSelector('html[data-ready="1"]');
    const rows = await w.page.$$eval('#pairs-table tbody tr', (t) => t.length);
    const found: Array<{ pair: string; dry: string[] }> = [];
    for (let i = 1; i <= rows; i++) {
      await w.page.click(`#pairs-table tbody tr:nth-child(${i})`);
      const dry = await w.page.$$eval('#detail pre.dry-run', (p) => p.map((x) => x.textContent ?? ''));
      if (dry.length > 0) found.push({ pair: (await w.page.textContent('#detail h2')) ?? '', dry });
    }
    return found;
  } finally {
    await w.close();
  }
}

test('the commands shown for a pair run as printed (dry run) with the built bin/fcctl', async () => {
  const shown = await commandsShown(join(out, 'report.html'));
  const all = shown.flatMap((s) => s.dry);
  expect(all.some((c) => c.startsWith('fcctl projection repair-authoritative '))).toBe(true);
  expect(all.some((c) => c.startsWith('fcctl retire-absent prove '))).toBe(true);
  // rows missing locally are in the repair plan: no replay of failed deliveries is shown for them (issue 36 §14)
  expect(all.some((c) => c.includes('deliveries replay'))).toBe(false);
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'fcctl'), `#!/bin/sh\nexec "${process.execPath}" "${FCCTL_BIN}" "$@"\n`);
  chmodSync(join(bin, 'fcctl'), 0o755);
  const ran: string[] = [];
  // the pair of markup too: its paths and form are quoted for the shell
  for (const s of shown.filter((x, i) => i < 3 || x.pair.includes('onerror')))
    for (const c of s.dry) {
      const r = spawnSync('bash', ['-c', c], {
        env: { ...env, PATH: `${bin}:${process.env['PATH']}` },
        encoding: 'utf8',
      });
      ran.push(`${r.status} ${c}`);
      if (s.pair.includes('onerror')) {
        // quoted for the shell, the markup reached fcctl whole: refused there as no UUID (exit 2)
        expect(r.stderr).toContain(
          `${out}/${XSS_SCHOOL}/${XSS_FORM}/retire-candidates.jsonl line 1: formUuid must be a UUID`,
        );
        expect(r.status).toBe(2);
        break;
      }
      expect(r.status, `${c}\n${r.stderr}`).toBe(0);
      expect(r.stdout + r.stderr).not.toMatch(/"execute":\s*true/);
    }
  expect(ran.length).toBeGreaterThanOrEqual(3);
}, 240_000);

test('planted markup (a form uuid, a failed pair error) stays text: no script runs, no request is made', async () => {
  await sh(
    `UPDATE \`${dbs.shName}\`.fcctl_reconcile_task SET state = 'FAILED', result_json = ? WHERE run_id = 'night-1' ORDER BY id LIMIT 1`,
    [JSON.stringify({ exitCode: 3, error: XSS_ERROR, seconds: 1 })],
  );
  const file = join(dir, 'xss.html');
  const r = await runCli(['--json', 'reconcile', 'report', '--out-dir', out, '--out', file], { env });
  expect(r.code, r.stderr).toBe(0);
  const html = readFileSync(file, 'utf8');
  expect(html.match(/<\/script>/gi)).toHaveLength(2); // the data block's and the script's own end
  expect(html).not.toContain('<!--');
  for (const js of [true, false]) {
    const w = await openPage(pathToFileURL(file).href, { javaScript: js });
    try {
      const { page } = w;
      if (js) await page.waitForSelector('html[data-ready="1"]');
      expect(await page.textContent('#failed pre.err')).toBe(XSS_ERROR);
      expect(await page.$$('img')).toHaveLength(0);
      if (js) {
        await page.fill('#f-school', XSS_SCHOOL);
        await page.click('#pairs-table tbody tr:first-child');
        expect(await page.textContent('#detail h2 code')).toBe(XSS_FORM);
      }
      await page.waitForTimeout(300);
      expect(w.dialogs).toEqual([]);
      expect(w.outside).toEqual([]);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }
}, 120_000);

test('with JavaScript off the headline and the failed pairs show', async () => {
  const w = await openPage(pathToFileURL(join(dir, 'xss.html')).href, { javaScript: false, width: 390 });
  try {
    expect(await w.page.isVisible('#headline .tiles')).toBe(true);
    expect(await w.page.textContent('#headline')).toMatch(/pairs in the run/);
    // the process that ran the pairs, from the task results (the claim owner is cleared at the finish)
    expect(await w.page.textContent('#headline')).toMatch(
      /processes\s*1 took part: [^:\s]+:\d+:[0-9a-f]+; none holding pairs now/,
    );
    expect(await w.page.textContent('#failed h2')).toBe('Failed pairs (1)');
    expect(await w.page.isVisible('#failed li')).toBe(true);
    expect(await w.page.$('#pairs-table')).toBeNull();
    await w.page.screenshot({ path: join(ARTIFACTS, 'no-js-phone.png'), fullPage: true });
  } finally {
    await w.close();
  }
}, 60_000);

test('a run still in progress: the report says so (pairs pending, processes holding pairs)', async () => {
  await sh(
    `INSERT INTO \`${dbs.shName}\`.fcctl_reconcile_task (run_id, sch_id, form_uuid, state, claim_owner, claim_expires_at, host, create_time) VALUES
     ('open-1', 1, ?, 'PENDING', NULL, NULL, NULL, UTC_TIMESTAMP()),
     ('open-1', 2, ?, 'CLAIMED', 'host-a:42:abc:1', UTC_TIMESTAMP() + INTERVAL 1 HOUR, 'host-a', UTC_TIMESTAMP())`,
    [testUuid('open', 1), testUuid('open', 2)],
  );
  const file = join(dir, 'open.html');
  const r = await runCli(['--json', 'reconcile', 'report', '--out-dir', out, '--run-id', 'open-1', '--out', file], {
    env,
  });
  expect(r.code, r.stderr).toBe(0);
  expect(summaryOf(r.stdout)).toMatchObject({ runId: 'open-1', finished: false, pairs: 2 });
  const html = readFileSync(file, 'utf8');
  expect(html).toMatch(
    /still in progress: 1 pairs pending, 1 claimed, 1 processes holding pairs \(host-a:42:abc on host-a: 1\)/,
  );
});

test('--all: only the process that sees no pair pending or held writes report.html', async () => {
  const d = join(dir, 'partial');
  // a pair of the run no process of this test will take: registered, still pending
  await sh(
    `INSERT INTO \`${dbs.shName}\`.fcctl_reconcile_task (run_id, sch_id, form_uuid, state, create_time) VALUES ('partial', 77, ?, 'PENDING', UTC_TIMESTAMP())`,
    [testUuid('partial', 77)],
  );
  const first = await runCli(allArgv(CONSUMER, d, '--run-id', 'partial', '--school', XSS_SCHOOL), { env });
  expect(first.code, first.stderr).toBeLessThanOrEqual(1);
  expect(existsSync(join(d, 'report.html'))).toBe(false);
  expect(summaryOf(first.stdout)['reportFile']).toBeUndefined();
  const last = await runCli(allArgv(CONSUMER, d, '--run-id', 'partial', '--school', '77', '--allow-empty'), { env });
  expect(last.code, last.stderr).toBeLessThanOrEqual(1);
  expect(summaryOf(last.stdout)).toMatchObject({ reportFile: join(d, 'report.html') });
  expect(readFileSync(join(d, 'report.html'), 'utf8')).toContain('<code>partial</code>');
});

test('bad input: one line, exit 2 or 3, nothing written', async () => {
  const cases: Array<{ args: string[]; code: number; err: RegExp; file?: string }> = [
    {
      args: ['--run-id', 'no-such-run', '--out', join(dir, 'x1.html')],
      code: 2,
      err: /no run "no-such-run"/,
      file: join(dir, 'x1.html'),
    },
    {
      args: ['--out', join(dir, 'missing', 'r.html')],
      code: 2,
      err: /its folder .* does not exist/,
      file: join(dir, 'missing'),
    },
    // a directory where the file should go: it cannot be written
    { args: ['--out', join(dir, 'a-dir')], code: 3, err: /cannot write/ },
  ];
  mkdirSync(join(dir, 'a-dir'));
  for (const c of cases) {
    const r = await runCli(['reconcile', 'report', '--out-dir', out, ...c.args], { env });
    expect(r.code, r.stderr).toBe(c.code);
    expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
    expect(r.stderr).toMatch(c.err);
    if (c.file) expect(existsSync(c.file)).toBe(false);
  }
  // --out onto the run's own files: its summary.json, a pair's report.csv — refused, left as they were
  const school = readdirSync(out).find((n) => /^\d+$/.test(n) && n !== XSS_SCHOOL)!;
  const pairCsv = join(out, school, readdirSync(join(out, school))[0]!, 'report.csv');
  for (const [file, why] of [
    [join(out, 'summary.json'), /it is the run's summary\.json/],
    [pairCsv, /inside a pair's folder/],
  ] as const) {
    const before = readFileSync(file, 'utf8');
    const r = await runCli(['reconcile', 'report', '--out-dir', out, '--out', file], { env });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(why);
    expect(readFileSync(file, 'utf8')).toBe(before);
  }
  // a folder with no run of --all in it, and no --run-id
  const empty = join(dir, 'empty');
  mkdirSync(empty);
  const r = await runCli(['reconcile', 'report', '--out-dir', empty], { env });
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/holds no summary.json of reconcile run --all/);
  expect(existsSync(join(empty, 'report.html'))).toBe(false);
});

test("--out onto the run's files through a symlink (the run folder, a folder inside it, or the file itself linked): exit 2, nothing changed", async () => {
  const school = readdirSync(out).find((n) => /^\d+$/.test(n) && n !== XSS_SCHOOL)!;
  const pair = readdirSync(join(out, school))[0]!;
  const pairCsv = join(out, school, pair, 'report.csv');
  const links = join(dir, 'links');
  mkdirSync(links);
  symlinkSync(out, join(links, 'run'));
  symlinkSync(join(out, school), join(links, 'school'));
  symlinkSync(join(out, 'summary.json'), join(links, 'summary-link.json'));
  const cases: Array<{ outDir: string; file: string; protects: string; why: RegExp }> = [
    // --out-dir a symlink to the run, --out the pair's CSV by its real path
    { outDir: join(links, 'run'), file: pairCsv, protects: pairCsv, why: /inside a pair's folder/ },
    // --out through a link to the run folder
    {
      outDir: out,
      file: join(links, 'run', 'summary.json'),
      protects: join(out, 'summary.json'),
      why: /summary\.json/,
    },
    { outDir: out, file: join(links, 'school', pair, 'report.csv'), protects: pairCsv, why: /inside a pair's folder/ },
    // --out a symlink to the summary
    {
      outDir: out,
      file: join(links, 'summary-link.json'),
      protects: join(out, 'summary.json'),
      why: /summary\.json/,
    },
  ];
  for (const c of cases) {
    const before = readFileSync(c.protects, 'utf8');
    const r = await runCli(['reconcile', 'report', '--out-dir', c.outDir, '--out', c.file], { env });
    expect(r.code, `${c.outDir} ${c.file}: ${r.stderr}`).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(c.why);
    expect(readFileSync(c.protects, 'utf8')).toBe(before);
    expect(lstatSync(join(links, 'summary-link.json')).isSymbolicLink()).toBe(true);
  }
});

test("--out onto the run's files through a bind mount of the run folder (another route, no symlink): exit 2, nothing changed", async () => {
  const school = readdirSync(out).find((n) => /^\d+$/.test(n) && n !== XSS_SCHOOL)!;
  const pair = readdirSync(join(out, school))[0]!;
  const mounted = join(dir, 'mounted');
  mkdirSync(mounted);
  // a mount namespace of its own (unprivileged, a user namespace): the run folder seen at a second path
  const cases = [
    { file: join(mounted, 'summary.json'), protects: join(out, 'summary.json'), why: /summary\.json/ },
    {
      file: join(mounted, school, pair, 'report.csv'),
      protects: join(out, school, pair, 'report.csv'),
      why: /pair's folder/,
    },
  ];
  for (const c of cases) {
    const before = readFileSync(c.protects, 'utf8');
    const r = spawnSync(
      'unshare',
      [
        '-rm',
        'sh',
        '-c',
        'mount --bind "$1" "$2" && shift 2 && exec "$@"',
        'sh',
        out,
        mounted,
        process.execPath,
        FCCTL_BIN,
        'reconcile',
        'report',
        '--out-dir',
        out,
        '--out',
        c.file,
      ],
      { env: env as NodeJS.ProcessEnv, encoding: 'utf8' },
    );
    expect(r.status, `${c.file}: ${r.stderr}`).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(c.why);
    expect(readFileSync(c.protects, 'utf8')).toBe(before);
  }
});

test("--out onto a run's files with --run-id and another --out-dir (the pair's folder itself, or a folder outside the run): exit 2, nothing changed", async () => {
  const school = readdirSync(out).find((n) => /^\d+$/.test(n) && n !== XSS_SCHOOL)!;
  const pair = readdirSync(join(out, school))[0]!;
  const pairCsv = join(out, school, pair, 'report.csv');
  const elsewhere = join(dir, 'elsewhere');
  mkdirSync(elsewhere, { recursive: true });
  const cases = [
    { outDir: join(out, school, pair), file: pairCsv, protects: pairCsv, why: /pair's folder/ },
    { outDir: elsewhere, file: pairCsv, protects: pairCsv, why: /pair's folder/ },
    { outDir: elsewhere, file: join(out, 'summary.json'), protects: join(out, 'summary.json'), why: /summary\.json/ },
  ];
  for (const c of cases) {
    const before = readFileSync(c.protects, 'utf8');
    const r = await runCli(['reconcile', 'report', '--out-dir', c.outDir, '--run-id', 'night-1', '--out', c.file], {
      env,
    });
    expect(r.code, `${c.outDir} ${c.file}: ${r.stderr}`).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(c.why);
    expect(readFileSync(c.protects, 'utf8')).toBe(before);
  }
});

test('a second night: the headline shows the change since the first, the trend charts both nights (fleet and pair)', async () => {
  const r = await runCli(
    ['--json', 'reconcile', 'run', '--all', '--consumer', CONSUMER, '--run-id', 'night-2', '--out-dir', out],
    { env },
  );
  expect([0, 1], r.stderr).toContain(r.code);
  const w = await openPage(pathToFileURL(join(out, 'report.html')).href, { width: 390 });
  try {
    const { page } = w;
    await page.waitForSelector('html[data-ready="1"]');
    // the previous night is the ledger's newest before this one (this database's other runs are nights too)
    expect(await page.textContent('#headline .cats thead')).toMatch(/change since (night-1|partial)/);
    expect(
      await page.$$eval('#headline .cats tbody td:nth-child(3)', (t) => t.map((x) => x.textContent)),
    ).toContainEqual(expect.stringMatching(/^(±0|[+−][\d,]+)$/));
    expect(await page.$$eval('#fleet-chart circle title', (t) => t.map((x) => x.textContent!.split(':')[0]))).toEqual(
      expect.arrayContaining(['night-1', 'night-2']),
    );
    await page.click('#pairs-table tbody tr:first-child');
    expect(await page.$$('#pair-chart polyline')).not.toHaveLength(0);
    // readable at phone width: nothing wider than the screen but the tables' own scrollers
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.screenshot({ path: join(ARTIFACTS, 'phone.png'), fullPage: false });
    expect(w.errors).toEqual([]);
    expect(w.outside).toEqual([]);
  } finally {
    await w.close();
  }
}, 120_000);

test('the pairs table by keyboard: Tab reaches a row, Enter opens its drill-down, Close gives the row its focus back', async () => {
  const w = await openPage(pathToFileURL(join(out, 'report.html')).href);
  try {
    const { page } = w;
    await page.waitForSelector('html[data-ready="1"]');
    await page.focus('button[data-sort="t"]'); // the last control before the table's rows
    await page.keyboard.press('Tab');
    const row = await page.evaluate<string | null>(
      "document.activeElement.closest('#pairs-table tbody tr')?.getAttribute('data-i') ?? null",
    );
    expect(row).toMatch(/^\d+$/);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#detail:not([hidden])');
    expect(await page.evaluate<boolean>("document.activeElement === document.querySelector('#detail h2')")).toBe(true);
    await page.focus('#detail-close');
    await page.keyboard.press('Space');
    expect(await page.isHidden('#detail')).toBe(true);
    expect(await page.evaluate<string | null>("document.activeElement.getAttribute('data-i')")).toBe(row);
    expect(w.errors).toEqual([]);
  } finally {
    await w.close();
  }
}, 60_000);

test("a form uuid with a .. segment (an SH-only pair): the pair fails, nothing is written outside the run's folder", async () => {
  const outside = '../../escaped-by-form';
  await insertProjections(dbs.admin, dbs.shName, [
    { answerUuid: testUuid('report', 'escape', 1), schId: 905, formUuid: outside, createTime: '2026-10-01 08:00:00' },
  ]);
  const d = join(dir, 'esc');
  const r = await runCli(allArgv(CONSUMER, d, '--run-id', 'esc-1', '--school', '905', '--allow-empty'), { env });
  expect(r.code, r.stderr).toBe(4); // a safety check refused the pair, as a folder of another run's parameters is
  expect(existsSync(join(d, '905', outside))).toBe(false); // = DIR/../escaped-by-form
  expect(existsSync(join(dir, 'escaped-by-form'))).toBe(false);
  expect(summaryOf(r.stdout)).toMatchObject({ byResult: { failed: 1 } });
  expect(readFileSync(join(d, 'report.html'), 'utf8')).toMatch(/cannot name the pair&#39;s folder/);
});

test('a run that found no pair: report.html of 0 pairs (the run DIR/summary.json names is known); another id stays exit 2', async () => {
  const d = join(dir, 'zero');
  const r = await runCli(allArgv(CONSUMER, d, '--run-id', 'zero-1', '--school', '998'), { env });
  expect(r.code, r.stderr).toBe(1); // no pair found: a warning
  expect(r.stderr).not.toMatch(/report\.html not written/);
  expect(summaryOf(r.stdout)).toMatchObject({ pairsFound: 0, reportFile: join(d, 'report.html') });
  expect(readFileSync(join(d, 'report.html'), 'utf8')).toContain('<b>0</b><span>pairs in the run (0 done)');
  const other = await runCli(['reconcile', 'report', '--out-dir', d, '--run-id', 'zero-2'], { env });
  expect(other.code).toBe(2);
  expect(other.stderr).toMatch(/no run "zero-2"/);
});
