/**
 * The report page's own style and script, inlined by ./render.ts (and allowed by the page's
 * Content-Security-Policy through their hashes). The script draws the pairs table (filtered,
 * sorted, rows added 200 at a time: 10,000 rows in the DOM at once would be slow to open), the
 * drill-down and the trend charts as inline SVG (a chart library inlined would be most of the page
 * for a few lines; SVG needs nothing), from the JSON block `report-data`. Values from the data are
 * only ever set as text (`textContent`, attribute values), never parsed as HTML. Plain ES2019,
 * no template literals: the text is kept as written, so its hash is the one the policy names.
 */

export const PAGE_STYLE = `
:root{--fg:#1b1f24;--mute:#5b6570;--line:#d5dae0;--bg:#fff;--warn:#9a6700;--bad:#b42318;--ok:#1a7f37;--chip:#f3f5f7}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header,main{max-width:1240px;margin:0 auto;padding:0 16px}
h1{font-size:1.35rem;margin:16px 0 2px}h2{font-size:1.15rem;margin:24px 0 8px}
.sub{color:var(--mute);margin:0 0 12px;overflow-wrap:anywhere}
code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.tiles{display:flex;flex-wrap:wrap;gap:12px}
.tile{flex:1 1 180px;border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.tile b{display:block;font-size:1.8rem}.tile span{color:var(--mute)}
.tile.warn b{color:var(--warn)}.tile.bad b{color:var(--bad)}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:14px 0}
.facts dt{color:var(--mute)}.facts dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.cats{max-width:760px}.cats thead th{overflow-wrap:anywhere}.cats tbody th{overflow-wrap:normal;word-break:normal}@media (min-width:700px){.cats thead th,.cats tbody th{white-space:nowrap}}.cats td{text-align:right}.cats tr.settled{color:var(--mute)}.cats tr.diff th{color:var(--warn)}
caption{text-align:left;font-weight:600;padding:6px 0}
.notice{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px}
.failed li{margin:6px 0}.err{white-space:pre-wrap;overflow-wrap:anywhere;color:var(--bad);margin:4px 0}
.controls{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.controls label{display:flex;flex-direction:column;font-size:12px;color:var(--mute)}
.controls input,.controls select{font:inherit;padding:4px 6px;min-width:140px}
.scroll{overflow-x:auto}
#pairs-table th button{font:inherit;font-weight:600;background:none;border:0;padding:0;cursor:pointer}
#pairs-table tbody tr{cursor:pointer}#pairs-table tbody tr:hover,#pairs-table tbody tr:focus{background:var(--chip)}
#pairs-table tbody tr:focus{outline:2px solid #0969da;outline-offset:-2px}
tr.failed td{color:var(--bad)}
.form{overflow-wrap:anywhere;max-width:22em}
.more{margin:8px 0}
#detail{border:1px solid var(--line);border-radius:8px;padding:4px 14px 14px;margin-top:16px}
.cmd{background:var(--chip);padding:8px;border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere}
.tag{display:inline-block;font-size:12px;padding:0 6px;border-radius:10px;background:var(--chip);margin-right:6px}
.tag.dry{background:#dafbe1}.tag.exec{background:#ffebe9}
.chart{width:100%;max-width:760px;height:auto}
.legend{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:12px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px}
.files a{margin-right:12px}
@media (max-width:640px){#pairs-table td{overflow-wrap:anywhere}.samples thead{display:none}.samples tr{display:block;border-bottom:1px solid var(--line);padding:4px 0}.samples td{display:grid;grid-template-columns:7.5em minmax(0,1fr);gap:8px;border:0;padding:1px 0;overflow-wrap:anywhere}.samples td::before{content:attr(data-label);color:var(--mute)}.hide-narrow{display:none}.controls input,.controls select{min-width:0;width:100%}.controls label{flex:1 1 45%}}
`;

