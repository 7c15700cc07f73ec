/**
 * `fcctl status`'s terminal report with ink-testing-library (the blocks statusBlocks makes, drawn by
 * ReportView), and `--watch` in a real terminal (tmux): redrawn, and `q` leaves with exit 0.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { width } from '../../src/lib/cli/table.js';
import { ReportView } from '../../src/lib/cli/ui/views.js';
import { statusBlocks, statusLine } from '../../src/lib/status/render.js';
import type { StatusDocument } from '../../src/lib/status/types.js';
import { insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { insertDeliveries, uniqueConsumerKey } from '../helpers/deliveries.js';
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
          detail: null,
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
          detail: null,
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
    expect(frame).toMatch(/\nFC\s+deliveries send\s+relay-1\s+77\s+running\s+12\.5\s+2026-12-02 00:59:00\s+STALE\n/);
    expect(frame).toContain('\nFC gone (not counted): deliveries send relay-0:12, last beat 2026-12-01 20:00:00\n');
    expect(frame).not.toMatch(/relay-0\s+12\s+running/);
    expect(frame.split('\n')[2]).toBe('paused deliveries send (FC): broker upgrade — by ops@h, until resumed');
    expect(frame).not.toContain('≈');
  });

  it('folds the sections with nothing to say into the headline, one line per reason', () => {
    const lines = frameOf(doc).split('\n');
    expect(lines.slice(3, 7)).toEqual([
      'unreachable: connect ECONNREFUSED: fleet (SH)',
      'not configured: apply commands, live claims (SH), pauses (SH),',
      'reconcile run --all',
      'none: live claims',
    ]);
    expect(lines.filter((l) => l === 'none')).toEqual([]);
  });

  it('a service in outage: its reason under the table, as it said it, escaped and cut to the width', () => {
    const fleet = doc.fleet.fc.status === 'ok' ? doc.fleet.fc : null;
    const w = fleet!.workers[0]!;
    const reason = `flow center lookup: status 503: \u001b[31mred${'x'.repeat(100)}`;
    const out = {
      ...doc,
      fleet: { ...doc.fleet, fc: { ...fleet!, workers: [{ ...w, state: 'outage', detail: reason }] } },
    };
    const frame = frameOf(out);
    expect(frame).toMatch(/\nFC deliveries send relay-1:77 outage: flow center lookup: status 503: \\u001b\[31…\n/);
    expect(frame).not.toContain('\u001b[31m');
    expect(frame.split('\n').every((l) => [...l].length <= 80)).toBe(true);
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

  it('a narrow pane (a tmux split, 40×10): the title and the note cut too, so the view fits its screen', () => {
    const blocks = statusBlocks(doc, { columns: 40, rows: 10, watching: true });
    const texts = blocks.flatMap((b) => [b.title, ...b.lines]);
    expect(texts.filter((t) => width(t) > 40)).toEqual([]);
    // the frame ink draws: each block's title, its lines and a blank line, one line kept free
    const frame = render(<ReportView blocks={blocks} />).lastFrame() ?? '';
    expect(frame.replace(/\n+$/, '').split('\n').length).toBeLessThanOrEqual(9);
    expect(blocks[0]!.title).toBe('fcctl status · 2026-12-02T01:00:00.000Z…');
  });
});

describe('status --format line', () => {
  it('one line, the verdict and the conditions first, at most 80 columns', () => {
    // exit 3 (the SH fleet unreachable): the line says which database, beside the failing condition
    expect(statusLine(doc)).toBe('FAILING dead; UNREACHABLE SH (paused,stale-workers,no-relay) · outbox due 1 (2m…');
  });

  it('every reason of the exit code: a failing condition stays said when another is not judged (exit 3)', () => {
    const judgedPart: StatusDocument = {
      ...doc,
      fleet: { ...doc.fleet, sh: { status: 'not configured' } },
      unjudged: [{ condition: 'apply-due', sections: ['applyCommands', 'fleet.sh'] }],
    };
    const line = statusLine(judgedPart);
    expect(line).toMatch(/^NOT JUDGED apply-due; FAILING dead /);
    expect([...line].length).toBeLessThanOrEqual(80);
    const healthy: StatusDocument = {
      ...judgedPart,
      conditions: { ...doc.conditions, dead: false, paused: false, 'stale-workers': false, 'no-relay': false },
      failing: [],
      unjudged: [],
      exitCode: 0,
    };
    expect(statusLine(healthy)).toMatch(/^ok · outbox due 1 /);
  });
});

const test = servicesTest({ prefix: 'statusview', init: 'all' });
describe('status --watch in a real terminal', () => {
  test('redraws every 2 s; q leaves with exit 0, and so does Ctrl-C', async ({ dbs }) => {
    for (const key of ['q', 'C-c']) await watchUntil(key, dbs.env());
  });
});

/** A busy fleet: rows due and DEAD, apply commands, two relays (one stale) and a resolver, a pause, a live claim. */
async function busyFleet(dbs: TestDatabases) {
  const [fc, sh] = [`\`${dbs.fcName}\``, `\`${dbs.shName}\``];
  await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: uniqueConsumerKey('vw'), schoolId: 5 }, 3);
  const dead = await insertDeliveries(
    dbs.admin,
    dbs.fcName,
    { consumerKey: uniqueConsumerKey('vd'), schoolId: 6, state: 'DEAD' },
    2,
  );
  await dbs.admin.query(`UPDATE ${fc}.answer_delivery SET last_error = 'NO_ROUTE: y' WHERE event_id IN (?)`, [dead]);
  await insertCommands(dbs.admin, dbs.shName, [
    { bizId: uniquePrefix('vu'), state: 'UNKNOWN' },
    { bizId: uniquePrefix('vx'), state: 'DEAD' },
  ]);
  const worker = (db: string, id: string, command: string, host: string, ago: number) =>
    dbs.admin.query(
      `INSERT INTO ${db}.fcctl_worker (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state) ` +
        "VALUES (?, ?, ?, 4242, '1.0.0', UTC_TIMESTAMP(), UTC_TIMESTAMP() - INTERVAL ? SECOND, 5, 'running')",
      [id, command, host, ago],
    );
  await worker(fc, 'v1', 'deliveries send', 'relay-a.prod.example.internal', 0);
  await worker(fc, 'v2', 'deliveries send', 'relay-b.prod.example.internal', 120);
  await worker(sh, 'v3', 'apply-command resolve-unknown', 'resolver-a.prod.example.internal', 0);
  expect(
    (
      await runCli(['pause', 'deliveries send', '--reason', 'broker upgrade, see the change ticket'], {
        env: dbs.env(),
      })
    ).code,
  ).toBe(0);
}

