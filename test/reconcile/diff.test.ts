import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadManifestSource } from '../../src/lib/manifest/reader.js';
import type { ManifestRow } from '../../src/lib/manifest/row.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { testUuid, writeManifestFiles } from '../helpers/manifest.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'diff' });

const TASK_START = '2026-11-30 01:00:00';
const FORM = 'f0000000-0000-4000-8000-000000000000';
const h = (s: string) => createHash('sha256').update(s).digest('hex');
const row = (uuid: string, revision: string, o: Partial<ManifestRow> = {}): ManifestRow => ({
  answerUuid: uuid,
  revision,
  contentHash: h(`${uuid}:${revision}`),
  isDeleted: false,
  schId: '5',
  createTime: '2026-10-01 08:00:00',
  ...o,
});
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

// One answer per situation, keys chosen so the order interleaves the two sides.
const U = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const FC: ManifestRow[] = [
  row(U(1), '1'), // in sync
  row(U(2), '3'), // missing locally
  row(U(3), '4'), // stale: local 3
  row(U(4), '2'), // same revision, other hash
  row(U(5), '2', { isDeleted: true }), // same revision and hash, other isDeleted
  row(U(6), '1'), // local ahead: 2
  row(U(7), '5'), // retired locally, present at FC
  row(U(13), '9007199254740993'), // in sync beyond 2^53
];
const SH: ManifestRow[] = [
  row(U(1), '1'),
  row(U(3), '3'),
  { ...row(U(4), '2'), contentHash: h('other') },
  row(U(5), '2', { contentHash: h(`${U(5)}:2`), isDeleted: false }),
  row(U(6), '2'),
  row(U(7), '5', { retiredAt: '2026-11-01 00:00:00' }),
  row(U(8), '1'), // absent at FC, created before the start: the candidate
  row(U(9), '2', { createTime: TASK_START, isDeleted: true }), // created at the start itself: still a candidate
  row(U(10), '1', { createTime: '2026-11-30 01:00:01' }), // created after the start
  row(U(11), '1', { createTime: null }), // create time unknown
  row(U(12), '1', { retiredAt: '2026-11-02 00:00:00' }), // retired already
  row(U(13), '9007199254740993'),
];

let dir: string;
test.beforeAll(({ tmp }) => {
  dir = tmp;
});

const diff = (args: string[]) => runCli(['--json', 'reconcile', 'diff', ...args]);

async function pair(name: string, fcRows = FC, shRows = SH, o: { fcSchool?: string; shCompleted?: boolean } = {}) {
  const sub = join(dir, name);
  mkdirSync(sub, { recursive: true });
  const fc = await writeManifestFiles(sub, 'fc', 'fc', fcRows, { schId: o.fcSchool ?? '5' });
  const sh = await writeManifestFiles(sub, 'sh', 'sh', shRows, { completed: o.shCompleted ?? true });
  return { sub, fc, sh, out: join(sub, 'out') };
}