/**
 * What the page's data keeps compact, rebuilt by the page (tested equal to render.ts and decide.ts):
 * a pair's counts per night (`unpack` of `packSeries`), and a pair's "What to do" commands
 * (`commandsOf`: [title, why, dry-run lines, execute], the text of decide.ts `commandsOf`). The data
 * keeps per pair only which actions apply (bits 1 repair, 2 retire) and its counts, and
 * the run's folder, consumer and proof file word once: the full lines of every pair of a bad night
 * were most of the file (21 MB of 31 for 10,000 pairs).
 */
export const DATA_SCRIPT = String.raw`
function shellWord(s) { return /^[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*$/.test(s) ? s : "'" + s.split("'").join("'\\''") + "'"; }
function commandsOf(D, p) {
  var out = [], a = p.a || 0;
  if (!a || !p.c) return out;
  var run = D.cmd, dir = p.ad !== undefined ? p.ad : run.dir + p.s + '/' + p.f;
  var consumer = run.consumer === null ? '<consumer-key>' : run.consumer, id = 'rc-' + D.runId + '-' + p.s;
  var n = function (name) { return p.c[D.categories.indexOf(name)]; };
  var line = function (words) { return ['fcctl'].concat(words).map(shellWord).join(' '); };
  var file = function (name) { return dir + '/' + name; };
  if (a & 1) {
    var plan = line(['projection', 'repair-authoritative', '--consumer', consumer, '--proof-id', id]) + ' --school ' + shellWord(p.s) + ' --plan ' + shellWord(file('repair-plan.jsonl'));
    out.push(['Repair from FC', (n('MISSING_LOCAL') + n('STALE_LOCAL') + n('HASH_CONFLICT')) + ' rows missing, stale or in conflict locally, repaired from FC (the missing ones, which the consumer never received, inserted)', [plan], plan + ' --execute']);
  }
  if (a & 2) {
    var proof = file('retire-proof-' + run.proof + '.json'), retire = line(['retire-absent', '--proof', proof]);
    out.push(['Retire rows FC no longer has', n('ABSENT_AT_FC') + ' local rows absent at FC: prove (reads FC, writes the proof), then retire on the proof',
      [line(['retire-absent', 'prove', '--candidates', file('retire-candidates.jsonl'), '--fc-manifest', file('fc-manifest.jsonl'), '--out', proof]), retire], retire + ' --execute']);
  }
  return out;
}
// a pair's counts per night, as render.ts packSeries wrote them
var DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_';
function unpack(text) {
  var out = [], v = 0, m = 1;
  for (var j = 0; j < text.length; j++) {
    if (text[j] === '.') { out.push(null); continue; }
    var d = DIGITS.indexOf(text[j]);
    if (d >= 32) { v += (d - 32) * m; m *= 32; } else { out.push(v + d * m); v = 0; m = 1; }
  }
  return out;
}
`;

export const CLIENT_SCRIPT = `
(function () {
'use strict';${DATA_SCRIPT}${String.raw`
var D = JSON.parse(document.getElementById('report-data').textContent);
var CATS = D.categories, P = D.pairs, NIGHTS = D.nights;
var DIFF = [];
for (var ci = 0; ci < CATS.length; ci++) if (D.settled.indexOf(ci) < 0) DIFF.push(ci);
// one colour per category, each far from the others (Tableau 10): two reds or two greys read as one category
var COLORS = ['#59a14f','#4e79a7','#f28e2b','#e15759','#76b7b2','#b07aa1','#edc948','#9c755f','#ff9da7','#bab0ac'];
// a category name breaks only after an underscore, never inside a word (the page at 390 px)
function catName(c) { var out = [], w = c.split('_'); w.forEach(function (x, i) { out.push(i < w.length - 1 ? x + '_' : x); if (i < w.length - 1) out.push(el('wbr')); }); return out; }
var FILES = [['report.csv', 1], ['repair-plan.jsonl', 2], ['retire-candidates.jsonl', 4], ['summary.json', 8], ['fc-manifest.jsonl', 16]];
var PAGE = 200;
var st = { school: '', form: '', cat: '', q: '', sort: 'd', dir: -1, shown: PAGE, rows: [] };
for (var i = 0; i < P.length; i++) { P[i].i = i; P[i].k = (P[i].s + ' ' + P[i].f + ' ' + (P[i].e || '')).toLowerCase(); }

