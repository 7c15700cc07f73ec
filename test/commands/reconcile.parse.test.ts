import { describe, expect, it } from 'vitest';
import { createReconcileDiffCommand } from '../../src/commands/reconcile/diff.js';
import { createReconcileHistoryCommand } from '../../src/commands/reconcile/history.js';
import { createReconcileRunCommand } from '../../src/commands/reconcile/run.js';
import { parseError, parseWith } from '../helpers/parse.js';

const FORM = '11111111-2222-3333-4444-555555555555';

describe('reconcile diff: flags → options', () => {
  const required = [
    'diff',
    '--fc',
    'fc.jsonl',
    '--sh',
    'sh.jsonl',
    '--task-start',
    '2026-11-30 01:00:00',
    '--out-dir',
    'out',
  ];
  it('defaults: the checkpoints are left to the runner (beside each manifest)', async () => {
    const { options } = await parseWith(createReconcileDiffCommand, required);
    expect(options).toEqual({
      fcFile: 'fc.jsonl',
      shFile: 'sh.jsonl',
      fcCheckpoints: undefined,
      shCheckpoints: undefined,
      taskStart: '2026-11-30 01:00:00',
      outDir: 'out',
    });
  });
  it('every flag reaches its option; a repeated checkpoint collects in order', async () => {
    const { options } = await parseWith(createReconcileDiffCommand, [
      ...required,
      '--fc-checkpoint',
      'a.json',
      '--fc-checkpoint',
      'b.json',
      '--sh-checkpoint',
      'c.json',
    ]);
    expect(options).toMatchObject({ fcCheckpoints: ['a.json', 'b.json'], shCheckpoints: ['c.json'] });
  });
  it('an empty path and a missing --task-start are refused before the run', async () => {
    expect(
      await parseError(createReconcileDiffCommand, [
        'diff',
        '--fc',
        '',
        '--sh',
        'sh.jsonl',
        '--task-start',
        't',
        '--out-dir',
        'out',
      ]),
    ).toMatch(/--fc.*empty/);
    expect(
      await parseError(createReconcileDiffCommand, [
        'diff',
        '--fc',
        'fc.jsonl',
        '--sh',
        'sh.jsonl',
        '--out-dir',
        'out',
      ]),
    ).toMatch(/required option '--task-start <time>' not specified/);
  });
});

describe('reconcile run: flags → options', () => {
  const required = ['run', '--school', '5', '--form', FORM, '--out-dir', 'runs/5'];
  it('defaults', async () => {
    const { options } = await parseWith(createReconcileRunCommand, required);
    expect(options).toEqual({
      schId: '5',
      formUuid: FORM,
      outDir: 'runs/5',
      size: 200,
      restart: false,
      allowEmpty: false,
      throttle: { maxLoad: [], maxLagSeconds: null },
    });
  });
  it('every flag reaches its option', async () => {
    const { options } = await parseWith(createReconcileRunCommand, [
      ...required,
      '--size',
      '50',
      '--restart',
      '--allow-empty',
      '--metrics-file',
      'm.prom',
    ]);
    expect(options).toEqual({
      schId: '5',
      formUuid: FORM,
      outDir: 'runs/5',
      size: 50,
      restart: true,
      allowEmpty: true,
      metricsFile: 'm.prom',
      throttle: { maxLoad: [], maxLagSeconds: null },
    });
  });
  it('--max-load, --max-lag and --replica-url reach the throttle limits; --replica-url alone is refused', async () => {
    const { options } = await parseWith(createReconcileRunCommand, [
      ...required,
      '--max-load',
      'Threads_running=25,Threads_connected=300',
      '--max-lag',
      '10',
      '--replica-url',
      'mysql://u:pw@replica/fc',
    ]);
    expect((options as { throttle: unknown }).throttle).toEqual({
      maxLoad: [
        { variable: 'Threads_running', max: 25 },
        { variable: 'Threads_connected', max: 300 },
      ],
      maxLagSeconds: 10,
    });
    await expect(
      parseWith(createReconcileRunCommand, [...required, '--replica-url', 'mysql://u:pw@replica/fc']),
    ).rejects.toThrow(/--replica-url is read only by --max-lag/);
    expect(await parseError(createReconcileRunCommand, [...required, '--max-load', 'Threads_running'])).toMatch(
      /--max-load.*STATUS_VARIABLE=N/,
    );
  });
  it('a size out of range and a form that is no uuid are refused before the run', async () => {
    expect(await parseError(createReconcileRunCommand, [...required, '--size', '0'])).toMatch(/--size/);
    expect(
      await parseError(createReconcileRunCommand, ['run', '--school', '5', '--form', 'nope', '--out-dir', 'x']),
    ).toMatch(/--form.*UUID/);
  });
});

