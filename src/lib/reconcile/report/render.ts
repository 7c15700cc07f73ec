/**
 * The report page, pure: `renderReport(data)` → one self-contained HTML file. The headline, the
 * in-progress notice and the failed pairs are HTML written here (they show with JavaScript off);
 * the pairs table, the drill-down and the trend charts are drawn by the inline script (./client.ts)
 * from the data inlined as JSON. Every value from the databases or the run's files is escaped here
 * or set as text by the script (never parsed as HTML). The Content-Security-Policy allows nothing
 * from outside (`default-src 'none'`) and only this page's own script and style, by their hashes.
 */
import { createHash } from 'node:crypto';
import { CATEGORIES, type Category, differencesOf, SETTLED_CATEGORIES } from '../diff/decide.js';
import { CLIENT_SCRIPT, PAGE_STYLE } from './client.js';
import { fileWordOf, pairKey } from './decide.js';
import type { ReportData, ReportPair } from './types.js';

/** Text as HTML (element content and quoted attribute values). */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * JSON safe inside `<script type="application/json">`: no `<`, `>` or `&` (so no `</script>` or
 * `<!--` can end or change the block), and no U+2028/2029; JSON.parse reads the escapes back.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** The policy: nothing fetched from anywhere; only this page's script and style run (by hash, not 'unsafe-inline'). */
