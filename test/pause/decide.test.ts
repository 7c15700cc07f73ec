import { pausedGauge } from '../../src/lib/metrics/paused.js';
import { describe, expect, it } from 'vitest';
import {
  listRow,
  parseUntil,
  pausableCommand,
  pauseOfFile,
  pauseOfRow,
  reasonProblem,
  utcIso,
} from '../../src/lib/pause/decide.js';
import { pauseSql } from '../../src/lib/pause/sql.js';

const NOW = Date.parse('2026-12-01T10:00:00Z');
const row = {
  command: 'deliveries send',
  reason: 'incident 42',
  paused_by: 'ops@relay-1',
  paused_at: '2026-12-01 09:00:00',
  until_at: null,
  expired: 0,
};

describe('pausableCommand: the command in its own words, and the database of its pause', () => {
  it.each([
    [['deliveries', 'send'], { ok: true, command: 'deliveries send', side: 'fc' }],
    [['deliveries send'], { ok: true, command: 'deliveries send', side: 'fc' }],
    [['apply-command', 'resolve-unknown'], { ok: true, command: 'apply-command resolve-unknown', side: 'sh' }],
    [['reconcile', ' run '], { ok: true, command: 'reconcile run', side: 'sh' }],
    [['deliveries', 'scan'], { ok: false }],
    [['deliveries'], { ok: false }],
    [['Deliveries', 'send'], { ok: false }],
    [[], { ok: false }],
  ])('%j → %j', (words, want) => {
    expect(pausableCommand(words)).toMatchObject(want);
  });
  it('a refusal names the pausable commands', () => {
    const r = pausableCommand(['manifest', 'scan']);
    expect(!r.ok && r.message).toBe(
      `"manifest scan" cannot be paused: the pausable commands are 'deliveries send', 'apply-command resolve-unknown', 'reconcile run'`,
    );
  });
});

describe('parseUntil: a duration from now or an instant with its offset, in the future, within a year', () => {
  it.each([
    ['90s', { kind: 'in', seconds: 90 }],
    ['30m', { kind: 'in', seconds: 1800 }],
    ['2h', { kind: 'in', seconds: 7200 }],
    ['1d', { kind: 'in', seconds: 86400 }],
    ['2026-12-01T18:00:00+08:00', { kind: 'at', utc: '2026-12-01 10:00:00' }],
    ['2026-12-01T12:30:00Z', { kind: 'at', utc: '2026-12-01 12:30:00' }],
    ['2026-12-01 12:30Z', { kind: 'at', utc: '2026-12-01 12:30:00' }],
    ['2026-12-01T12:30:00.900Z', { kind: 'at', utc: '2026-12-01 12:30:00' }],
  ])('%s → %j', (text, until) => {
    expect(parseUntil(text, NOW - 1000)).toEqual({ ok: true, until });
  });
  it.each([
    ['0s', /from 1s to 366d/],
    ['367d', /from 1s to 366d/],
    ['2h30m', /expected a duration/],
    ['2026-12-01T12:00:00', /expected a duration/],
    ['tomorrow', /expected a duration/],
    ['2026-13-01T12:00:00Z', /expected a duration/],
    // dates Date.parse would roll over into another instant
    ['2027-02-30T18:00:00Z', /expected a duration/],
    ['2027-02-29T18:00:00+08:00', /expected a duration/],
    ['2027-04-31T18:00:00Z', /expected a duration/],
    ['2027-01-10T24:00:00Z', /expected a duration/],
    ['2027-01-10T23:60:00Z', /expected a duration/],
    ['2026-12-01T09:00:00Z', /in the past/],
    ['2026-12-01T10:00:00Z', /in the past/],
    ['2028-12-01T10:00:00Z', /more than 366 days/],
    ['', /expected a duration/],
  ])('%j refused (%s)', (text, message) => {
    const r = parseUntil(text, NOW);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(message);
  });
});

