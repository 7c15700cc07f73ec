import { describe, expect, it } from 'vitest';
import { createReconcileDiffCommand } from '../../src/commands/reconcile/diff.js';
import { createReconcileRunCommand } from '../../src/commands/reconcile/run.js';
import { parseError, parseWith } from '../helpers/parse.js';

const FORM = '11111111-2222-3333-4444-555555555555';

describe('reconcile diff: flags → options', () => {
  const required = ['diff', '--fc', 'fc.jsonl', '--sh', 'sh.jsonl', '--task-start', '2026-11-30 01:00:00', '--out-dir', 'out'];
  it('defaults: the checkpoints are left to the runner (beside each manifest)', async () => {
    const { options } = await parseWith(createReconcileDiffCommand, required);
    expect(options).toEqual({ fcFile: 'fc.jsonl', shFile: 'sh.jsonl', fcCheckpoints: undefined, shCheckpoints: undefined, taskStart: '2026-11-30 01:00:00', outDir: 'out' });
  });
  it('every flag reaches its option; a repeated checkpoint collects in order', async () => {
    const { options } = await parseWith(createReconcileDiffCommand, [...required, '--fc-checkpoint', 'a.json', '--fc-checkpoint', 'b.json', '--sh-checkpoint', 'c.json']);
    expect(options).toMatchObject({ fcCheckpoints: ['a.json', 'b.json'], shCheckpoints: ['c.json'] });
  });
  it('an empty path and a missing --task-start are refused before the run', async () => {
    expect(await parseError(createReconcileDiffCommand, ['diff', '--fc', '', '--sh', 'sh.jsonl', '--task-start', 't', '--out-dir', 'out'])).toMatch(/--fc.*empty/);
    expect(await parseError(createReconcileDiffCommand, ['diff', '--fc', 'fc.jsonl', '--sh', 'sh.jsonl', '--out-dir', 'out'])).toMatch(/required option '--task-start <time>' not specified/);
  });
});

describe('reconcile run: flags → options', () => {
  const required = ['run', '--school', '5', '--form', FORM, '--out-dir', 'runs/5'];
  it('defaults', async () => {
    const { options } = await parseWith(createReconcileRunCommand, required);
    expect(options).toEqual({ schId: '5', formUuid: FORM, outDir: 'runs/5', size: 200, restart: false, allowEmpty: false });
  });
  it('every flag reaches its option', async () => {
    const { options } = await parseWith(createReconcileRunCommand, [...required, '--size', '50', '--restart', '--allow-empty', '--metrics-file', 'm.prom']);
    expect(options).toEqual({ schId: '5', formUuid: FORM, outDir: 'runs/5', size: 50, restart: true, allowEmpty: true, metricsFile: 'm.prom' });
  });
  it('a size out of range and a form that is no uuid are refused before the run', async () => {
    expect(await parseError(createReconcileRunCommand, [...required, '--size', '0'])).toMatch(/--size/);
    expect(await parseError(createReconcileRunCommand, ['run', '--school', '5', '--form', 'nope', '--out-dir', 'x'])).toMatch(/--form.*UUID/);
  });
});
