import { EventEmitter } from 'node:events';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { describe, expect, it } from 'vitest';
import { commandPath, Resources } from '../../src/commands/context.js';
import { abortOnSignals, SIGNAL_WATCHING_COMMANDS, signalMode } from '../../src/lib/cli/signal.js';
import { buildProgram, interruptedExitCode } from '../../src/main.js';
import { runCli } from '../helpers/cli.js';

const program = await buildProgram(
  {
    io: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, interactive: false } as never,
    env: {},
    now: () => new Date(),
    signal: new AbortController().signal,
  },
  new Resources(),
);
const walk = (c: CommandUnknownOpts): string[] => [commandPath(c), ...c.commands.flatMap(walk)];
const paths = walk(program).filter((p) => p !== '');

describe('signalMode (what the first SIGINT/SIGTERM does to a command)', () => {
  const batch = ['deliveries send', 'reconcile run', 'manifest scan', 'retire-absent'];
  const atOnce = ['doctor', 'deliveries scan', 'apply-command scan', 'db check'];
  it.each([...batch.map((p) => [p, 'stop-at-check'] as const), ...atOnce.map((p) => [p, 'exit-at-once'] as const)])(
    '%s → %s',
    (path, mode) => {
      expect(signalMode(path)).toBe(mode);
    },
  );

  it('every command the list names exists (a typo would make a batch command die at once)', () => {
    for (const p of SIGNAL_WATCHING_COMMANDS) expect(paths).toContain(p);
  });
});

describe('abortOnSignals', () => {
  /** A process stand-in: signals are emitted, exit is recorded instead of ending the test. */
  const fakeProc = () => {
    const exits: number[] = [];
    const proc = Object.assign(new EventEmitter(), {
      exit: (code: number) => void exits.push(code),
    }) as unknown as NodeJS.Process;
    return { proc, exits };
  };

  it('a command that does not watch the signal ends at once on the first one, exit 1', () => {
    const { proc, exits } = fakeProc();
    const s = abortOnSignals(proc);
    s.setMode('exit-at-once');
    proc.emit('SIGTERM', 'SIGTERM');
    expect(exits).toEqual([1]);
    s.dispose();
  });

  it('a batch command gets the abort on the first signal; the second ends it at once with exit 1 (was 130)', () => {
    const { proc, exits } = fakeProc();
    const s = abortOnSignals(proc);
    s.setMode('stop-at-check');
    proc.emit('SIGINT', 'SIGINT');
    expect({ aborted: s.signal.aborted, exits }).toEqual({ aborted: true, exits: [] });
    proc.emit('SIGTERM', 'SIGTERM');
    expect(exits).toEqual([1]);
    s.dispose();
  });
});

describe('an interrupt is exit 1 at the end of main, in every command', () => {
  // aborted, every exit code but 0 stands; 0 becomes 1 (not all was done)
  const abortedRuns = [0, 1, 2, 3, 4].map((code) => [code, true, code === 0 ? 1 : code] as const);
  it.each([...abortedRuns, [0, false, 0] as const])('exit %i, aborted %s → %i', (code, aborted, want) => {
    expect(interruptedExitCode(code, aborted)).toBe(want);
  });

  it('a command that finished without looking at the signal: exit 1, and its summary says 1 (was 0)', async () => {
    const ac = new AbortController();
    ac.abort(new Error('stopped by SIGTERM'));
    const c = await runCli(['--json', 'config', 'show'], { signal: ac.signal });
    expect(c.code).toBe(1);
    const summaries = c.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l['type'] === 'summary');
    expect(summaries).toMatchObject([{ command: 'config show', exitCode: 1 }]);
  });
});