/** Every line of a screen (wrapped lines joined) fits `width`. */
const overWidth = (screen: string, width: number) => screen.split('\n').filter((l) => [...l].length > width);

describe('status fits the terminal (issue 36 §9)', () => {
  test('80×24 and 120×40: the headline on screen, no line wider than the terminal; --watch at 80×24 keeps the headline and the outbox; --format line is one line', async ({
    dbs,
  }) => {
    await busyFleet(dbs);
    const bin = `node ${process.cwd()}/bin/fcctl`;
    for (const size of [
      { width: 80, height: 24 },
      { width: 120, height: 40 },
    ]) {
      const t = new TmuxSession(`${bin} status`, dbs.env(), size);
      try {
        await waitFor('printed', async () => /\[exit \d\]/.test(t.screen()), 20_000, 200);
        const screen = t.screen({ joined: true });
        expect(screen.split('\n')[0], screen).toMatch(/^fcctl status · /);
        // the resolver is registered and beating: apply-due does not hold
        expect(screen).toContain('conditions: dead, paused, stale-workers\n');
        expect(screen).toMatch(
          /\nFC\s+deliveries send\s+relay-b\S*\s+4242\s+running\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+STALE\n/,
        );
        expect(screen).toMatch(/PENDING 3 · BROKER_ACCEPTED 0 · FAILED 0 · DEAD 2/);
        expect(overWidth(screen, size.width), screen).toEqual([]);
        expect(screen).toContain('[exit 0]');
      } finally {
        t.kill();
      }
    }
    const w = new TmuxSession(`${bin} status --watch`, dbs.env(), { width: 80, height: 24 });
    try {
      await waitFor('the view', async () => w.screen().includes('every 2 s, q to leave'), 20_000, 200);
      await new Promise((r) => setTimeout(r, 2500));
      const screen = w.screen({ joined: true });
      expect(screen).toMatch(/^fcctl status · .* · every 2 s, q to leave\nconditions: dead, paused/);
      expect(screen).toMatch(/PENDING 3 · BROKER_ACCEPTED 0 · FAILED 0 · DEAD 2/);
      expect(screen).toMatch(/due 3 · held 0 · stuck 0/);
      expect(overWidth(screen, 80), screen).toEqual([]);
      w.sendKeys('q');
      await waitFor('exit 0 after q', async () => w.screen().includes('[exit 0]'), 10_000, 100);
    } finally {
      w.kill();
    }
    const l = new TmuxSession(`${bin} status --format line`, dbs.env(), { width: 80, height: 24 });
    try {
      await waitFor('printed', async () => /\[exit \d\]/.test(l.screen()), 20_000, 200);
      const [line, exit] = l.screen({ joined: true }).split('\n');
      expect(exit).toBe('[exit 0]');
      expect([...line!].length).toBeLessThanOrEqual(80);
      expect(line).toMatch(/^ok \(dead,paused,stale-workers\) · outbox due 3 /);
    } finally {
      l.kill();
    }
  }, 90_000);
});

describe('status --watch resized', () => {
  test('a resized terminal is fitted at once, not at the next snapshot: the headline first, no line wider than it', async ({
    dbs,
  }) => {
    // a fleet taller than the screen (the file's databases: its own rows, whatever the other tests planted)
    for (let i = 0; i < 30; i++)
      await dbs.admin.query(
        `INSERT INTO \`${dbs.fcName}\`.fcctl_worker (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state) ` +
          "VALUES (?, 'deliveries send', ?, ?, '1.0.0', UTC_TIMESTAMP(), UTC_TIMESTAMP(), 3600, 'running')",
        [`rz-${i}`, `relay-${i}.prod.example.internal`, 5000 + i],
      );
    const t = new TmuxSession(`node ${process.cwd()}/bin/fcctl status --watch`, dbs.env(), { width: 120, height: 40 });
    try {
      await waitFor('the view', async () => t.screen().includes('every 2 s, q to leave'), 20_000, 200);
      // twice, each read well inside the 2 s between snapshots
      for (const size of [
        { width: 70, height: 20 },
        { width: 60, height: 16 },
      ]) {
        t.resize(size.width, size.height);
        await new Promise((r) => setTimeout(r, 300));
        const screen = t.screen({ joined: true });
        expect(screen.split('\n')[0], screen).toMatch(/^fcctl status · /);
        expect(overWidth(screen, size.width), screen).toEqual([]);
      }
      t.sendKeys('q');
      await waitFor('exit 0 after q', async () => t.screen().includes('[exit 0]'), 10_000, 100);
    } finally {
      t.kill();
    }
  }, 60_000);
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