export function contentSecurityPolicy(script: string, style: string): string {
  return [
    "default-src 'none'",
    `script-src ${sha256(script)}`,
    `style-src ${sha256(style)}`,
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

const FILE_BITS = ['report', 'repairPlan', 'retireCandidates', 'summary', 'fcManifest'] as const;

/** The most a report may weigh (issue 30 §3: 10,000 pairs × 30 nights in at most 5 MB, the worst night too). */
export const REPORT_MAX_BYTES = 5_000_000;

/** Varint digits: 0–31 end a number, 32–63 carry 5 more bits; `.` is a night the pair was not run. */
const DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_';

/**
 * A pair's counts per night as text, about 2 characters a night (a JSON array takes 4): 10,000 pairs
 * differing in 5 categories for 30 nights are 1.5 million numbers. ./client.ts `series` reads it back.
 * @example packSeries([0, 31, 32, null]) // '0VW1.'
 */
export function packSeries(values: readonly (number | null)[]): string {
  let out = '';
  for (const value of values) {
    if (value === null) {
      out += '.';
      continue;
    }
    let v = Math.max(0, Math.floor(value));
    while (v >= 32) {
      out += DIGITS[32 + (v % 32)];
      v = Math.floor(v / 32);
    }
    out += DIGITS[v];
  }
  return out;
}

const bytesOf = (v: unknown) => Buffer.byteLength(scriptJson(v));

/** A pair in the page's data: short keys, counts in {@link CATEGORIES} order (10,000 pairs must stay small). */
function pairData(
  p: ReportPair,
  at: { defaultDir: (p: ReportPair) => string; absDir: (p: ReportPair) => string; hosts: readonly string[] },
  trend: ReportData['trend']['pairs'][string] | undefined,
): Record<string, unknown> {
  const d: Record<string, unknown> = { s: p.schId, f: p.formUuid, st: p.state, d: p.differences };
  if (p.counts !== null) d['c'] = CATEGORIES.map((c) => p.counts![c]);
  if (p.error !== null) d['e'] = p.error;
  if (p.seconds !== null) d['t'] = p.seconds;
  if (p.host !== null) d['h'] = at.hosts.indexOf(p.host) >= 0 ? at.hosts.indexOf(p.host) : p.host;
  if (p.files !== null) {
    d['fl'] = FILE_BITS.reduce((bits, k, i) => (p.files![k] !== null ? bits | (1 << i) : bits), 0);
    if (p.files.dir !== at.defaultDir(p)) d['dir'] = p.files.dir;
  }
  if (p.samplesLeftOut) d['so'] = 1;
  // the commands' text is rebuilt by the page from these bits and the run's folder, consumer and id
  if (p.actions !== 0) {
    d['a'] = p.actions;
    if (p.absDir !== at.absDir(p)) d['ad'] = p.absDir;
  }
  // the pair's chart draws the difference categories only (IN_SYNC and RETIRED would flatten it)
  const series = Object.entries(trend ?? {}).filter(([c]) => !SETTLED_CATEGORIES.includes(c as Category));
  if (series.length > 0)
    d['tr'] = Object.fromEntries(series.map(([c, s]) => [CATEGORIES.indexOf(c as Category), packSeries(s!)]));
  return d;
}

const sampleData = (samples: ReportPair['samples']) =>
  Object.fromEntries(
    Object.entries(samples).map(([c, rows]) => [
      CATEGORIES.indexOf(c as Category),
      rows!.map((r) => [
        r.answerUuid,
        r.fcRevision,
        r.fcHash,
        r.fcDeleted,
        r.localRevision,
        r.localHash,
        r.localDeleted,
        r.localCreateTime,
      ]),
    ]),
  );

/**
 * The page's data block (what ./client.ts reads), at most `maxBytes` of JSON: the pairs, the
 * fleet's trend and the run's command parts always; then the pairs' own trends and sample rows,
 * the pairs with the most differences first, as long as they fit — on a night where every pair
 * differs the sample rows alone would pass 5 MB. What was left out is counted (`left`) and the
 * page says so.
 */
export function pageData(data: ReportData, maxBytes = Number.POSITIVE_INFINITY): Record<string, unknown> {
  const sample = data.pairs.find((p) => p.files !== null);
  // pair folders sit at <prefix><school>/<form>: the prefix is stored once, not per pair
  const prefix = sample
    ? sample.files!.dir.slice(0, sample.files!.dir.length - `${sample.schId}/${sample.formUuid}`.length)
    : '';
  const withActions = data.pairs.find((p) => p.actions !== 0);
  const absPrefix = withActions
    ? withActions.absDir.slice(0, withActions.absDir.length - `${withActions.schId}/${withActions.formUuid}`.length)
    : '';
  const at = {
    defaultDir: (p: ReportPair) => `${prefix}${p.schId}/${p.formUuid}`,
    absDir: (p: ReportPair) => `${absPrefix}${p.schId}/${p.formUuid}`,
    hosts: data.hosts,
  };
  const idx = (c: Category) => CATEGORIES.indexOf(c);
  const pairs = data.pairs.map((p) => pairData(p, at, data.trend.pairs[pairKey(p.schId, p.formUuid)]));
  const out: Record<string, unknown> = {
    runId: data.runId,
    categories: CATEGORIES,
    settled: SETTLED_CATEGORIES.map(idx),
    prefix,
    hosts: data.hosts,
    // what every pair's commands share: folder, consumer, the retire proof's file word of the run id
    cmd: { dir: absPrefix, consumer: data.consumer, proof: fileWordOf(data.runId) },
    pairs,
    nights: data.trend.nights.map((n) => ({
      r: n.runId,
      at: n.runStartedAt,
      c: CATEGORIES.map((c) => n.counts[c] ?? 0),
    })),
    left: { trend: 0, samples: 0 },
  };
  const order = data.pairs.map((_, i) => i).sort((a, b) => data.pairs[b]!.differences - data.pairs[a]!.differences);
  // `,"left":{"trend":…,"samples":…}` grows by a few digits at most
  let size = bytesOf(out) + 16;
  // the fewest-differing pairs' trends go first when even they do not fit
  for (let j = order.length - 1; j >= 0 && size > maxBytes; j--) {
    const d = pairs[order[j]!]!;
    if (d['tr'] === undefined) continue;
    size -= bytesOf(d['tr']) + 6;
    delete d['tr'];
    d['tl'] = 1;
    (out['left'] as { trend: number }).trend++;
  }
  for (const i of order) {
    const p = data.pairs[i]!;
    if (Object.keys(p.samples).length === 0) continue;
    const sm = sampleData(p.samples);
    const more = bytesOf(sm) + 6;
    if (size + more > maxBytes) {
      pairs[i]!['so'] = 1;
      continue;
    }
    pairs[i]!['sm'] = sm;
    size += more;
  }
  (out['left'] as { samples: number }).samples = pairs.filter((d) => d['so'] === 1).length;
  return out;
}

const num = (n: number) => n.toLocaleString('en-US');

/** `+12`, `−3`, `±0`, or an empty cell without a previous night. */
function change(now: number, before: number | undefined): string {
  if (before === undefined) return '';
  const d = now - before;
  return d > 0 ? `+${num(d)}` : d < 0 ? `−${num(-d)}` : '±0';
}

/** Seconds between two UTC `YYYY-MM-DD HH:MM:SS` texts. */
function secondsBetween(a: string | null, b: string | null): number | null {
  if (a === null || b === null) return null;
  return Math.max(0, (Date.parse(`${b.replace(' ', 'T')}Z`) - Date.parse(`${a.replace(' ', 'T')}Z`)) / 1000);
}

function duration(s: number | null): string {
  if (s === null) return 'not recorded';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${Math.round(s % 60)} s` : `${Math.round(s)} s`;
}

/** The headline, as HTML: pairs run, with differences, failed; rows by category with the change; time, hosts. */
export function headlineHtml(d: ReportData): string {
  const e = escapeHtml;
  const withDiff = d.pairs.filter((p) => p.differences > 0).length;
  const failed = d.byState['FAILED'] ?? 0;
  const done = d.byState['DONE'] ?? 0;
  const rows = CATEGORIES.map((c) => {
    const cls = SETTLED_CATEGORIES.includes(c) ? 'settled' : d.counts[c] > 0 ? 'diff' : '';
    return `<tr class="${cls}"><th scope="row">${e(c).replaceAll('_', '_<wbr>')}</th><td>${num(d.counts[c])}</td><td>${e(change(d.previous?.now[c] ?? 0, d.previous?.counts[c]))}</td></tr>`;
  }).join('');
  const since = d.previous
    ? `change since ${e(d.previous.runId)}${d.previous.leftOut > 0 ? ` (over the pairs done both nights: ${num(d.previous.leftOut)} failed on one, new or gone left out)` : ''}`
    : 'change (no earlier night of the same pairs in the ledger)';
  const took =
    d.processes.length === 0
      ? 'not recorded by the run'
      : `${d.processes.length} took part: ${d.processes.slice(0, 20).map(e).join(', ')}${d.processes.length > 20 ? ', …' : ''}`;
  const processes =
    d.holders.length > 0
      ? `${took}; ${d.holders.length} holding pairs now: ${d.holders.map((h) => `${e(h.owner)} (${h.pairs})`).join(', ')}`
      : `${took}; none holding pairs now`;
  return [
    '<section id="headline" aria-label="Headline">',
    '<div class="tiles">',
    `<div class="tile"><b>${num(d.pairs.length)}</b><span>pairs in the run (${num(done)} done)</span></div>`,
    `<div class="tile ${withDiff > 0 ? 'warn' : ''}"><b>${num(withDiff)}</b><span>with differences (${num(differencesOf(d.counts))} rows)</span></div>`,
    `<div class="tile ${failed > 0 ? 'bad' : ''}"><b>${num(failed)}</b><span>failed</span></div>`,
    '</div>',
    '<dl class="facts">',
    `<dt>time taken</dt><dd>${e(duration(secondsBetween(d.startedAt, d.finishedAt)))} (${e(d.startedAt ?? '?')} → ${e(d.finishedAt ?? '…')} UTC)</dd>`,
    `<dt>throttled</dt><dd>${d.throttledSeconds === null ? 'not recorded by the run' : `${e(duration(d.throttledSeconds))} waiting on --max-load/--max-lag (summed over pairs)`}</dd>`,
    `<dt>hosts</dt><dd>${d.hosts.length > 0 ? d.hosts.map(e).join(', ') : 'none yet'}</dd>`,
    `<dt>processes</dt><dd>${processes}</dd>`,
    `<dt>consumer</dt><dd>${d.consumer === null ? 'not recorded' : e(d.consumer)}</dd>`,
    '</dl>',
    `<div class="scroll"><table class="cats"><caption>Rows by category</caption><thead><tr><th scope="col">category</th><th scope="col">rows</th><th scope="col">${since}</th></tr></thead><tbody>${rows}</tbody></table></div>`,
    '</section>',
  ].join('\n');
}

/** The run still going: pairs waiting and held, by whom. */
function progressHtml(d: ReportData): string {
  const pending = d.byState['PENDING'] ?? 0;
  const claimed = d.byState['CLAIMED'] ?? 0;
  if (pending === 0 && claimed === 0) return '';
  return `<p id="in-progress" class="notice" role="status">This run is still in progress: ${num(pending)} pairs pending, ${num(claimed)} claimed, ${d.holders.length} processes holding pairs${d.holders.length > 0 ? ` (${d.holders.map((h) => escapeHtml(`${h.owner}${h.host ? ` on ${h.host}` : ''}: ${h.pairs}`)).join('; ')})` : ''}. The numbers below are of the pairs finished so far.</p>`;
}

/** The failed pairs with their error, as HTML (they must show with JavaScript off). */
export function failedHtml(d: ReportData): string {
  const failed = d.pairs.filter((p) => p.state === 'FAILED');
  if (failed.length === 0)
    return '<section id="failed" aria-label="Failed pairs"><h2>Failed pairs</h2><p>None.</p></section>';
  const items = failed
    .map(
      (p) =>
        `<li><code>${escapeHtml(p.schId)} / ${escapeHtml(p.formUuid)}</code><pre class="err">${escapeHtml(p.error ?? '')}</pre></li>`,
    )
    .join('\n');
  return `<section id="failed" aria-label="Failed pairs"><h2>Failed pairs (${failed.length})</h2><ul class="failed">${items}</ul></section>`;
}

/** The whole page. */
export function renderReport(data: ReportData): string {
  const csp = contentSecurityPolicy(CLIENT_SCRIPT, PAGE_STYLE);
  const title = `fcctl reconcile report — ${data.runId}`;
  const before = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${PAGE_STYLE}</style>`,
    '</head><body>',
    `<header><h1>Reconcile run <code>${escapeHtml(data.runId)}</code></h1><p class="sub">${escapeHtml(data.outDir)} · written ${escapeHtml(data.generatedAt)}</p></header>`,
    '<main>',
    progressHtml(data),
    headlineHtml(data),
    failedHtml(data),
    '<section id="pairs" aria-label="Pairs"><h2>Pairs</h2><noscript><p>The pairs table, the drill-down and the trend need JavaScript; each pair\'s files are in its folder &lt;school&gt;/&lt;form&gt;/ beside this report.</p></noscript></section>',
    '<section id="detail" aria-label="Pair detail" hidden></section>',
    '<section id="trend" aria-label="Trend"><h2>Trend</h2></section>',
    '</main>',
    '<script type="application/json" id="report-data">',
  ].join('\n');
  const after = ['</script>', `<script>${CLIENT_SCRIPT}</script>`, '</body></html>', ''].join('\n');
  // the data gets what the page around it leaves of the limit
  const room = REPORT_MAX_BYTES - Buffer.byteLength(before) - Buffer.byteLength(after);
  return `${before}${scriptJson(pageData(data, room))}${after}`;
}