function el(tag, attrs, kids) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) { if (k === 'text') e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]); }
  if (kids) for (var j = 0; j < kids.length; j++) { var c = kids[j]; if (c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); }
  return e;
}
function svg(tag, attrs, text) {
  var e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (var k in attrs) e.setAttribute(k, String(attrs[k]));
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmt(n) { return Number(n).toLocaleString('en-US'); }
function href(path) { return path.split('/').map(encodeURIComponent).join('/'); }
function dirOf(p) { return p.dir !== undefined ? p.dir : D.prefix + p.s + '/' + p.f; }
function topCats(p) {
  if (!p.c) return p.st === 'FAILED' ? 'failed' : p.st.toLowerCase();
  var parts = [];
  for (var j = 0; j < DIFF.length; j++) if (p.c[DIFF[j]] > 0) parts.push(CATS[DIFF[j]] + ' ' + fmt(p.c[DIFF[j]]));
  return parts.length ? parts.join(', ') : 'in sync';
}

function matches(p) {
  if (st.school && p.s !== st.school) return false;
  if (st.form && p.f.toLowerCase().indexOf(st.form) < 0) return false;
  if (st.cat === 'FAILED') { if (p.st !== 'FAILED') return false; }
  else if (st.cat !== '' && !(p.c && p.c[Number(st.cat)] > 0)) return false;
  if (st.q && p.k.indexOf(st.q) < 0) return false;
  return true;
}
function cmpSchool(a, b) { return a.s.length - b.s.length || (a.s < b.s ? -1 : a.s > b.s ? 1 : 0) || (a.f < b.f ? -1 : a.f > b.f ? 1 : 0); }
var SORTS = {
  d: function (a, b) { return (a.st === 'FAILED' ? 1 : 0) - (b.st === 'FAILED' ? 1 : 0) || a.d - b.d || -cmpSchool(a, b); },
  s: cmpSchool,
  f: function (a, b) { return a.f < b.f ? -1 : a.f > b.f ? 1 : cmpSchool(a, b); },
  st: function (a, b) { return a.st < b.st ? -1 : a.st > b.st ? 1 : cmpSchool(a, b); },
  t: function (a, b) { return (a.t || 0) - (b.t || 0) || cmpSchool(a, b); }
};
function compute() {
  var rows = [];
  for (var j = 0; j < P.length; j++) if (matches(P[j])) rows.push(P[j]);
  var f = SORTS[st.sort], dir = st.dir;
  rows.sort(function (a, b) { return dir * f(a, b); });
  st.rows = rows;
}

var tbody, countEl, moreBtn, detail = document.getElementById('detail');
function renderRows() {
  var frag = document.createDocumentFragment();
  var n = Math.min(st.shown, st.rows.length);
  for (var j = 0; j < n; j++) {
    var p = st.rows[j];
    var tr = el('tr', { 'data-i': String(p.i), 'class': p.st === 'FAILED' ? 'failed' : '', tabindex: '0' }, [
      el('td', { text: p.s }),
      el('td', { 'class': 'form', text: p.f }),
      el('td', { text: p.st }),
      el('td', { 'class': 'n', text: fmt(p.d) }),
      el('td', { 'class': 'hide-narrow', text: topCats(p) }),
      el('td', { 'class': 'n hide-narrow', text: p.t === undefined ? '' : String(p.t) })
    ]);
    frag.appendChild(tr);
  }
  tbody.textContent = '';
  tbody.appendChild(frag);
  countEl.textContent = fmt(st.rows.length) + ' of ' + fmt(P.length) + ' pairs' + (n < st.rows.length ? ', first ' + fmt(n) + ' shown' : '');
  moreBtn.hidden = n >= st.rows.length;
}
function update() { compute(); st.shown = PAGE; renderRows(); }

function control(label, input) { return el('label', null, [label, input]); }
function buildTable() {
  var sec = document.getElementById('pairs');
  var school = el('input', { type: 'search', id: 'f-school', inputmode: 'numeric', placeholder: 'school id' });
  var form = el('input', { type: 'search', id: 'f-form', placeholder: 'form uuid (part)' });
  var cat = el('select', { id: 'f-cat' }, [el('option', { value: '', text: 'any' }), el('option', { value: 'FAILED', text: 'failed pairs' })]);
  for (var j = 0; j < DIFF.length; j++) cat.appendChild(el('option', { value: String(DIFF[j]), text: CATS[DIFF[j]] }));
  var q = el('input', { type: 'search', id: 'f-q', placeholder: 'school, form or error' });
  school.addEventListener('input', function () { st.school = school.value.trim(); update(); });
  form.addEventListener('input', function () { st.form = form.value.trim().toLowerCase(); update(); });
  cat.addEventListener('change', function () { st.cat = cat.value; update(); });
  q.addEventListener('input', function () { st.q = q.value.trim().toLowerCase(); update(); });
  sec.appendChild(el('div', { 'class': 'controls' }, [control('school', school), control('form', form), control('category', cat), control('search', q)]));
  if (D.left.samples > 0 || D.left.trend > 0)
    sec.appendChild(el('p', { id: 'left-out', 'class': 'notice', text: 'To keep this file under 5 MB: ' + [D.left.samples > 0 ? 'sample rows are left out for the ' + fmt(D.left.samples) + ' pairs with the fewest differences (see their report.csv)' : '', D.left.trend > 0 ? 'the own trend of ' + fmt(D.left.trend) + ' pairs with the fewest differences is left out (see fcctl reconcile history)' : ''].filter(Boolean).join('; ') + '.' }));
  countEl = el('p', { id: 'pairs-count', 'aria-live': 'polite' });
  sec.appendChild(countEl);
  var head = el('tr');
  [['s', 'school', ''], ['f', 'form', ''], ['st', 'state', ''], ['d', 'differences', 'n'], [null, 'categories', 'hide-narrow'], ['t', 'seconds', 'n hide-narrow']].forEach(function (h) {
    var th = el('th', { scope: 'col', 'class': h[2] });
    if (h[0] === null) th.textContent = h[1];
    else {
      var b = el('button', { type: 'button', 'data-sort': h[0], text: h[1] });
      b.addEventListener('click', function () { st.dir = st.sort === h[0] ? -st.dir : (h[0] === 'd' || h[0] === 't' ? -1 : 1); st.sort = h[0]; update(); });
      th.appendChild(b);
    }
    head.appendChild(th);
  });
  tbody = el('tbody');
  tbody.addEventListener('click', function (ev) {
    var tr = ev.target.closest('tr');
    if (tr) showDetail(P[Number(tr.getAttribute('data-i'))]);
  });
  // a row is reached with Tab and opened with Enter or Space, as a button is
  tbody.addEventListener('keydown', function (ev) {
    var tr = ev.target.closest('tr');
    if (!tr || (ev.key !== 'Enter' && ev.key !== ' ')) return;
    ev.preventDefault();
    showDetail(P[Number(tr.getAttribute('data-i'))]);
  });
  sec.appendChild(el('div', { 'class': 'scroll' }, [el('table', { id: 'pairs-table' }, [el('thead', null, [head]), tbody])]));
  moreBtn = el('button', { type: 'button', 'class': 'more', text: 'Show more' });
  moreBtn.addEventListener('click', function () { st.shown += PAGE * 5; renderRows(); });
  sec.appendChild(moreBtn);
}

function shortHash(h) {
  var s = el('span', { text: h.length > 12 ? h.slice(0, 12) + '…' : h });
  if (h) s.setAttribute('title', h);
  return s;
}
function samplesTable(rows) {
  var labels = ['answer', 'FC rev', 'FC hash', 'FC deleted', 'local rev', 'local hash', 'local deleted', 'local created'];
  var head = el('tr', null, labels.map(function (t) { return el('th', { scope: 'col', text: t }); }));
  var body = el('tbody');
  // each cell names its column: on a phone a row is drawn as a list of label and value (CSS), never wider than the screen
  var cell = function (j, v) { return el('td', { 'data-label': labels[j] }, [j === 2 || j === 5 ? shortHash(v) : v === null || v === undefined ? '' : String(v)]); };
  rows.forEach(function (r) { body.appendChild(el('tr', null, r.slice(0, 8).map(function (v, j) { return cell(j, v); }))); });
  return el('div', { 'class': 'scroll' }, [el('table', { 'class': 'samples' }, [el('thead', null, [head]), body])]);
}
function commandBlock(c) {
  var kids = [el('h4', { text: c[0] }), el('p', { text: c[1] })];
  c[2].forEach(function (line) { kids.push(el('p', null, [el('span', { 'class': 'tag dry', text: 'dry run first' })]), el('pre', { 'class': 'cmd dry-run', text: line })); });
  if (c[3]) kids.push(el('p', null, [el('span', { 'class': 'tag exec', text: 'then, to write' })]), el('pre', { 'class': 'cmd execute', text: c[3] }));
  return el('div', { 'class': 'command' }, kids);
}
function showDetail(p) {
  detail.textContent = '';
  detail.hidden = false;
  var close = el('button', { type: 'button', id: 'detail-close', text: 'Close' });
  close.addEventListener('click', function () {
    detail.hidden = true;
    var row = tbody.querySelector('tr[data-i="' + p.i + '"]');
    if (row) row.focus();
  });
  var title = el('h2', { tabindex: '-1' }, ['School ' + p.s + ' · form ', el('code', { text: p.f })]);
  detail.appendChild(title);
  detail.appendChild(el('p', { text: 'state ' + p.st + (p.t !== undefined ? ' · ' + p.t + ' s' : '') + (p.h !== undefined ? ' · host ' + (typeof p.h === 'number' ? D.hosts[p.h] : p.h) : '') }));
  detail.appendChild(close);
  if (p.e) detail.appendChild(el('pre', { 'class': 'err', text: p.e }));
  if (p.c) {
    var body = el('tbody');
    CATS.forEach(function (c, j) { body.appendChild(el('tr', null, [el('th', { scope: 'row' }, catName(c)), el('td', { 'class': 'n', text: fmt(p.c[j]) })])); });
    detail.appendChild(el('div', { 'class': 'scroll' }, [el('table', { 'class': 'cats counts' }, [el('caption', { text: 'Rows by category' }), body])]));
  }
  if (p.fl !== undefined) {
    var links = el('p', { 'class': 'files' }, ['Files: ']);
    FILES.forEach(function (f) { if (p.fl & f[1]) links.appendChild(el('a', { href: href(dirOf(p) + '/' + f[0]), text: f[0] })); });
    detail.appendChild(links);
  } else if (p.st === 'DONE') detail.appendChild(el('p', { text: 'The pair\'s folder no longer holds this run\'s files (a later run rewrote it).' }));
  var cm = commandsOf(D, p);
  if (cm.length) { detail.appendChild(el('h3', { text: 'What to do' })); cm.forEach(function (c) { detail.appendChild(commandBlock(c)); }); }
  if (p.sm) {
    detail.appendChild(el('h3', { text: 'Sample rows (up to 50 per category)' }));
    Object.keys(p.sm).forEach(function (k) { detail.appendChild(el('h4', { text: CATS[Number(k)] + ' (' + fmt(p.c[Number(k)]) + ' rows)' })); detail.appendChild(samplesTable(p.sm[k])); });
  } else if (p.so) detail.appendChild(el('p', { text: 'Sample rows left out to keep this file under 5 MB (the pairs with the most differences have theirs): see report.csv.' }));
  detail.appendChild(el('h3', { text: 'Trend of this pair (last ' + NIGHTS.length + ' nights)' }));
  if (p.tl) detail.appendChild(el('p', { text: 'Left out to keep this file under 5 MB: fcctl reconcile history --school ' + shellWord(p.s) + ' --form ' + shellWord(p.f) + ' lists its nights.' }));
  else {
    var series = {};
    for (var k in p.tr || {}) series[k] = unpack(p.tr[k]);
    detail.appendChild(p.tr ? chart(series, 'pair-chart') : el('p', { text: 'No nights of this pair in the ledger.' }));
  }
  detail.scrollIntoView({ block: 'start' });
  title.focus({ preventScroll: true });
}

function chart(series, id) {
  var W = 720, H = 220, L = 48, R = 10, T = 10, B = 28;
  var keys = Object.keys(series).filter(function (k) { return DIFF.indexOf(Number(k)) >= 0; });
  var max = 1;
  keys.forEach(function (k) { series[k].forEach(function (v) { if (v !== null && v > max) max = v; }); });
  var n = NIGHTS.length, x = function (j) { return L + (n < 2 ? 0 : (j * (W - L - R)) / (n - 1)); }, y = function (v) { return T + (H - T - B) * (1 - v / max); };
  var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, 'class': 'chart', id: id, role: 'img' });
  s.appendChild(svg('title', {}, 'rows by difference category per night'));
  s.appendChild(svg('line', { x1: L, y1: y(0), x2: W - R, y2: y(0), stroke: '#8c959f' }));
  s.appendChild(svg('text', { x: L - 6, y: y(max) + 4, 'text-anchor': 'end', 'font-size': 11 }, fmt(max)));
  s.appendChild(svg('text', { x: L - 6, y: y(0) + 4, 'text-anchor': 'end', 'font-size': 11 }, '0'));
  if (n > 0) {
    s.appendChild(svg('text', { x: L, y: H - 8, 'font-size': 11 }, NIGHTS[0].at.slice(0, 10)));
    s.appendChild(svg('text', { x: W - R, y: H - 8, 'font-size': 11, 'text-anchor': 'end' }, NIGHTS[n - 1].at.slice(0, 10)));
  }
  var legend = el('div', { 'class': 'legend' });
  keys.forEach(function (k) {
    var color = COLORS[Number(k) % COLORS.length], pts = [];
    series[k].forEach(function (v, j) {
      if (v === null) return;
      pts.push(x(j) + ',' + y(v));
      var dot = svg('circle', { cx: x(j), cy: y(v), r: 2.5, fill: color });
      dot.appendChild(svg('title', {}, NIGHTS[j].r + ': ' + CATS[Number(k)] + ' ' + fmt(v)));
      s.appendChild(dot);
    });
    s.appendChild(svg('polyline', { points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5 }));
    var sw = svg('svg', { width: 10, height: 10, 'class': 'sw' }); sw.appendChild(svg('rect', { width: 10, height: 10, fill: color }));
    legend.appendChild(el('span', null, [sw].concat(catName(CATS[Number(k)]))));
  });
  return el('figure', null, [s, legend]);
}
function buildTrend() {
  var sec = document.getElementById('trend');
  if (NIGHTS.length === 0) { sec.appendChild(el('p', { text: 'No nights in the drift ledger yet.' })); return; }
  var fleet = {};
  DIFF.forEach(function (c) { var s = NIGHTS.map(function (nt) { return nt.c[c]; }); if (s.some(function (v) { return v > 0; })) fleet[c] = s; });
  sec.appendChild(el('p', { text: 'Rows by difference category, whole fleet, last ' + NIGHTS.length + ' nights (IN_SYNC and RETIRED left out: they would flatten the scale). Choose a pair in the table for its own trend.' }));
  sec.appendChild(chart(fleet, 'fleet-chart'));
}

buildTable();
update();
buildTrend();
document.documentElement.setAttribute('data-ready', '1');
})();
`}`;
