import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type Category, emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { shellWord } from '../../src/lib/cli/shell.js';
import { DATA_SCRIPT } from '../../src/lib/reconcile/report/client.js';
import {
  actionId,
  pairActions,
  csvFields,
  fileWordOf,
  outOverwritesRun,
  pairCommands,
  processesOf,
  taskResultOf,
  throttledOf,
  trendOf,
} from '../../src/lib/reconcile/report/decide.js';
import {
  escapeHtml,
  packSeries,
  pageData,
  REPORT_MAX_BYTES,
  renderReport,
  scriptJson,
} from '../../src/lib/reconcile/report/render.js';
import type { ReportData, ReportPair, Sample } from '../../src/lib/reconcile/report/types.js';

const MARKUP = '</script><img src=x onerror=alert(1)><!--';

function data(over: Partial<ReportData> = {}): ReportData {
  return {
    runId: 'r1',
    generatedAt: '2026-12-01T02:00:00.000Z',
    outDir: '/runs/x',
    consumer: 'svc',
    startedAt: '2026-12-01 01:00:00',
    finishedAt: '2026-12-01 01:30:00',
    throttledSeconds: null,
    hosts: ['h1'],
    byState: { PENDING: 0, CLAIMED: 0, DONE: 1, FAILED: 0 },
    processes: [],
    holders: [],
    counts: emptyCounts(),
    previous: null,
    pairs: [],
    trend: { nights: [], pairs: {} },
    ...over,
  };
}

