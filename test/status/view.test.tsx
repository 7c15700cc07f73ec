/**
 * `fcctl status`'s terminal report with ink-testing-library (the blocks statusBlocks makes, drawn by
 * ReportView), and `--watch` in a real terminal (tmux): redrawn, and `q` leaves with exit 0.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { ReportView } from '../../src/lib/cli/ui/views.js';
import { statusBlocks, statusLine } from '../../src/lib/status/render.js';
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
          gone: false,
        },
        {
          workerId: 'w2',
          command: 'deliveries send',
          host: 'relay-0',
          pid: 12,
          version: '1.0.0',
          state: 'running',
          rowsPerSecond: 0,
          startedAt: 's',
          lastBeatAt: '2026-12-01 20:00:00',
          heartbeatSeconds: 5,
          stale: false,
          gone: true,
        },
      ],
      stale: 1,
      gone: 1,
      live: [],
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
  conditions: {
    dead: true,
    paused: true,
    'stale-workers': true,
    'failed-pairs': false,
    outage: false,
    'not-ready': false,
    'no-relay': true,
    'apply-due': false,
  },
  failing: ['dead'],
  unjudged: [],
  exitCode: 3,
};

const frameOf = (d: StatusDocument, columns = 80) =>
  render(<ReportView blocks={statusBlocks(d, { columns, rows: null, watching: false })} />).lastFrame() ?? '';

describe('status report view', () => {
  it('draws the conditions first, each section, a stale worker flagged, a gone one apart, an unread side said so', () => {
    const frame = frameOf(doc);
    expect(frame.split('\n')[0]).toBe('fcctl status · 2026-12-02T01:00:00.000Z');
    expect(frame.split('\n')[1]).toBe('conditions: dead, paused, stale-workers, no-relay · failing: dead');
    expect(frame).toContain('PENDING 1 · BROKER_ACCEPTED 9 · FAILED 0 · DEAD 2 · GRANT_REVOKED 0');
    expect(frame).toContain('due 1 · held 0 · stuck 0 · oldest due 2m05s · accepted 3 in 5 min, 9 in 1 h');
    expect(frame).toContain('DEAD reasons: NO_ROUTE ×2');
    expect(frame).toMatch(/relay-1\s+77\s+running\s+12\.5\s+2026-12-02 00:59:00\s+STALE/);
    expect(frame).toContain('gone: deliveries send relay-0:12, last beat 2026-12-01 20:00:00 (not counted)');
    expect(frame).not.toMatch(/relay-0\s+12\s+running/);
    expect(frame).toContain('deliveries send: broker upgrade — by ops@h, until resumed');
    expect(frame).not.toContain('≈');
  });

  it('folds the sections with nothing to say into the headline, one line per reason', () => {
    const lines = frameOf(doc).split('\n');
    expect(lines.slice(2, 6)).toEqual([
      'unreachable: connect ECONNREFUSED: fleet (SH)',
      'not configured: apply commands, live claims (SH), pauses in force (SH),',
      'reconcile run --all',
      'none: live claims (FC)',
    ]);
    expect(lines.filter((l) => l === 'none')).toEqual([]);
  });

  it('marks an estimated count and says how to count it', () => {
    const estimated = { ...doc, outbox: { ...queue, estimated: ['BROKER_ACCEPTED'] } };
    const frame = frameOf(estimated);
    expect(frame).toContain('BROKER_ACCEPTED ≈9 · FAILED 0');
    expect(frame).toContain('(≈ estimated: --exact-counts to count)');
  });

  it('no line wider than the terminal, at 80 and 120 columns, long values cut (the whole text: --json)', () => {
    const long = 'x'.repeat(300);
    const wide: StatusDocument = {
      ...doc,
      outbox: {
        ...queue,
        states: { PENDING: 123456789, BROKER_ACCEPTED: 987654321, FAILED: 123456, DEAD: 654321, GRANT_REVOKED: 1 },
        reasons: { DEAD: [{ reason: long, n: 2 }], FAILED: [] },
      },
      pauses: {
        fc: {
          status: 'ok',
          pauses: [{ command: 'deliveries send', reason: long, pausedBy: 'o', pausedAt: null, until: null }],
        },
        sh: { status: 'not configured' },
      },
    };
    const fleet = wide.fleet.fc.status === 'ok' ? wide.fleet.fc : null;
    const hosts = { ...fleet!, workers: fleet!.workers.map((w) => ({ ...w, host: `${long}.example` })) };
    const withHosts = { ...wide, fleet: { ...wide.fleet, fc: hosts } };
    for (const columns of [80, 120]) {
      const lines = frameOf(withHosts, columns).split('\n');
      const over = lines.filter((l) => [...l].length > columns);
      expect(over, `${columns}: ${over.join('\n')}`).toEqual([]);
      expect(lines.some((l) => l.includes('…'))).toBe(true);
    }
  });

  it('under --watch cut to the screen: the headline and the outbox stay, a line says what was left out', () => {
    const blocks = statusBlocks(doc, { columns: 80, rows: 14, watching: true });
    const frame = render(<ReportView blocks={blocks} />).lastFrame() ?? '';
    const lines = frame.replace(/\n+$/, '').split('\n');
    expect(lines.length).toBeLessThanOrEqual(13);
    expect(lines[0]).toBe('fcctl status · 2026-12-02T01:00:00.000Z · every 2 s, q to leave');
    expect(frame).toContain('PENDING 1 · BROKER_ACCEPTED 9');
    expect(lines.at(-1)).toMatch(/^… \d+ more lines: a taller terminal, or --json$/);
    // tall enough: nothing cut
    const whole = statusBlocks(doc, { columns: 80, rows: 200, watching: true });
    expect(JSON.stringify(whole)).not.toContain('more lines');
  });
});

describe('status --format line', () => {
  it('one line, the verdict and the conditions first, at most 80 columns', () => {
    expect(statusLine(doc)).toBe('FAILING dead (paused,stale-workers,no-relay) · outbox due 1 (2m05s) dead 2 · ap…');
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
