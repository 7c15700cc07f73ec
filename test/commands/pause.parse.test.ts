import { describe, expect, it } from 'vitest';
import { createApplyCommandResolveCommand } from '../../src/commands/apply-command/resolve-unknown.js';
import { createDeliveriesSendCommand } from '../../src/commands/deliveries/send.js';
import { createPauseCommand } from '../../src/commands/pause/pause.js';
import { createResumeCommand } from '../../src/commands/pause/resume.js';
import { createReconcileRunCommand } from '../../src/commands/reconcile/run.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('pause: words and flags → options', () => {
  it('the command in its own words, as several words or one; every flag reaches its option', async () => {
    expect(
      (
        await parseWith(createPauseCommand, [
          'pause',
          'deliveries',
          'send',
          '--reason',
          ' incident 42 ',
          '--until',
          '2h',
        ])
      ).options,
    ).toEqual({
      kind: 'pause',
      command: 'deliveries send',
      side: 'fc',
      reason: 'incident 42',
      until: '2h',
    });
    expect(
      (await parseWith(createPauseCommand, ['pause', 'apply-command resolve-unknown', '--reason', 'x'])).options,
    ).toEqual({ kind: 'pause', command: 'apply-command resolve-unknown', side: 'sh', reason: 'x' });
    expect((await parseWith(createPauseCommand, ['pause', 'reconcile', 'run', '--reason', 'x'])).options).toMatchObject(
      { command: 'reconcile run', side: 'sh' },
    );
  });
  it('--list, a table by default, --format json', async () => {
    expect((await parseWith(createPauseCommand, ['pause', '--list'])).options).toEqual({
      kind: 'list',
      format: 'table',
    });
    expect((await parseWith(createPauseCommand, ['pause', '--list', '--format', 'json'])).options).toEqual({
      kind: 'list',
      format: 'json',
    });
  });
  it.each([
    [
      ['pause', 'deliveries', 'scan', '--reason', 'x'],
      /"deliveries scan" cannot be paused: the pausable commands are 'deliveries send', 'apply-command resolve-unknown', 'reconcile run'/,
    ],
    [['pause', '--reason', 'x'], /name the command to pause or resume/],
    [['pause', 'deliveries', 'send'], /needs --reason TEXT/],
    [['pause', 'deliveries', 'send', '--reason', ''], /--reason must not be empty/],
    [['pause', 'deliveries', 'send', '--reason', 'a\nb'], /one line/],
    [['pause', 'deliveries', 'send', '--reason', 'x'.repeat(513)], /longer than 512/],
    [['pause', '--list', 'deliveries', 'send'], /--list takes no command/],
    [['pause', '--list', '--reason', 'x'], /--list takes no command/],
    [['pause', '--list', '--format', 'yaml'], /--format/],
  ])('%j refused: %s', async (argv, message) => {
    expect(await parseError(createPauseCommand, argv)).toMatch(message);
  });
});

describe('resume: words and flags → options', () => {
  it('the command, and an optional --reason for the history', async () => {
    expect((await parseWith(createResumeCommand, ['resume', 'deliveries', 'send'])).options).toEqual({
      command: 'deliveries send',
      side: 'fc',
      reason: null,
    });
    expect(
      (await parseWith(createResumeCommand, ['resume', 'reconcile', 'run', '--reason', 'all clear'])).options,
    ).toEqual({ command: 'reconcile run', side: 'sh', reason: 'all clear' });
  });
  it.each([
    [['resume'], /name the command/],
    [['resume', 'doctor'], /"doctor" cannot be paused/],
    [['resume', 'deliveries', 'send', '--reason', ' '], /must not be empty/],
  ])('%j refused: %s', async (argv, message) => {
    expect(await parseError(createResumeCommand, argv)).toMatch(message);
  });
});

describe('--pause-file on the pausable commands', () => {
  it('deliveries send, apply-command resolve-unknown and reconcile run take it; absent by default', async () => {
    expect(
      (await parseWith(createDeliveriesSendCommand, ['send', '--pause-file', '/run/fcctl/pause-send'])).options
        .pauseFile,
    ).toBe('/run/fcctl/pause-send');
    expect((await parseWith(createDeliveriesSendCommand, ['send'])).options.pauseFile).toBeUndefined();
    expect(
      (await parseWith(createApplyCommandResolveCommand, ['resolve-unknown', '--pause-file', 'p'])).options.pauseFile,
    ).toBe('p');
    expect((await parseWith(createApplyCommandResolveCommand, ['resolve-unknown'])).options.pauseFile).toBeUndefined();
    const run = ['run', '--school', '5', '--form', '0f0e0d0c-0000-4000-8000-000000000001', '--out-dir', 'd'];
    expect(
      ((await parseWith(createReconcileRunCommand, [...run, '--pause-file', 'p'])).options as { pauseFile?: string })
        .pauseFile,
    ).toBe('p');
    expect(
      ((await parseWith(createReconcileRunCommand, run)).options as { pauseFile?: string }).pauseFile,
    ).toBeUndefined();
  });
  it('an empty path is refused', async () => {
    expect(await parseError(createDeliveriesSendCommand, ['send', '--pause-file', ''])).toMatch(/pause-file|path/);
  });
});
