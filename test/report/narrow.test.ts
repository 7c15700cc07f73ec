/**
 * The report at 390 px (Chromium) with the widest values a run can hold: a 19-digit school id, a
 * form uuid, a 64-character run id, a long consumer key and run folder, every category with a
 * count on every night (the legend's longest), a failed pair's long error, samples: nothing past
 * the screen's edge, on the headline and in a pair's detail.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CATEGORIES, type emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { pairActions } from '../../src/lib/reconcile/report/decide.js';
import { renderReport } from '../../src/lib/reconcile/report/render.js';
import type { ReportData, ReportPair } from '../../src/lib/reconcile/report/types.js';
import { openPage } from './browser.js';

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

const SCHOOL = '9223372036854775807';
const FORM = '2f1c9a7e-5b3d-4c8e-9f0a-1b2c3d4e5f60';
const RUN = `fleet-nightly-${'x'.repeat(40)}-2026-12-03T01-00Z`.slice(0, 64);
const OUT = `/var/lib/fcctl/reconcile/${'deeply-nested-folder/'.repeat(4)}night`;
const all = (n: number) =>
  Object.fromEntries(CATEGORIES.map((c, i) => [c, n * (i + 1) * 1000])) as ReturnType<typeof emptyCounts>;

function pair(i: number, failed = false): ReportPair {
  const counts = all(i + 1);
  return {
    schId: `${SCHOOL.slice(0, 18)}${i}`,
    formUuid: FORM,
    state: failed ? 'FAILED' : 'DONE',
    counts: failed ? null : counts,
    differences: failed ? 0 : 99_999,
    error: failed ? `connect ETIMEDOUT ${'10.0.0.1:3306 '.repeat(20)}` : null,
    seconds: 12.5,
    host: `host-${'h'.repeat(50)}`,
    filesOfRun: !failed,
    files: failed
      ? null
      : {
          dir: `${SCHOOL}/${FORM}`,
          report: 'report.csv',
          repairPlan: 'repair-plan.jsonl',
          retireCandidates: 'retire-candidates.jsonl',
          summary: 'summary.json',
          fcManifest: 'fc-manifest.jsonl',
        },
    absDir: `${OUT}/${SCHOOL}/${FORM}`,
    samples: failed
      ? {}
      : {
          STALE_LOCAL: [
            {
              answerUuid: FORM,
              fcRevision: '123456789012',
              fcHash: 'f'.repeat(64),
              fcDeleted: '0',
              localRevision: '123456789011',
              localHash: 'e'.repeat(64),
              localDeleted: '0',
              localCreateTime: '2026-11-20 10:11:12',
            },
          ],
        },
    samplesLeftOut: false,
    actions: failed ? 0 : pairActions({ counts, hasRepairPlan: true, hasRetireCandidates: true }),
  };
}

describe('the report at 390 px with the widest values', () => {
  it('nothing past the edge: headline, pairs, a pair’s detail, the charts', async () => {
    const pairs = [pair(0), pair(1, true), pair(2)];
    const nights = Array.from({ length: 30 }, (_, i) => ({
      runId: `${RUN.slice(0, 60)}-${i}`,
      runStartedAt: `2026-11-${String(i + 1).padStart(2, '0')} 01:00:00`,
      counts: all(i + 1),
      pairs: 3,
      pairsWithDifferences: 2,
      failed: 1,
    }));
    const series = Object.fromEntries(CATEGORIES.map((c) => [c, nights.map((_, i) => i * 10)]));
    const data: ReportData = {
      runId: RUN,
      generatedAt: '2026-12-03T02:00:00.000Z',
      outDir: OUT,
      consumer: `svc-hall-${'c'.repeat(50)}`,
      startedAt: '2026-12-03 01:00:00',
      finishedAt: '2026-12-03 01:30:00',
      throttledSeconds: 12,
      hosts: [`host-${'h'.repeat(50)}`],
      byState: { PENDING: 0, CLAIMED: 0, DONE: 2, FAILED: 1 },
      processes: [`host-${'h'.repeat(50)}:12345:${'p'.repeat(36)}`],
      holders: [],
      counts: all(100),
      previous: { runId: nights[28]!.runId, counts: all(90), now: all(100), leftOut: 1 },
      pairs,
      trend: { nights, pairs: Object.fromEntries(pairs.map((p) => [`${p.schId}/${p.formUuid}`, series])) },
    };
    const dir = mkdtempSync(join(tmpdir(), 'fcctl-narrow-'));
    const file = join(dir, 'report.html');
    writeFileSync(file, renderReport(data));
    const w = await openPage(pathToFileURL(file).href, { width: 390 });
    try {
      const { page } = w;
      await page.waitForSelector('html[data-ready="1"]');
      expect.soft(await page.evaluate<string[]>(WIDE_SCRIPT), 'the page').toEqual([]);
      await page.click('#pairs-table tbody tr:not(.failed)');
      await page.waitForSelector('#detail .cats');
      expect.soft(await page.evaluate<string[]>(WIDE_SCRIPT), 'a pair’s detail').toEqual([]);
      // a category name breaks only after an underscore, on the headline and in the detail
      expect.soft(await page.evaluate<string[]>(BROKEN_SCRIPT), 'category names').toEqual([]);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  }, 60_000);
});
