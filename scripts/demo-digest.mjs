#!/usr/bin/env node
// The demo's short readings of what a step left behind, for the steps that run a command many
// times (per school, per pair) or whose terminal view is longer than a screen: plain sentences,
// zero counts left out, never raw JSON (scripts/demo.sh).
//   node scripts/demo-digest.mjs seed                      < the JSON lines of `fcctl --json dev seed`
//   node scripts/demo-digest.mjs repair SCHOOL PLAN DRY EXECUTED   (the JSON-lines outputs of both runs)
//   node scripts/demo-digest.mjs retire SCHOOL FORM OUTPUT         (the JSON-lines output of retire-absent)
//   node scripts/demo-digest.mjs requests FLOW_URL                 (the stand-in's request log)
import { readFileSync } from 'node:fs';

const [mode, ...args] = process.argv.slice(2);

/** The last JSON line of a text: a command's summary. */
const summaryOf = (text) => JSON.parse(text.trim().split('\n').pop());
/** `A 1, B 2` of the non-zero numbers of an object, in its order. */
const nonZero = (counts) =>
  Object.entries(counts ?? {})
    .filter(([, v]) => typeof v === 'number' && v > 0)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

/** Words of `text` in lines of at most 100 characters, each after `indent`. */
const wrap = (text, indent) =>
  text
    .split(' ')
    .reduce((lines, w) => {
      const last = lines.at(-1);
      if (last !== undefined && `${last} ${w}`.length <= 100) lines[lines.length - 1] = `${last} ${w}`;
      else lines.push(w);
      return lines;
    }, [])
    .map((l) => indent + l)
    .join('\n');

if (mode === 'seed') {
  const s = summaryOf(readFileSync(0, 'utf8'));
  const c = s.counts;
  const grants = Object.entries(c)
    .filter(([k, v]) => k.startsWith('grants_') && v > 0)
    .map(([k, v]) => `${v} ${k.slice('grants_'.length)}`)
    .join(', ');
  console.log(
    `FC: ${c.answer} answers, ${c.answer_delivery} outbox rows for ${s.consumerKeys.split(',').length} consumers; grants: ${grants}`,
  );
  console.log(`SH: ${c.fc_answer_projection} projection rows, by reconcile category:`);
  console.log(wrap(nonZero(s.drift), '    '));
  console.log(`rows built to fail (expected to fail later): ${s.faults.map((f) => f.kind).join(', ')}`);
} else if (mode === 'repair') {
  const [school, plan, dry, executed] = args;
  const lines = readFileSync(plan, 'utf8').split('\n').filter(Boolean).length;
  const d = summaryOf(readFileSync(dry, 'utf8'));
  const x = summaryOf(readFileSync(executed, 'utf8'));
  const deferred = nonZero(Object.fromEntries(Object.entries(x.byResult ?? {}).filter(([k]) => k !== 'APPLIED')));
  console.log(
    `school ${school}: ${lines} plan lines · dry run: ${nonZero(d.byResult) || 'nothing'} · --execute: ${nonZero(x.byResult) || 'nothing'} (inserted ${x.inserted}, updated ${x.updated})${deferred ? ' — left for the next night' : ''}`,
  );
} else if (mode === 'retire') {
  const [school, form, output] = args;
  const s = summaryOf(readFileSync(output, 'utf8'));
  const reasons = nonZero(s.byReason);
  console.log(
    `school ${school} form ${form.slice(0, 8)}…: proof ${s.proofId}: ${s.entries} entries, ${nonZero({ retired: s.retired, alreadyRetired: s.alreadyRetired, refused: s.refused, notRun: s.notRun }) || 'nothing done'}${reasons ? ` (${reasons})` : ''}`,
  );
} else if (mode === 'requests') {
  // One line per business id: its GET, then its POST if there was one.
  const log = await (await fetch(`${args[0]}/__admin/log`)).json();
  const byId = new Map();
  for (const e of log) {
    const text = `${e.method} ${e.status}${e.branch ? ` ${e.branch}` : ''}${e.fault ? ` (fault: ${e.fault})` : ''}`;
    byId.set(e.bizId, [...(byId.get(e.bizId) ?? []), text]);
  }
  const width = Math.max(...[...byId.keys()].map((k) => k.length));
  for (const [id, requests] of byId) console.log(`  ${id.padEnd(width)}  ${requests.join(' · ')}`);
} else {
  console.error('usage: node scripts/demo-digest.mjs seed|repair|retire|requests …');
  process.exit(2);
}