describe('reconcile diff', () => {
  it('classifies every situation and writes the five files exactly', async () => {
    const { fc, sh, out } = await pair('all');
    const r = await diff(['--fc', fc.file, '--sh', sh.file, '--task-start', '2026-11-30T01:00:00', '--out-dir', out]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const counts = {
      IN_SYNC: 2,
      MISSING_LOCAL: 1,
      STALE_LOCAL: 1,
      HASH_CONFLICT: 2,
      LOCAL_AHEAD: 1,
      RETIRED_PRESENT_AT_FC: 1,
      ABSENT_AT_FC: 2,
      ABSENT_CREATED_AFTER_TASK_START: 1,
      ABSENT_CREATE_TIME_NULL: 1,
      RETIRED: 1,
    };
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({
      type: 'summary',
      command: 'reconcile diff',
      exitCode: 0,
      differences: 10,
      repairPlan: 4,
      localAhead: 1,
      retireCandidates: 2,
      counts,
    });
    expect(readdirSync(out).sort()).toEqual([
      'local-ahead.jsonl',
      'repair-plan.jsonl',
      'report.csv',
      'retire-candidates.jsonl',
      'summary.json',
    ]);

    const report = readFileSync(join(out, 'report.csv'), 'utf8');
    expect(report.split('\n')[0]).toBe(
      'category,answerUuid,schId,fcRevision,fcContentHash,fcIsDeleted,localRevision,localContentHash,localIsDeleted,localCreateTime,localRetiredAt',
    );
    const cells = report
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(','));
    expect(cells.map((c) => [c[0], c[1]])).toEqual([
      ['MISSING_LOCAL', U(2)],
      ['STALE_LOCAL', U(3)],
      ['HASH_CONFLICT', U(4)],
      ['HASH_CONFLICT', U(5)],
      ['LOCAL_AHEAD', U(6)],
      ['RETIRED_PRESENT_AT_FC', U(7)],
      ['ABSENT_AT_FC', U(8)],
      ['ABSENT_AT_FC', U(9)],
      ['ABSENT_CREATED_AFTER_TASK_START', U(10)],
      ['ABSENT_CREATE_TIME_NULL', U(11)],
    ]);
    expect(cells[0]).toEqual(['MISSING_LOCAL', U(2), '5', '3', h(`${U(2)}:3`), '0', '', '', '', '', '']);
    expect(cells[5]).toEqual([
      'RETIRED_PRESENT_AT_FC',
      U(7),
      '5',
      '5',
      h(`${U(7)}:5`),
      '0',
      '5',
      h(`${U(7)}:5`),
      '0',
      '2026-10-01 08:00:00',
      '2026-11-01 00:00:00',
    ]);
    expect(cells[7]).toEqual(['ABSENT_AT_FC', U(9), '5', '', '', '', '2', h(`${U(9)}:2`), '1', TASK_START, '']);

    const lines = (f: string) =>
      readFileSync(join(out, f), 'utf8')
        .trimEnd()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines('repair-plan.jsonl')).toEqual([
      {
        category: 'MISSING_LOCAL',
        answerUuid: U(2),
        schId: '5',
        formUuid: FORM,
        expectedRevision: null,
        expectedHash: null,
        expectedIsDeleted: null,
        fcRevision: '3',
        fcContentHash: h(`${U(2)}:3`),
        fcIsDeleted: false,
      },
      {
        category: 'STALE_LOCAL',
        answerUuid: U(3),
        schId: '5',
        formUuid: FORM,
        expectedRevision: '3',
        expectedHash: h(`${U(3)}:3`),
        expectedIsDeleted: false,
        fcRevision: '4',
        fcContentHash: h(`${U(3)}:4`),
        fcIsDeleted: false,
      },
      {
        category: 'HASH_CONFLICT',
        answerUuid: U(4),
        schId: '5',
        formUuid: FORM,
        expectedRevision: '2',
        expectedHash: h('other'),
        expectedIsDeleted: false,
        fcRevision: '2',
        fcContentHash: h(`${U(4)}:2`),
        fcIsDeleted: false,
      },
      {
        category: 'HASH_CONFLICT',
        answerUuid: U(5),
        schId: '5',
        formUuid: FORM,
        expectedRevision: '2',
        expectedHash: h(`${U(5)}:2`),
        expectedIsDeleted: false,
        fcRevision: '2',
        fcContentHash: h(`${U(5)}:2`),
        fcIsDeleted: true,
      },
    ]);
    expect(lines('local-ahead.jsonl')).toEqual([
      {
        category: 'LOCAL_AHEAD',
        answerUuid: U(6),
        schId: '5',
        formUuid: FORM,
        expectedRevision: '2',
        expectedHash: h(`${U(6)}:2`),
        expectedIsDeleted: false,
        fcRevision: '1',
        fcContentHash: h(`${U(6)}:1`),
        fcIsDeleted: false,
      },
    ]);
    expect(lines('retire-candidates.jsonl')).toEqual([
      {
        category: 'ABSENT_AT_FC',
        answerUuid: U(8),
        schId: '5',
        formUuid: FORM,
        expectedRevision: '1',
        expectedHash: h(`${U(8)}:1`),
        expectedIsDeleted: false,
        localCreateTime: '2026-10-01 08:00:00',
        taskStart: TASK_START,
      },
      {
        category: 'ABSENT_AT_FC',
        answerUuid: U(9),
        schId: '5',
        formUuid: FORM,
        expectedRevision: '2',
        expectedHash: h(`${U(9)}:2`),
        expectedIsDeleted: true,
        localCreateTime: TASK_START,
        taskStart: TASK_START,
      },
    ]);

    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as Record<string, any>;
    expect(summary).toMatchObject({
      format: 'fcctl.reconcile.summary.v1',
      taskStart: TASK_START,
      schId: '5',
      formUuid: FORM,
      shards: [null],
      wholeKeySpace: true,
      counts,
      differences: 10,
    });
    expect(summary['inputs']['fc']).toMatchObject({
      file: fc.file,
      rows: FC.length,
      bytes: fc.bytes.length,
      sha256: sha(fc.bytes),
      completedAt: '2026-11-30T00:01:00.000Z',
    });
    expect(summary['inputs']['sh']).toMatchObject({ file: sh.file, rows: SH.length, sha256: sha(sh.bytes) });
    for (const f of ['report.csv', 'repair-plan.jsonl', 'local-ahead.jsonl', 'retire-candidates.jsonl']) {
      expect(summary['outputs'][f]['sha256']).toBe(sha(readFileSync(join(out, f))));
    }
    expect(summary['outputs']['report.csv']['rows']).toBe(10);
  });

  it('empty manifests: all files written, headers only, zero counts', async () => {
    const { fc, sh, out } = await pair('empty', [], []);
    const r = await diff(['--fc', fc.file, '--sh', sh.file, '--task-start', TASK_START, '--out-dir', out]);
    expect(r.code).toBe(0);
    expect(readFileSync(join(out, 'report.csv'), 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
    expect(readFileSync(join(out, 'retire-candidates.jsonl'), 'utf8')).toBe('');
  });

  it("a sharded manifest is as fresh as its oldest shard: completedAt is the earliest completion (a proof's age counts from it)", async () => {
    const sub = join(dir, 'shard-ages');
    mkdirSync(sub);
    const keys = Array.from({ length: 6 }, (_, i) => testUuid('age', i)).sort();
    const a = await writeManifestFiles(
      sub,
      'fc-1',
      'fc',
      keys.slice(0, 3).map((k) => row(k, '1')),
      { shard: '1/2', completedAt: '2026-11-30T09:00:00.000Z' },
    );
    const b = await writeManifestFiles(
      sub,
      'fc-2',
      'fc',
      keys.slice(3).map((k) => row(k, '1')),
      { shard: '2/2', completedAt: '2026-11-27T09:00:00.000Z' },
    );
    writeFileSync(join(sub, 'fc.jsonl'), Buffer.concat([a.bytes, b.bytes]));
    const source = await loadManifestSource('fc', join(sub, 'fc.jsonl'), [a.checkpoint, b.checkpoint]);
    expect(source.completedAt).toBe('2026-11-27T09:00:00.000Z');
  });

  it('shards: outputs concatenated in shard order with one checkpoint per shard, same result as unsharded', async () => {
    const sub = join(dir, 'shards');
    mkdirSync(sub);
    // Split both sides at the shard bounds of 3 shards (0x55555555, 0xaaaaaaaa) using spread-out keys.
    const keys = Array.from({ length: 30 }, (_, i) => testUuid('shard', i)).sort();
    const fcRows = keys.filter((_, i) => i % 5 !== 0).map((k, i) => row(k, String(1 + (i % 3))));
    const shRows = keys.filter((_, i) => i % 7 !== 0).map((k, i) => row(k, String(1 + (i % 4))));
    const inShard = (k: string, i: number) =>
      i === 1 ? k < '55555555' : i === 2 ? k >= '55555555' && k < 'aaaaaaaa' : k >= 'aaaaaaaa';
    const fcParts = [];
    const shParts = [];
    for (const i of [1, 2, 3]) {
      fcParts.push(
        await writeManifestFiles(
          sub,
          `fc-${i}`,
          'fc',
          fcRows.filter((r) => inShard(r.answerUuid, i)),
          { shard: `${i}/3` },
        ),
      );
      shParts.push(
        await writeManifestFiles(
          sub,
          `sh-${i}`,
          'sh',
          shRows.filter((r) => inShard(r.answerUuid, i)),
          { shard: `${i}/3` },
        ),
      );
    }
    writeFileSync(join(sub, 'fc.jsonl'), Buffer.concat(fcParts.map((p) => p.bytes)));
    writeFileSync(join(sub, 'sh.jsonl'), Buffer.concat(shParts.map((p) => p.bytes)));
    const cpArgs = (flag: string, parts: Array<{ checkpoint: string }>) => parts.flatMap((p) => [flag, p.checkpoint]);
    const r = await diff([
      '--fc',
      join(sub, 'fc.jsonl'),
      '--sh',
      join(sub, 'sh.jsonl'),
      ...cpArgs('--fc-checkpoint', fcParts),
      ...cpArgs('--sh-checkpoint', shParts),
      '--task-start',
      TASK_START,
      '--out-dir',
      join(sub, 'out'),
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const whole = await pair('shards-whole', fcRows, shRows);
    const w = await diff([
      '--fc',
      whole.fc.file,
      '--sh',
      whole.sh.file,
      '--task-start',
      TASK_START,
      '--out-dir',
      whole.out,
    ]);
    expect(w.code).toBe(0);
    expect(readFileSync(join(sub, 'out', 'report.csv'), 'utf8')).toBe(
      readFileSync(join(whole.out, 'report.csv'), 'utf8'),
    );
    const summary = JSON.parse(readFileSync(join(sub, 'out', 'summary.json'), 'utf8')) as {
      shards: string[];
      wholeKeySpace: boolean;
    };
    expect(summary).toMatchObject({ shards: ['1/3', '2/3', '3/3'], wholeKeySpace: true });
    // Shards out of order, or one side missing a shard → exit 4.
    const wrongOrder = await diff([
      '--fc',
      join(sub, 'fc.jsonl'),
      '--sh',
      join(sub, 'sh.jsonl'),
      ...cpArgs('--fc-checkpoint', [fcParts[1]!, fcParts[0]!, fcParts[2]!]),
      ...cpArgs('--sh-checkpoint', shParts),
      '--task-start',
      TASK_START,
      '--out-dir',
      join(sub, 'out2'),
    ]);
    expect(wrongOrder.code).toBe(4);
    expect(wrongOrder.stderr).toMatch(/in shard order/);
    const partial = await diff([
      '--fc',
      join(sub, 'fc-1.jsonl'),
      '--sh',
      join(sub, 'sh.jsonl'),
      ...cpArgs('--sh-checkpoint', shParts),
      '--task-start',
      TASK_START,
      '--out-dir',
      join(sub, 'out3'),
    ]);
    expect(partial.code).toBe(4);
    expect(partial.stderr).toMatch(/different parts of the key space/);
    expect(existsSync(join(sub, 'out2'))).toBe(false);
    expect(existsSync(join(sub, 'out3'))).toBe(false);
  });

  describe('refusals: nothing written', () => {
    const refuse = async (
      name: string,
      arrange: (p: Awaited<ReturnType<typeof pair>>) => void | Promise<void>,
      code: number,
      message: RegExp,
      extra: string[] = [],
    ) => {
      const p = await pair(name);
      await arrange(p);
      // An existing output directory with an earlier diff's files: left exactly as it was.
      mkdirSync(p.out);
      writeFileSync(join(p.out, 'summary.json'), 'earlier');
      const r = await diff([
        '--fc',
        p.fc.file,
        '--sh',
        p.sh.file,
        '--task-start',
        TASK_START,
        '--out-dir',
        p.out,
        ...extra,
      ]);
      expect(r.code).toBe(code);
      expect(r.stderr).toMatch(/^fcctl: [^\n]+\n$/);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
      expect(readdirSync(p.out)).toEqual(['summary.json']);
      expect(readFileSync(join(p.out, 'summary.json'), 'utf8')).toBe('earlier');
      // and a directory the diff would have created is not left behind
      const fresh = join(p.sub, 'fresh');
      const again = await diff([
        '--fc',
        p.fc.file,
        '--sh',
        p.sh.file,
        '--task-start',
        TASK_START,
        '--out-dir',
        fresh,
        ...extra,
      ]);
      expect(again.code).toBe(code);
      expect(existsSync(fresh)).toBe(false);
    };
    const lineOf = (buf: Buffer, n: number) => {
      let start = 0;
      for (let i = 1; i < n; i++) start = buf.indexOf(0x0a, start) + 1;
      return start;
    };

    it('an unsorted manifest: exit 2 naming the line', () =>
      refuse(
        'unsorted',
        async (p) => {
          const swapped = [...SH];
          [swapped[3], swapped[4]] = [swapped[4]!, swapped[3]!];
          const again = await writeManifestFiles(p.sub, 'sh', 'sh', swapped);
          p.sh.file = again.file;
        },
        2,
        new RegExp(`sh manifest .*sh\\.jsonl line 5: answerUuid ${U(5)} is not after ${U(6)}`),
      ));

    it('a duplicate line: exit 2 naming it', () =>
      refuse(
        'duplicate',
        async (p) => {
          await writeManifestFiles(p.sub, 'fc', 'fc', [FC[0]!, FC[1]!, FC[1]!, FC[2]!]);
        },
        2,
        /fc manifest .* line 3: answerUuid .* is not after/,
      ));

    it('a truncated file (cut inside its last line): exit 2', () =>
      refuse(
        'truncated',
        (p) => {
          truncateSync(p.sh.file, p.sh.bytes.length - 20);
        },
        2,
        /line 12: truncated: the file does not end with a newline/,
      ));

    it('a file cut at a line end: it is not what its checkpoint recorded, exit 4', () =>
      refuse(
        'cut',
        (p) => {
          truncateSync(p.sh.file, lineOf(p.sh.bytes, 12));
        },
        4,
        /shorter than its checkpoints record/,
      ));

    it('invalid UTF-8 in a line: exit 2 naming it', () =>
      refuse(
        'utf8',
        (p) => {
          const b = Buffer.from(p.fc.bytes);
          b[lineOf(b, 3) + 20] = 0xff;
          writeFileSync(p.fc.file, b);
        },
        2,
        /fc manifest .* line 3: not valid UTF-8/,
      ));

    it('a line that is not a manifest row: exit 2 naming it', () =>
      refuse(
        'garbage',
        (p) => {
          const b = p.fc.bytes.toString('utf8').split('\n');
          b[1] = b[1]!.replace('"revision":"3"', '"revision":3');
          writeFileSync(p.fc.file, b.join('\n'));
        },
        2,
        /line 2: revision must be a string of digits/,
      ));

    it('bytes changed after the scan (same length, still valid): exit 4', () =>
      refuse(
        'tampered',
        (p) => {
          writeFileSync(
            p.sh.file,
            p.sh.bytes
              .toString('utf8')
              .replace(`"answerUuid":"${U(8)}","revision":"1"`, `"answerUuid":"${U(8)}","revision":"7"`),
          );
        },
        4,
        /have SHA-256 .* not the .* it recorded/,
      ));

    it('an incomplete SH checkpoint: exit 4', async () => {
      const p = await pair('incomplete-sh', FC, SH, { shCompleted: false });
      const r = await diff(['--fc', p.fc.file, '--sh', p.sh.file, '--task-start', TASK_START, '--out-dir', p.out]);
      expect(r.code).toBe(4);
      expect(r.stderr).toMatch(/^fcctl: sh manifest .*: checkpoint .* records an incomplete scan .*manifest scan.*\n$/);
      expect(existsSync(p.out)).toBe(false);
    });

    it('no checkpoint: exit 4', () =>
      refuse(
        'no-checkpoint',
        (p) => rmSync(p.sh.checkpoint),
        4,
        /checkpoint .* does not exist, so the manifest cannot be shown complete/,
      ));
    it('the sides swapped: exit 4', () =>
      refuse(
        'swapped',
        (p) => {
          const fcFile = p.fc.file;
          p.fc.file = p.sh.file;
          p.sh.file = fcFile;
        },
        4,
        /is of a sh scan/,
      ));
    it('manifests of two schools: exit 4', async () => {
      const p = await pair(
        'schools',
        FC.map((r) => ({ ...r, schId: '6' })),
        SH,
        { fcSchool: '6' },
      );
      const r = await diff(['--fc', p.fc.file, '--sh', p.sh.file, '--task-start', TASK_START, '--out-dir', p.out]);
      expect(r.code).toBe(4);
      expect(r.stderr).toMatch(/different scans: FC school 6 .* SH school 5/);
    });
    it('a bad --task-start: exit 2', () =>
      refuse('task-start', () => undefined, 2, /--task-start "yesterday"/, ['--task-start', 'yesterday']));
    it('a missing manifest file: exit 2', () =>
      refuse('missing', (p) => rmSync(p.fc.file), 2, /cannot read fc manifest .*: no such file/));
  });
});