describe('reasonProblem', () => {
  it.each([
    ['incident 42: broker disk alarm', null],
    ['', /must not be empty/],
    ['   ', /must not be empty/],
    ['two\nlines', /one line/],
    ['x'.repeat(512), null],
    ['x'.repeat(513), /longer than 512/],
  ])('%j → %s', (reason, want) => {
    const p = reasonProblem(reason);
    if (want === null) expect(p).toBeNull();
    else expect(p).toMatch(want);
  });
});

describe('pauseOfRow: an expired until counts as not paused', () => {
  it.each([
    [undefined, null],
    [
      row,
      {
        command: 'deliveries send',
        reason: 'incident 42',
        pausedBy: 'ops@relay-1',
        pausedAt: '2026-12-01T09:00:00Z',
        until: null,
        source: 'database',
      },
    ],
    [{ ...row, until_at: '2026-12-01 11:00:00', expired: '0' }, { until: '2026-12-01T11:00:00Z' }],
    [{ ...row, until_at: '2026-12-01 09:30:00', expired: 1 }, null],
    [{ ...row, until_at: '2026-12-01 09:30:00', expired: '1' }, null],
  ])('%j → %j', (r, want) => {
    const p = pauseOfRow(r);
    if (want === null) expect(p).toBeNull();
    else expect(p).toMatchObject(want);
  });
  it('utcIso', () => {
    expect(utcIso('2026-12-01 09:00:00')).toBe('2026-12-01T09:00:00Z');
    expect(utcIso(null)).toBeNull();
  });
});

describe('pauseOfFile: the first line is the reason', () => {
  it.each([
    ['disk full on relay-2\nsecond line\n', 'disk full on relay-2'],
    ['  spaced  \r\nx', 'spaced'],
    ['', 'pause file /run/p exists'],
    ['\nsecond', 'pause file /run/p exists'],
  ])('%j → %j', (text, reason) => {
    expect(pauseOfFile('reconcile run', '/run/p', text)).toEqual({
      command: 'reconcile run',
      reason,
      pausedBy: 'pause file /run/p',
      pausedAt: null,
      until: null,
      source: 'file',
    });
  });
});

describe('listRow and pausedGauge', () => {
  it('a row of pause --list says paused or expired, times in UTC', () => {
    expect(listRow(row, 'fc')).toEqual({
      command: 'deliveries send',
      database: 'FC',
      state: 'paused',
      reason: 'incident 42',
      pausedBy: 'ops@relay-1',
      pausedAt: '2026-12-01T09:00:00Z',
      until: null,
    });
    expect(listRow({ ...row, until_at: '2026-12-01 09:30:00', expired: 1 }, 'sh')).toMatchObject({
      database: 'SH',
      state: 'expired',
      until: '2026-12-01T09:30:00Z',
    });
  });
  it('fcctl_paused{command} 1 or 0', () => {
    expect(pausedGauge('reconcile run', true)).toMatchObject({
      name: 'fcctl_paused',
      samples: [{ labels: { command: 'reconcile run' }, value: 1 }],
    });
    expect(pausedGauge('deliveries send', false).samples[0]!.value).toBe(0);
  });
});

describe('pauseSql: statements as text', () => {
  it('the check is one primary-key read, expiry judged by the database clock in UTC', () => {
    expect(pauseSql.select('deliveries send')).toEqual({
      sql: 'SELECT command, reason, paused_by, paused_at, until_at, (until_at IS NOT NULL AND until_at <= UTC_TIMESTAMP()) AS expired FROM fcctl_pause WHERE command = ?',
      params: ['deliveries send'],
    });
  });
  it.each([
    [{ kind: 'never' } as const, 'NULL', []],
    [{ kind: 'in', seconds: 7200 } as const, 'UTC_TIMESTAMP() + INTERVAL ? SECOND', [7200]],
    [{ kind: 'at', utc: '2026-12-01 10:00:00' } as const, '?', ['2026-12-01 10:00:00']],
  ])('upsert and event with until %j', (until, sqlPart, params) => {
    const up = pauseSql.upsert({ command: 'reconcile run', reason: 'r', pausedBy: 'ops@h', until });
    expect(up.sql).toContain(`VALUES (?, ?, ?, UTC_TIMESTAMP(), ${sqlPart}) ON DUPLICATE KEY UPDATE`);
    expect(up.params).toEqual(['reconcile run', 'r', 'ops@h', ...params]);
    const ev = pauseSql.event({
      command: 'reconcile run',
      action: 'pause',
      reason: 'r',
      until,
      actor: 'ops@h',
      host: 'h',
    });
    expect(ev.sql).toBe(
      `INSERT INTO fcctl_pause_event (command, action, reason, until_at, actor, host, create_time) VALUES (?, ?, ?, ${sqlPart}, ?, ?, UTC_TIMESTAMP())`,
    );
    expect(ev.params).toEqual(['reconcile run', 'pause', 'r', ...params, 'ops@h', 'h']);
  });
});

