#!/usr/bin/env node
// Throughput of fc.canon.v1 hashing against the `canonicalize` npm package (RFC 8785, parses with
// JSON.parse) and plain JSON.parse + JSON.stringify, on one deterministic corpus in one process.
//
//   npm run build && node bench/canon.mjs [--docs 10000] [--rounds 7] [--warmup 3] [--seed 42] [--json]
//
// The corpus: realistic answer snapshots (SPEC §4: the ten snapshot members, `values` with nested
// objects, arrays, Chinese text, decimals such as 12.50), 0.5–8 KB each, compact as a Java
// producer writes them, members in producer order (so every root object needs sorting).
import { createHash } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import canonicalizeNpm from 'canonicalize';
import { canonicalize } from '../dist/lib/canon/index.js';
import { benchArgs, cpuText, loadText, str, median } from './lib.mjs';

const args = benchArgs({
  docs: str('10000'),
  rounds: str('7'),
  warmup: str('3'),
  seed: str('42'),
  only: str(), // run one contender: fcctl | fcctl-string | canonicalize | json
  dump: str(), // write the corpus as JSON Lines to this file and exit
});

// ------------------------------------------------------------------ corpus

/** mulberry32: small, fast, seeded. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HANZI =
  '的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严龙飞';
const PUNCT = '，。、；：？！“”（）';

function corpusDoc(rnd, index) {
  const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const hanzi = (n) => {
    let s = '';
    for (let i = 0; i < n; i++) s += rnd() < 0.08 ? PUNCT[int(0, PUNCT.length - 1)] : HANZI[int(0, HANZI.length - 1)];
    return s;
  };
  const decimal = () => `${int(0, 9999)}.${String(int(0, 99)).padStart(2, '0')}`; // 12.50, 3.00
  const time = () =>
    `2026-${String(int(1, 12)).padStart(2, '0')}-${String(int(1, 28)).padStart(2, '0')}T${String(int(0, 23)).padStart(2, '0')}:${String(int(0, 59)).padStart(2, '0')}:${String(int(0, 59)).padStart(2, '0')}`;

  // A value tree whose numbers are kept as literal text, so 12.50 reaches the JSON as written.
  const num = (text) => ({ $num: text });
  const field = () => {
    switch (int(0, 9)) {
      case 0:
        return hanzi(int(2, 8)); // a name, a title
      case 1:
        return hanzi(int(20, 300)) + (rnd() < 0.3 ? `\n${hanzi(int(10, 80))}` : ''); // an essay
      case 2:
        return num(decimal()); // an amount
      case 3:
        return num(String(int(0, 100000))); // a count, a score
      case 4:
        return Array.from({ length: int(1, 5) }, () => pick(['A', 'B', 'C', 'D', 'E', 'opt_1', 'opt_2'])); // multi-choice
      case 5:
        return {
          province: hanzi(3),
          city: hanzi(3),
          district: hanzi(3),
          detail: `${hanzi(int(6, 20)) + int(1, 999)}号`,
        };
      case 6: // a table: rows of objects
        return Array.from({ length: int(1, 6) }, () => ({
          item: hanzi(int(2, 6)),
          qty: num(String(int(1, 50))),
          price: num(decimal()),
          remark: rnd() < 0.5 ? null : hanzi(int(3, 12)),
        }));
      case 7: // attachments
        return Array.from({ length: int(1, 3) }, () => ({
          name: `${hanzi(int(3, 8))}.pdf`,
          url: `https://files.example.com/f/${int(1e5, 1e6)}/${int(1e8, 1e9)}.pdf`,
          size: num(String(int(1000, 9000000))),
        }));
      case 8:
        return rnd() < 0.5;
      default:
        return rnd() < 0.5 ? null : time();
    }
  };
  const target = 512 + Math.floor(rnd() * rnd() * (8192 - 512)); // skewed towards small answers
  // Fields are added until the document reaches its target size (sizes summed, not re-serialized).
  const values = [];
  let valuesBytes = 2;
  const head = [
    ['schId', num(String(int(1, 5000)))],
    ['appCode', pick(['demo', 'xsgl', 'honor', 'dorm'])],
    ['code', pick(['honor_apply', 'scholarship_apply', 'leave_apply', 'dorm_repair'])],
    ['submitterId', num(String(int(100000, 99999999)))],
    ['subjectId', num(String(int(1, 500000)))],
    ['status', pick(['processed', 'submitted', 'rejected', 'draft'])],
  ];
  const tail = [
    ['answerNo', rnd() < 0.2 ? null : `A${int(1e9, 9e9)}`],
    ['createTime', time()],
    ['updateTime', rnd() < 0.3 ? null : time()],
  ];
  const fixedBytes = Buffer.byteLength(write({ $members: [...head, ['values', null], ...tail] }));
  // A form has a stable set of field ids; answers of one form share them.
  const form = index % 97;
  while (fixedBytes + valuesBytes < target && values.length < 400) {
    const member = [`field_${form.toString(36)}_${(values.length * 7919 + form * 104729).toString(36)}`, field()];
    values.push(member);
    valuesBytes += Buffer.byteLength(write({ $members: [member] })) - 1;
  }
  return write({ $members: [...head, ['values', { $members: values }], ...tail] });
}

/** Compact JSON in member order, numbers as their literal text. */
function write(v) {
  if (v === null || typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(write).join(',')}]`;
  if ('$num' in v) return v.$num;
  const members = v.$members ?? Object.entries(v);
  return `{${members.map(([k, x]) => `${JSON.stringify(k)}:${write(x)}`).join(',')}}`;
}

function buildCorpus(count, seed) {
  const rnd = prng(seed);
  const docs = [];
  for (let i = 0; i < count; i++) docs.push(Buffer.from(corpusDoc(rnd, i), 'utf8'));
  return docs;
}

// ------------------------------------------------------------------ contenders

const sha256 = (data) => createHash('sha256').update(data).digest('hex');

const allContenders = [
  {
    id: 'fcctl',
    name: 'fcctl fc.canon.v1 (canonicalize + sha256)',
    run: (buf) => {
      const r = canonicalize(buf);
      if (!r.ok) throw new Error(r.error.message);
      return r.hash;
    },
  },
  {
    id: 'fcctl-string',
    name: 'fcctl, input as a JS string (decode + canonicalize + sha256)',
    run: (buf) => {
      const r = canonicalize(buf.toString('utf8'));
      if (!r.ok) throw new Error(r.error.message);
      return r.hash;
    },
  },
  {
    id: 'canonicalize',
    name: '`canonicalize` 2.1.0 (JSON.parse + RFC 8785) + sha256',
    run: (buf) => sha256(canonicalizeNpm(JSON.parse(buf.toString('utf8')))),
  },
  {
    id: 'json',
    name: 'JSON.parse + JSON.stringify + sha256 (not canonical)',
    run: (buf) => sha256(JSON.stringify(JSON.parse(buf.toString('utf8')))),
  },
];
const contenders = args.only ? allContenders.filter((c) => c.id === args.only) : allContenders;

/** Wall-clock and CPU milliseconds of one pass over the corpus (CPU time shows contention). */
function measure(run, docs) {
  let sink = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const d of docs) sink += run(d).charCodeAt(0);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (sink === -1) console.log(sink); // keep the results alive
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

// ------------------------------------------------------------------ run

const docCount = Number(args.docs);
const rounds = Number(args.rounds);
const warmup = Number(args.warmup);
const docs = buildCorpus(docCount, Number(args.seed));
if (args.dump) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(args.dump, Buffer.concat(docs.flatMap((d) => [d, Buffer.from('\n')])));
  process.exit(0);
}
const bytes = docs.reduce((n, d) => n + d.length, 0);
const sizes = docs.map((d) => d.length).sort((a, b) => a - b);

// Every contender must agree on validity (all documents are valid) before anything is timed.
for (const c of contenders) for (const d of docs.slice(0, 100)) c.run(d);
const fcctlHash = canonicalize(docs[0]);
if (!fcctlHash.ok) throw new Error('corpus document refused');

const times = contenders.map(() => []);
const cpuTimes = contenders.map(() => []);
for (let r = 0; r < warmup + rounds; r++) {
  // Interleave contenders round by round so drift (GC, CPU clock, other load) hits all alike.
  contenders.forEach((c, i) => {
    const { ms, cpuMs } = measure(c.run, docs);
    if (r >= warmup) {
      times[i].push(ms);
      cpuTimes[i].push(cpuMs);
    }
  });
}

const results = contenders.map((c, i) => {
  const ms = median(times[i]);
  const cpuMs = median(cpuTimes[i]);
  return {
    id: c.id,
    name: c.name,
    medianMs: ms,
    medianCpuMs: cpuMs,
    mbPerS: bytes / 1e6 / (ms / 1000),
    cpuMbPerS: bytes / 1e6 / (cpuMs / 1000),
    docsPerS: docCount / (ms / 1000),
  };
});
const byId = (id) => results.find((r) => r.id === id);
const ratio = byId('fcctl') && byId('canonicalize') ? byId('fcctl').mbPerS / byId('canonicalize').mbPerS : NaN;
const cpuRatio = byId('fcctl') && byId('canonicalize') ? byId('fcctl').cpuMbPerS / byId('canonicalize').cpuMbPerS : NaN;

if (args.json) {
  console.log(
    JSON.stringify({
      node: process.version,
      loadavg: os.loadavg(),
      docs: docCount,
      bytes,
      rounds,
      warmup,
      results,
      ratioVsCanonicalize: ratio,
      cpuRatioVsCanonicalize: cpuRatio,
    }),
  );
} else {
  console.log(
    `corpus: ${docCount} snapshots, ${(bytes / 1e6).toFixed(1)} MB, size min/median/max ${sizes[0]}/${sizes[sizes.length >> 1]}/${sizes[sizes.length - 1]} B`,
  );
  console.log(
    `node ${process.version}, ${cpuText()}, load average ${loadText()}; median of ${rounds} rounds after ${warmup} warm-up`,
  );
  console.log('');
  console.log('| contender | median ms/round | MB/s | MB/s of CPU time | docs/s |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of results)
    console.log(
      `| ${r.name} | ${r.medianMs.toFixed(1)} | ${r.mbPerS.toFixed(1)} | ${r.cpuMbPerS.toFixed(1)} | ${Math.round(r.docsPerS)} |`,
    );
  if (!Number.isNaN(ratio)) {
    console.log('');
    console.log(
      `fcctl / canonicalize = ${ratio.toFixed(2)}× wall clock, ${cpuRatio.toFixed(2)}× CPU time (goal ≥ 3.0×)`,
    );
  }
}
