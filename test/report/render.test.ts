import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import {
  actionId,
  csvFields,
  fileWordOf,
  outOverwritesRun,
  pairCommands,
  shellWord,
  trendOf,
} from '../../src/lib/reconcile/report/decide.js';
import { escapeHtml, renderReport, scriptJson } from '../../src/lib/reconcile/report/render.js';
import type { ReportData } from '../../src/lib/reconcile/report/types.js';

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
    expect(cmds.map((c) => c.title)).toEqual([
      'Repair from FC',
      'Retire rows FC no longer has',
      'Replay failed deliveries',
    ]);
    expect(cmds[0]!.dryRun).toEqual([
      'fcctl projection repair-authoritative --consumer svc --proof-id rc-r1-5 --school 5 --plan /runs/5/f/repair-plan.jsonl',
    ]);
    expect(cmds[0]!.execute).toBe(`${cmds[0]!.dryRun[0]} --execute`);
    expect(cmds[1]!.dryRun[0]).toMatch(
      /^fcctl retire-absent prove --candidates \/runs\/5\/f\/retire-candidates.jsonl /,
    );
    expect(cmds[2]!.dryRun).toEqual([
      'fcctl deliveries replay --consumer svc --school 5 --failed --operation-prefix rc-r1-5',
    ]);
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