describe('what a paused run comes to', () => {
  const pause = {
    command: 'reconcile run',
    reason: 'off tonight',
    pausedBy: 'ops@h',
    pausedAt: '2026-12-01T09:00:00Z',
    until: null,
    source: 'database' as const,
  };
  it('reconcile run: exit 0, stoppedBy paused with the pause, no success recorded, fcctl_paused 1; a signal stays exit 1', async () => {
    const { reconcileRunReport } = await import('../../src/lib/reconcile/run/decide.js');
    const stopped = {
      kind: 'stopped',
      run: null,
      resumed: false,
      phase: 'scan-fc',
      reason: 'paused',
      outDir: '/runs/5',
      paused: pause,
    } as const;
    const r = reconcileRunReport({ schId: '5', formUuid: 'f', allowEmpty: false }, stopped, 1200);
    expect(r.exitCode).toBe(0);
    expect(r.fields).toMatchObject({
      stoppedBy: 'paused',
      phase: 'scan-fc',
      paused: { reason: 'off tonight', pausedBy: 'ops@h', source: 'database' },
    });
    expect(r.outcome).toEqual({ exitCode: 0, interrupted: true, paused: true });
    const signal = reconcileRunReport(
      { schId: '5', formUuid: 'f', allowEmpty: false },
      { ...stopped, reason: 'signal', paused: undefined },
      1200,
    );
    expect(signal).toMatchObject({ exitCode: 1, fields: { stoppedBy: 'signal' } });
  });
  it('resolve-unknown: exit 0 (1 when rows failed before the pause), the pause in the summary', async () => {
    const { emptySummary, resolveExitCode, summarizeResolve } = await import(
      '../../src/lib/apply-command/resolve-unknown/decide.js'
    );
    const s = {
      ...emptySummary(),
      stoppedBy: 'paused' as const,
      paused: { ...pause, command: 'apply-command resolve-unknown' },
    };
    expect(resolveExitCode(s)).toBe(0);
    expect(resolveExitCode({ ...s, failed: 1 })).toBe(1);
    expect(
      summarizeResolve('apply-command resolve-unknown', s, {
        exitCode: 0,
        dryRun: false,
        flowUrl: 'http://f',
        seconds: 1,
      }),
    ).toMatchObject({ stoppedBy: 'paused', paused: { reason: 'off tonight' } });
    expect(
      summarizeResolve('apply-command resolve-unknown', emptySummary(), {
        exitCode: 0,
        dryRun: false,
        flowUrl: 'http://f',
        seconds: 1,
      })['paused'],
    ).toBeUndefined();
  });
  it('deliveries send: exit 0, the pause in the summary', async () => {
    const { emptySummary, sendExitCode, summarizeSend } = await import('../../src/lib/deliveries/send/decide.js');
    const s = { ...emptySummary(), stoppedBy: 'paused' as const, paused: { ...pause, command: 'deliveries send' } };
    expect(sendExitCode(s)).toBe(0);
    expect(summarizeSend(s, { dryRun: false }, 1, 'UTC')).toMatchObject({
      stoppedBy: 'paused',
      paused: { reason: 'off tonight', until: null },
    });
  });
});
