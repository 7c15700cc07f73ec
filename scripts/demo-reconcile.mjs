#!/usr/bin/env node
// The demo's reader of `fcctl --json reconcile run --all` (stdin, JSON lines): one short line per
// pair as each finishes (streamed, so the demo never goes quiet while pairs run), then the totals.
// Lines it does not know (progress, warnings) pass through unchanged.
import { createInterface } from 'node:readline';

const others = (counts) =>
  Object.entries(counts ?? {})
    .filter(([k, v]) => v > 0 && k !== 'IN_SYNC')
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

for await (const line of createInterface({ input: process.stdin })) {
  let e;
  try {
    e = JSON.parse(line);
  } catch {
    console.log(line);
    continue;
  }
  if (e.type === 'pairs') {
    console.log(
      `run ${e.runId}: ${e.pairs} pairs (at both sides ${e.both}, at FC only ${e.atFcOnly}, at SH only ${e.atShOnly})`,
    );
  } else if (e.type === 'pair') {
    const how =
      e.result === 'done'
        ? `in sync ${e.counts?.IN_SYNC ?? 0}; ${others(e.counts) || 'no differences'}`
        : `${e.result}${e.error ? `: ${e.error}` : ''}`;
    console.log(
      `  school ${e.school} form ${String(e.form).slice(0, 8)}…: FC ${e.fcRows ?? '?'} rows, local ${e.shRows ?? '?'}; ${how} (${e.seconds}s)`,
    );
  } else if (e.type === 'progress') {
    console.log(
      `  … ${e.label ?? 'progress'}: ${e.done}${e.total !== undefined ? `/${e.total}` : ''}${e.etaSeconds !== undefined && e.etaSeconds !== null ? `, about ${e.etaSeconds}s to go` : ''}`,
    );
  } else if (e.type === 'summary') {
    const r = e.byResult ?? {};
    console.log(
      `${e.pairsRun} pairs run: ${r.done ?? 0} done, ${r.failed ?? 0} failed; ${e.pairsWithDifferences} with differences; all pairs: ${others(e.counts) || 'no differences'}; ${e.seconds}s; ${e.summaryFile}`,
    );
  } else {
    console.log(line);
  }
}
