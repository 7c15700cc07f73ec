/**
 * `fcctl status`'s terminal report with ink-testing-library (the blocks statusBlocks makes, drawn by
 * ReportView), and `--watch` in a real terminal (tmux): redrawn, and `q` leaves with exit 0.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { ReportView } from '../../src/lib/cli/ui/views.js';
import { statusBlocks } from '../../src/lib/status/render.js';
import type { StatusDocument } from '../../src/lib/status/types.js';
import { servicesTest } from '../helpers/services.js';
import { TmuxSession } from '../helpers/tmux.js';
import { waitFor } from '../helpers/wait.js';

const queue = {
  status: 'ok' as const,
  states: { PENDING: 1, BROKER_ACCEPTED: 9, FAILED: 0, DEAD: 2, GRANT_REVOKED: 0 },
  estimated: [] as string[],
  due: 1,
  held: 0,
  stuck: 0,
  oldestDueAgeSeconds: 125,
  reasons: { DEAD: [{ reason: 'NO_ROUTE', n: 2 }], FAILED: [] },
  accepted: { last5m: 3, last1h: 9 },
  warnings: [] as string[],
};
const doc: StatusDocument = {
  takenAt: '2026-12-02T01:00:00.000Z',
  outbox: queue,
  applyCommands: { status: 'not configured' },
  fleet: {
    fc: {
      status: 'ok',
      workers: [
        {
          workerId: 'w1',
          command: 'deliveries send',
          host: 'relay-1',
          pid: 77,
          version: '1.0.0',
          state: 'running',
          rowsPerSecond: 12.5,
          startedAt: 's',
          lastBeatAt: '2026-12-02 00:59:00',
          heartbeatSeconds: 5,
          stale: true,
        },
      ],
      stale: 1,
    },
    sh: { status: 'unreachable', error: 'connect ECONNREFUSED' },
  },
  claims: { fc: { status: 'ok', owners: [] }, sh: { status: 'not configured' } },
  pauses: {
    fc: {
      status: 'ok',
      pauses: [
        { command: 'deliveries send', reason: 'broker upgrade', pausedBy: 'ops@h', pausedAt: null, until: null },
      ],
    },
    sh: { status: 'not configured' },
  },
  reconcile: { status: 'not configured' },
  conditions: { dead: true, paused: true, 'stale-workers': true, 'failed-pairs': false },
  failing: ['dead'],
  unjudged: [],
  exitCode: 3,
};

describe('status report view', () => {
  it('draws the conditions first, each section, a stale worker flagged, an unread side said so', () => {
    const frame = render(<ReportView blocks={statusBlocks(doc)} />).lastFrame() ?? '';
    expect(frame.split('\n')[0]).toBe('fcctl status · 2026-12-02T01:00:00.000Z');
    expect(frame).toContain('conditions: dead, paused, stale-workers');
    expect(frame).toContain('PENDING 1 · BROKER_ACCEPTED 9 · FAILED 0 · DEAD 2 · GRANT_REVOKED 0');
    expect(frame).toContain('due 1 · held 0 · stuck 0 · oldest due 2m');
    expect(frame).toContain('accepted by the broker: 3 in the last 5 min · 9 in the last hour');
    expect(frame).toContain('DEAD reasons: NO_ROUTE ×2');
    expect(frame).toMatch(/apply commands\nnot configured/);
    expect(frame).toMatch(/relay-1\s+77\s+1\.0\.0\s+running\s+12\.5\s+2026-12-02 00:59:00\s+STALE/);
    expect(frame).toMatch(/fleet \(SH\)\nunreachable: connect ECONNREFUSED/);
    expect(frame).toContain('deliveries send: broker upgrade — by ops@h, until resumed');
    expect(frame).toMatch(/live claims \(FC\)\nnone/);
    expect(frame).not.toContain('≈');
  });

  it('marks an estimated count and says how to count it', () => {
    const estimated = { ...doc, outbox: { ...queue, estimated: ['BROKER_ACCEPTED'] } };
    const frame = render(<ReportView blocks={statusBlocks(estimated)} />).lastFrame() ?? '';
    expect(frame).toContain('BROKER_ACCEPTED ≈9 · FAILED 0');
    expect(frame).toContain('(≈ estimated: --exact-counts to');
  });
});

const test = servicesTest({ prefix: 'statusview', init: 'all' });
describe('status --watch in a real terminal', () => {
  test('redraws every 2 s; q leaves with exit 0, and so does Ctrl-C', async ({ dbs }) => {
    for (const key of ['q', 'C-c']) await watchUntil(key, dbs.env());
  });
});

async function watchUntil(key: string, env: Record<string, string | undefined>) {
  {
    const t = new TmuxSession(`node ${process.cwd()}/bin/fcctl status --watch`, env);
    try {
      await waitFor('the view', async () => t.screen().includes('every 2 s, q to leave'), 20_000, 200);
      const first = /fcctl status · (\S+)/.exec(t.screen())![1];
      await waitFor('a redraw', async () => /fcctl status · (\S+)/.exec(t.screen())?.[1] !== first, 10_000, 200);
      expect(t.screen()).toContain('outbox');
      t.sendKeys(key);
      await waitFor(`exit 0 after ${key}`, async () => t.screen().includes('[exit 0]'), 10_000, 100);
    } finally {
      t.kill();
    }
  }
}