describe('renderReport (pure)', () => {
  it('inlines the data so that no value can end the script block or open a comment', () => {
    const json = scriptJson({ v: MARKUP, w: '\u2028' });
    expect(json).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(json)).toEqual({ v: MARKUP, w: '\u2028' });
    const html = renderReport(data({ runId: MARKUP, outDir: MARKUP }));
    expect(html.match(/<\/script>/g)).toHaveLength(2);
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<!--');
  });

  it('allows its own script and style by their hashes, nothing else', () => {
    const html = renderReport(data());
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    const hash = (t: string) => `sha256-${createHash('sha256').update(t).digest('base64')}`;
    const csp = /Content-Security-Policy" content="([^"]+)"/.exec(html)![1]!.replaceAll('&#39;', "'");
    expect(csp).toContain(`script-src '${hash(script)}'`);
    expect(csp).toContain(`style-src '${hash(style)}'`);
    expect(csp.startsWith("default-src 'none'")).toBe(true);
  });

  it('escapes text and attribute values', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&`)).toBe('&#60;a href=&#34;x&#34; onclick=&#39;y&#39;&#62;&#38;');
  });
});

describe('decisions', () => {
  it('reads report.csv lines: quotes, doubled quotes, empty cells, the formula mark', () => {
    expect(csvFields('a,"b,""c""",,\'=1')).toEqual(['a', 'b,"c"', '', '=1']);
  });

  it('quotes a word for the shell only when it needs it', () => {
    expect(shellWord('/runs/5/abc-def.jsonl')).toBe('/runs/5/abc-def.jsonl');
    expect(shellWord("/runs/5/it's <x>")).toBe("'/runs/5/it'\\''s <x>'");
  });

  it('prints the commands for the work a pair has, dry run first', () => {
    const counts = { ...emptyCounts(), STALE_LOCAL: 2, ABSENT_AT_FC: 1, MISSING_LOCAL: 3 };
    const cmds = pairCommands({
      schId: '5',
      absDir: '/runs/5/f',
      counts,
      consumer: 'svc',
      runId: 'r1',
      hasRepairPlan: true,
      hasRetireCandidates: true,
    });
    // rows missing locally are in the repair plan (inserted from FC): no replay of failed deliveries (issue 36 §14)
    expect(cmds.map((c) => c.title)).toEqual(['Repair from FC', 'Retire rows FC no longer has']);
    expect(cmds[0]!.dryRun).toEqual([
      'fcctl projection repair-authoritative --consumer svc --proof-id rc-r1-5 --school 5 --plan /runs/5/f/repair-plan.jsonl',
    ]);
    expect(cmds[0]!.execute).toBe(`${cmds[0]!.dryRun[0]} --execute`);
    expect(cmds[1]!.dryRun[0]).toMatch(
      /^fcctl retire-absent prove --candidates \/runs\/5\/f\/retire-candidates.jsonl /,
    );
    expect(cmds.flatMap((c) => c.dryRun).some((l) => l.includes('deliveries replay'))).toBe(false);
    expect(
      pairCommands({
        schId: '5',
        absDir: '/d',
        counts: emptyCounts(),
        consumer: 'svc',
        runId: 'r',
        hasRepairPlan: true,
        hasRetireCandidates: true,
      }),
    ).toEqual([]);
  });

  it("names the retire proof by a file word of the run id: a run id's / or quotes never make it a path elsewhere", () => {
    const runId = `n1'"</script><!--/../../../../tmp/x`;
    const cmds = pairCommands({
      schId: '5',
      absDir: '/runs/5/f',
      counts: { ...emptyCounts(), ABSENT_AT_FC: 1 },
      consumer: 'svc',
      runId,
      hasRepairPlan: true,
      hasRetireCandidates: true,
    });
    const out = /--out (\S+)$/.exec(cmds[0]!.dryRun[0]!)?.[1];
    // one file in the pair's folder: no / after it, nothing the shell must quote
    expect(out).toMatch(/^\/runs\/5\/f\/retire-proof-[A-Za-z0-9._-]+-[0-9a-f]{8}\.json$/);
    expect(cmds[0]!.dryRun[1]).toBe(`fcctl retire-absent --proof ${out}`);
    expect(fileWordOf('2026-12-01T01-00Z')).toBe('2026-12-01T01-00Z');
    expect(fileWordOf('a/b')).not.toBe(fileWordOf('a_b'));
  });

  it("refuses an --out that is one of the run's files (its summary.json, anything in a pair's folder)", () => {
    expect(outOverwritesRun('/r', '/r/summary.json')).toMatch(/summary\.json/);
    expect(outOverwritesRun('/r', '/r/5/f/report.csv')).toMatch(/pair's folder/);
    expect(outOverwritesRun('/r', '/r/report.html')).toBeNull();
    expect(outOverwritesRun('/r', '/r/dec1.html')).toBeNull();
    expect(outOverwritesRun('/r', '/tmp/summary.json')).toBeNull();
    expect(outOverwritesRun('/r', '/r2/x/summary.json')).toBeNull();
  });

  it("keeps the school in a pair's proof id and operation prefix, however long the run id (64 characters)", () => {
    const long = 'r'.repeat(64);
    expect(actionId(long, '5')).not.toBe(actionId(long, '6'));
    expect(actionId(long, '9223372036854775807')).toHaveLength(87); // within replay's 91 and repair's 128
  });

  it('keeps in a pair trend only the categories with a count on some night', () => {
    const n = (runId: string) => ({
      runId,
      runStartedAt: '',
      counts: emptyCounts(),
      pairs: 1,
      pairsWithDifferences: 0,
      failed: 0,
    });
    const t = trendOf(
      [n('a'), n('b')],
      [
        { runId: 'a', schId: '5', formUuid: 'f', counts: { ...emptyCounts(), IN_SYNC: 9 } },
        { runId: 'b', schId: '5', formUuid: 'f', counts: { ...emptyCounts(), IN_SYNC: 8, STALE_LOCAL: 1 } },
      ],
    );
    expect(t.pairs).toEqual({ '5/f': { IN_SYNC: [9, 8], STALE_LOCAL: [null, 1] } });
  });
});

/** The page's own functions that rebuild what its data keeps compact (./client.ts DATA_SCRIPT), run here. */
const page = new Function(`${DATA_SCRIPT}; return { commandsOf, unpack };`)() as {
  commandsOf(d: unknown, p: unknown): [string, string, string[], string | null][];
  unpack(text: string): (number | null)[];
};

/** A pair of a run under `outDir`, with its actions decided as run.ts decides them. */
function pair(
  outDir: string,
  schId: string,
  formUuid: string,
  counts: Partial<Record<Category, number>>,
  o: { repairPlan?: boolean; absDir?: string; samples?: number } = {},
): ReportPair {
  const c = { ...emptyCounts(), ...counts };
  const differences = Object.entries(counts).reduce((n, [k, v]) => (k === 'IN_SYNC' ? n : n + v!), 0);
  const row = (i: number): Sample => ({
    answerUuid: `a${i}`,
    fcRevision: '3',
    fcHash: 'f'.repeat(64),
    fcDeleted: '0',
    localRevision: '2',
    localHash: 'e'.repeat(64),
    localDeleted: '0',
    localCreateTime: '2026-11-20 10:11:12',
  });
  return {
    schId,
    formUuid,
    state: 'DONE',
    counts: c,
    differences,
    error: null,
    seconds: 1,
    host: 'h1',
    filesOfRun: true,
    files: null,
    absDir: o.absDir ?? `${outDir}/${schId}/${formUuid}`,
    samples: o.samples ? { STALE_LOCAL: Array.from({ length: o.samples }, (_, i) => row(i)) } : {},
    samplesLeftOut: false,
    actions: pairActions({ counts: c, hasRepairPlan: o.repairPlan ?? true, hasRetireCandidates: true }),
  };
}

describe('the page rebuilds what its data keeps compact', () => {
  it("rebuilds each pair's commands exactly as decide.ts prints them (quoting, proof file names, consumer)", () => {
    const cases = [
      { outDir: '/runs/night 1', runId: '2026-12-01T01-00Z', consumer: 'svc' },
      { outDir: `/srv/it's "here"/$HOME`, runId: `n1'"</script><!--/../../tmp/x y`, consumer: 'svc hall' },
      { outDir: '/r', runId: 'r'.repeat(64), consumer: null },
    ];
    let compared = 0;
    for (const k of cases) {
      const pairs = [
        pair(k.outDir, '5', 'f-1', { STALE_LOCAL: 2, ABSENT_AT_FC: 1, MISSING_LOCAL: 3, IN_SYNC: 9 }),
        pair(k.outDir, '12', "it's a form", { HASH_CONFLICT: 4 }),
        pair(k.outDir, '7', 'f-2', { ABSENT_AT_FC: 5, MISSING_LOCAL: 1 }, { repairPlan: false }),
        pair(k.outDir, '8', 'f-3', { MISSING_LOCAL: 1 }, { absDir: '/elsewhere/8 x/f-3' }),
        pair(k.outDir, '9', 'f-4', { IN_SYNC: 4 }),
      ];
      const d = data({ runId: k.runId, outDir: k.outDir, consumer: k.consumer, pairs });
      // as the page reads it: the JSON block parsed back
      const json = JSON.parse(scriptJson(pageData(d))) as { pairs: unknown[] };
      pairs.forEach((p, i) => {
        const printed = pairCommands({
          ...p,
          consumer: k.consumer,
          runId: k.runId,
          hasRepairPlan: p.schId !== '7',
          hasRetireCandidates: true,
        });
        expect(page.commandsOf(json, json.pairs[i])).toEqual(printed.map((c) => [c.title, c.why, c.dryRun, c.execute]));
        compared += printed.length;
      });
    }
    // 5: repair, retire; 12: repair; 7 (no plan): retire; 8: repair; 9: nothing
    expect(compared).toBe(3 * 5);
  });

  it('reads back the packed trend: nulls, 0, the 5-bit edges, large counts', () => {
    const values = [0, null, 1, 31, 32, 1023, 1024, 99_999, 2 ** 31 + 5, null];
    expect(page.unpack(packSeries(values))).toEqual(values);
    expect(packSeries([0, 31, 32, null])).toBe('0VW1.');
  });
});

describe('size', () => {
  it('keeps a night where every one of 10,000 pairs differs in five categories within 5 MB, samples of the most-differing first', () => {
    const outDir = '/var/lib/fcctl/reconcile/nightly-fleet-comparison/region-north-east/2026';
    const nights = Array.from({ length: 30 }, (_, i) => ({
      runId: `2026-11-${String(i + 1).padStart(2, '0')}T01-00Z`,
      runStartedAt: `2026-11-${String(i + 1).padStart(2, '0')} 01:00:00`,
      counts: emptyCounts(),
      pairs: 10_000,
      pairsWithDifferences: 10_000,
      failed: 0,
    }));
    const big = (i: number, k: number) => 50 + ((i * 7919 + k * 104_729) % 950);
    const pairs = Array.from({ length: 10_000 }, (_, i) =>
      pair(
        outDir,
        String(1000 + Math.floor(i / 5)),
        `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        {
          MISSING_LOCAL: big(i, 1),
          STALE_LOCAL: big(i, 2),
          HASH_CONFLICT: big(i, 3),
          LOCAL_AHEAD: big(i, 4),
          ABSENT_AT_FC: big(i, 5),
        },
        { samples: i < 160 ? 50 : 0 },
      ),
    );
    const trendPairs = Object.fromEntries(
      pairs.map((p, i) => [
        `${p.schId}/${p.formUuid}`,
        Object.fromEntries(
          (['MISSING_LOCAL', 'STALE_LOCAL', 'HASH_CONFLICT', 'LOCAL_AHEAD', 'ABSENT_AT_FC'] as const).map((c, k) => [
            c,
            nights.map((_, n) => big(i + n, k)),
          ]),
        ),
      ]),
    );
    const d = data({
      runId: nights.at(-1)!.runId,
      outDir,
      consumer: 'svc-hall-of-residence-projection-primary',
      pairs,
      trend: { nights, pairs: trendPairs },
    });
    const html = renderReport(d);
    expect(Buffer.byteLength(html)).toBeLessThanOrEqual(REPORT_MAX_BYTES);
    const json = JSON.parse(/id="report-data">([\s\S]*?)<\/script>/.exec(html)![1]!) as {
      pairs: Array<{ d: number; sm?: unknown; so?: number }>;
      left: { samples: number; trend: number };
    };
    const kept = json.pairs.filter((p) => p.sm !== undefined);
    const leftOut = json.pairs.filter((p) => p.so === 1 && p.sm === undefined);
    expect(kept.length).toBeGreaterThan(0);
    expect(json.left.samples).toBe(leftOut.length);
    expect(Math.min(...kept.map((p) => p.d))).toBeGreaterThanOrEqual(Math.max(...leftOut.map((p) => p.d)));
  });
});

describe('the run recorded by its task results', () => {
  it('processes: the distinct processes that finished pairs, sorted; none recorded for an older run', () => {
    const results = [
      '{"process":"b:2:ff","seconds":1}',
      '{"process":"a:1:ee"}',
      '{"process":"b:2:ff"}',
      '{}',
      null,
    ].map(taskResultOf);
    expect(processesOf(results)).toEqual(['a:1:ee', 'b:2:ff']);
    expect(processesOf([taskResultOf('{"seconds":1}')])).toEqual([]);
  });
  it('throttled: the waits summed; null when no pair recorded one', () => {
    expect(throttledOf(['{"throttledSeconds":1.25}', '{"throttledSeconds":2}', '{}'].map(taskResultOf))).toBe(3.3);
    expect(throttledOf(['{}', null].map(taskResultOf))).toBeNull();
  });
  it('the headline names the processes that took part and those holding pairs now', () => {
    const html = renderReport(data({ processes: ['a:1:ee', 'b:2:ff'] }));
    expect(html).toContain('<dt>processes</dt><dd>2 took part: a:1:ee, b:2:ff; none holding pairs now</dd>');
    expect(renderReport(data())).toContain(
      '<dt>processes</dt><dd>not recorded by the run; none holding pairs now</dd>',
    );
  });
});