describe('reconcile run --all: flags → options', () => {
  const all = ['run', '--all', '--out-dir', 'runs', '--consumer', 'svc-hall'];
  it('defaults: no filter, the run id left to the runner', async () => {
    const { options } = await parseWith(createReconcileRunCommand, all);
    expect(options).toEqual({
      all: {
        outDir: 'runs',
        filter: { schools: [], forms: [] },
        runId: null,
        consumer: 'svc-hall',
        concurrency: 4,
        leaseSeconds: 300,
        size: 200,
        allowEmpty: false,
        failIfDiff: false,
        keepNights: 90,
        throttle: { maxLoad: [], maxLagSeconds: null },
      },
    });
  });
  it('every flag reaches its option; --school and --form repeat', async () => {
    const { options } = await parseWith(createReconcileRunCommand, [
      ...all,
      '--school',
      '5',
      '--school',
      '7',
      '--form',
      FORM,
      '--run-id',
      'night-1',
      '--concurrency',
      '8',
      '--lease-seconds',
      '60',
      '--fail-if-diff',
      '--allow-empty',
      '--size',
      '50',
      '--metrics-file',
      'm.prom',
      '--pause-file',
      'p',
      '--max-load',
      'Threads_running=9',
      '--keep-nights',
      '7',
    ]);
    expect(options).toEqual({
      all: {
        outDir: 'runs',
        filter: { schools: ['5', '7'], forms: [FORM] },
        runId: 'night-1',
        consumer: 'svc-hall',
        concurrency: 8,
        leaseSeconds: 60,
        size: 50,
        allowEmpty: true,
        failIfDiff: true,
        keepNights: 7,
        metricsFile: 'm.prom',
        pauseFile: 'p',
        throttle: { maxLoad: [{ variable: 'Threads_running', max: 9 }], maxLagSeconds: null },
      },
    });
  });
  it('out-of-range numbers, a bad school in the list, a one-pair run given two schools, no --consumer, --restart are refused', async () => {
    expect(await parseError(createReconcileRunCommand, [...all, '--concurrency', '65'])).toMatch(/--concurrency/);
    expect(await parseError(createReconcileRunCommand, [...all, '--lease-seconds', '2'])).toMatch(/--lease-seconds/);
    expect(await parseError(createReconcileRunCommand, [...all, '--school', '5', '--school', 'x'])).toMatch(/--school/);
    for (const bad of ['0', '-1', 'x', '1.5'])
      expect(await parseError(createReconcileRunCommand, [...all, '--keep-nights', bad])).toMatch(/--keep-nights/);
    await expect(
      parseWith(createReconcileRunCommand, ['run', '--school', '5', '--school', '6', '--form', FORM, '--out-dir', 'x']),
    ).rejects.toThrow(/--school given 2 times/);
    await expect(parseWith(createReconcileRunCommand, ['run', '--form', FORM, '--out-dir', 'x'])).rejects.toThrow(
      /give --school \(one school and form\), or --all/,
    );
    await expect(parseWith(createReconcileRunCommand, ['run', '--all', '--out-dir', 'x'])).rejects.toThrow(
      /needs --consumer KEY/,
    );
    await expect(parseWith(createReconcileRunCommand, [...all, '--restart'])).rejects.toThrow(
      /--restart is for one pair/,
    );
  });
});

describe('reconcile history: flags → options', () => {
  it('defaults: every school and form, the last 30 nights, a table', async () => {
    const { options } = await parseWith(createReconcileHistoryCommand, ['history']);
    expect(options).toEqual({ schools: [], forms: [], last: 30, format: 'table', pairs: false });
  });
  it('every flag reaches its option; --school and --form repeat', async () => {
    const { options } = await parseWith(createReconcileHistoryCommand, [
      'history',
      '--school',
      '5',
      '--school',
      '7',
      '--form',
      FORM,
      '--last',
      '3',
      '--format',
      'csv',
      '--pairs',
    ]);
    expect(options).toEqual({ schools: ['5', '7'], forms: [FORM], last: 3, format: 'csv', pairs: true });
  });
  it('--last 0, --last not a number, an unknown format, a bad school are refused', async () => {
    for (const bad of ['0', 'x', '-2', '2.5'])
      expect(await parseError(createReconcileHistoryCommand, ['history', '--last', bad])).toMatch(/--last/);
    expect(await parseError(createReconcileHistoryCommand, ['history', '--format', 'xml'])).toMatch(/--format/);
    expect(await parseError(createReconcileHistoryCommand, ['history', '--school', 'x'])).toMatch(/--school/);
  });
});
