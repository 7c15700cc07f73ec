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

/** A pair in the page's data: short keys, counts in {@link CATEGORIES} order (10,000 pairs must stay small). */
function pairData(p: ReportPair, defaultDir: (p: ReportPair) => string): Record<string, unknown> {
  const d: Record<string, unknown> = { s: p.schId, f: p.formUuid, st: p.state, d: p.differences };
  if (p.counts !== null) d['c'] = CATEGORIES.map((c) => p.counts![c]);
  if (p.error !== null) d['e'] = p.error;
  if (p.seconds !== null) d['t'] = p.seconds;
  if (p.host !== null) d['h'] = p.host;
  if (p.files !== null) {
    d['fl'] = FILE_BITS.reduce((bits, k, i) => (p.files![k] !== null ? bits | (1 << i) : bits), 0);
    if (p.files.dir !== defaultDir(p)) d['dir'] = p.files.dir;
  }
  const samples = Object.entries(p.samples);
  if (samples.length > 0)
    d['sm'] = Object.fromEntries(
      samples.map(([c, rows]) => [
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
  if (p.samplesLeftOut) d['so'] = 1;
  if (p.commands.length > 0) d['cm'] = p.commands.map((c) => [c.title, c.why, c.dryRun, c.execute]);
  return d;
}

/** The page's data block (what ./client.ts reads). */
export function pageData(data: ReportData): Record<string, unknown> {
  const sample = data.pairs.find((p) => p.files !== null);
  // pair folders sit at <prefix><school>/<form>: the prefix is stored once, not per pair
  const prefix = sample
    ? sample.files!.dir.slice(0, sample.files!.dir.length - `${sample.schId}/${sample.formUuid}`.length)
    : '';
  const defaultDir = (p: ReportPair) => `${prefix}${p.schId}/${p.formUuid}`;
  const idx = (c: Category) => CATEGORIES.indexOf(c);
  return {
    runId: data.runId,
    categories: CATEGORIES,
    settled: SETTLED_CATEGORIES.map(idx),
    prefix,
    pairs: data.pairs.map((p) => pairData(p, defaultDir)),
    nights: data.trend.nights.map((n) => ({
      r: n.runId,
      at: n.runStartedAt,
      c: CATEGORIES.map((c) => n.counts[c] ?? 0),
    })),
    // a pair's IN_SYNC count every night would be most of the file; its chart shows the differences
    trend: Object.fromEntries(
      Object.entries(data.trend.pairs).map(([k, series]) => [
        k,
        Object.fromEntries(
          Object.entries(series)
            .filter(([c]) => c !== 'IN_SYNC')
            .map(([c, s]) => [idx(c as Category), s]),
        ),
      ]),
    ),
  };
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
    return `<tr class="${cls}"><th scope="row">${e(c)}</th><td>${num(d.counts[c])}</td><td>${e(change(d.counts[c], d.previous?.counts[c]))}</td></tr>`;
  }).join('');
  const since = d.previous ? `change since ${e(d.previous.runId)}` : 'change (no earlier night in the ledger)';
  const processes =
    d.holders.length > 0
      ? `${d.holders.length} holding pairs now: ${d.holders.map((h) => `${e(h.owner)} (${h.pairs})`).join(', ')}`
      : 'none holding pairs';
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
  return [
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
    `<script type="application/json" id="report-data">${scriptJson(pageData(data))}</script>`,
    `<script>${CLIENT_SCRIPT}</script>`,
    '</body></html>',
    '',
  ].join('\n');
}
