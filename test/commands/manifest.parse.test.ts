import { describe, expect, it } from 'vitest';
import { createManifestPageCommand } from '../../src/commands/manifest/page.js';
import { createManifestScanCommand } from '../../src/commands/manifest/scan.js';
import { parseError, parseWith } from '../helpers/parse.js';

const FORM = '11111111-2222-3333-4444-555555555555';
const CURSOR = '99999999-2222-3333-4444-555555555555';

describe('manifest page: flags → options', () => {
  it('defaults', async () => {
    const { options } = await parseWith(createManifestPageCommand, [
      'page',
      '--side',
      'sh',
      '--school',
      '5',
      '--form',
      FORM,
    ]);
    expect(options).toEqual({ side: 'sh', schId: '5', formUuid: FORM, cursor: null, size: 200 });
  });
  it('every flag reaches its option', async () => {
    const { options } = await parseWith(createManifestPageCommand, [
      'page',
      '--side',
      'fc',
      '--school',
      '9007199254740993',
      '--form',
      FORM,
      '--cursor',
      CURSOR,
      '--size',
      '500',
    ]);
    expect(options).toEqual({ side: 'fc', schId: '9007199254740993', formUuid: FORM, cursor: CURSOR, size: 500 });
  });
  it('a value out of range, a bad side, a missing --form are refused before the run', async () => {
    expect(
      await parseError(createManifestPageCommand, [
        'page',
        '--side',
        'sh',
        '--school',
        '5',
        '--form',
        FORM,
        '--size',
        '501',
      ]),
    ).toMatch(/--size/);
    expect(
      await parseError(createManifestPageCommand, ['page', '--side', 'xx', '--school', '5', '--form', FORM]),
    ).toMatch(/--side.*expected sh or fc/);
    expect(await parseError(createManifestPageCommand, ['page', '--side', 'sh', '--school', '5'])).toMatch(
      /required option '--form <uuid>' not specified/,
    );
  });
});

describe('manifest scan: flags → options', () => {
  it('defaults', async () => {
    const { options } = await parseWith(createManifestScanCommand, [
      'scan',
      '--side',
      'sh',
      '--school',
      '5',
      '--form',
      FORM,
      '--out',
      'sh.jsonl',
    ]);
    expect(options).toEqual({
      side: 'sh',
      schId: '5',
      formUuid: FORM,
      size: 200,
      out: 'sh.jsonl',
      checkpoint: undefined,
      restart: false,
      shard: null,
      throttle: { maxLoad: [], maxLagSeconds: null },
    });
  });
  it('every flag reaches its option', async () => {
    const { options } = await parseWith(createManifestScanCommand, [
      'scan',
      '--side',
      'fc',
      '--school',
      '5',
      '--form',
      FORM,
      '--out',
      'fc.jsonl',
      '--checkpoint',
      'cp.json',
      '--size',
      '7',
      '--shard',
      '2/4',
      '--restart',
    ]);
    expect(options).toEqual({
      side: 'fc',
      schId: '5',
      formUuid: FORM,
      size: 7,
      out: 'fc.jsonl',
      checkpoint: 'cp.json',
      restart: true,
      shard: { index: 2, count: 4 },
      throttle: { maxLoad: [], maxLagSeconds: null },
    });
  });
  it('--max-load and --max-lag reach the throttle limits', async () => {
    const { options } = await parseWith(createManifestScanCommand, [
      'scan',
      '--side',
      'fc',
      '--school',
      '5',
      '--form',
      FORM,
      '--out',
      'fc.jsonl',
      '--max-load',
      'Threads_running=8',
      '--max-lag',
      '0',
    ]);
    expect(options.throttle).toEqual({ maxLoad: [{ variable: 'Threads_running', max: 8 }], maxLagSeconds: 0 });
  });
  it('--max-load repeated: the limits add up; a variable in two of them, a second --max-lag or --replica-url, a limit never met or a counter are exit 2', async () => {
    const scan = ['scan', '--side', 'fc', '--school', '5', '--form', FORM, '--out', 'fc.jsonl'];
    const { options } = await parseWith(createManifestScanCommand, [
      ...scan,
      '--max-load',
      'Threads_running=8',
      '--max-load',
      'Threads_connected=300,Innodb_row_lock_current_waits=2',
    ]);
    expect(options.throttle.maxLoad).toEqual([
      { variable: 'Threads_running', max: 8 },
      { variable: 'Threads_connected', max: 300 },
      { variable: 'Innodb_row_lock_current_waits', max: 2 },
    ]);
    expect(
      await parseError(createManifestScanCommand, [
        ...scan,
        '--max-load',
        'Threads_running=8',
        '--max-load',
        'THREADS_RUNNING=9',
      ]),
    ).toMatch(/--max-load.*THREADS_RUNNING is given twice \(in two --max-load options\)/);
    expect(await parseError(createManifestScanCommand, [...scan, '--max-lag', '5', '--max-lag', '9'])).toMatch(
      /--max-lag is given twice/,
    );
    expect(
      await parseError(createManifestScanCommand, [
        ...scan,
        '--max-lag',
        '5',
        '--replica-url',
        'mysql://u:p@a/x',
        '--replica-url',
        'mysql://u:p@b/x',
      ]),
    ).toMatch(/--replica-url is given twice/);
    expect(await parseError(createManifestScanCommand, [...scan, '--max-load', 'Threads_running=0'])).toMatch(
      /--max-load.*Threads_running=0 can never be met/,
    );
    expect(await parseError(createManifestScanCommand, [...scan, '--max-load', 'Com_select=100'])).toMatch(
      /--max-load.*Com_select only grows/,
    );
  });
  it('a bad shard, a school that is no id, an empty --out are refused before the run', async () => {
    expect(
      await parseError(createManifestScanCommand, [
        'scan',
        '--side',
        'sh',
        '--school',
        '5',
        '--form',
        FORM,
        '--out',
        'x',
        '--shard',
        '5/4',
      ]),
    ).toMatch(/--shard/);
    expect(
      await parseError(createManifestScanCommand, [
        'scan',
        '--side',
        'sh',
        '--school',
        '0',
        '--form',
        FORM,
        '--out',
        'x',
      ]),
    ).toMatch(/--school.*positive whole number/);
    expect(
      await parseError(createManifestScanCommand, [
        'scan',
        '--side',
        'sh',
        '--school',
        '5',
        '--form',
        FORM,
        '--out',
        '',
      ]),
    ).toMatch(/--out.*empty/);
  });
});
