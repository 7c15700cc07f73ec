/**
 * `fcctl status`'s pure decisions (issue 29 §2): `--fail-if` parsed, each condition over every
 * combination of the facts it reads (sections read, not configured, unreachable), the exit code over
 * every subset of conditions held × asked, the run's ETA, and the mode `--watch` runs in.
 */
import { describe, expect, it } from 'vitest';
import { registryCommand } from '../../src/lib/service/sql.js';
import {
  countMode,
  EXACT_BELOW_ROWS,
  queueOf,
  claimOwnerOf,
  conditionsOf,
  type ConditionFacts,
  failingOf,
  parseFailIf,
  processOfToken,
  RELAY_COMMAND,
  RESOLVER_COMMAND,
  reconcileRunOf,
  runEta,
  statusExitCode,
  statusMode,
  unjudgedLine,
  unjudgedOf,
} from '../../src/lib/status/decide.js';
import { FAIL_CONDITIONS, type FailCondition } from '../../src/lib/status/types.js';

const subsets = <T>(xs: readonly T[]): T[][] => {
  const out: T[][] = [[]];
  for (const x of xs) for (const s of out.slice()) out.push([...s, x]);
  return out;
};

type Read = 'ok' | 'not configured' | 'unreachable';
const READS: Read[] = ['ok', 'not configured', 'unreachable'];
const NOT_READ = { status: 'not configured' } as const;
const sec = <T extends object>(r: Read, body: T) =>
  r === 'ok'
    ? ({ status: 'ok', ...body } as const)
    : r === 'unreachable'
      ? ({ status: 'unreachable', error: 'x' } as const)
      : ({ status: 'not configured' } as const);

/** The side a condition's facts are on: both, or FC alone (the outbox's relay), SH alone (the apply commands' resolver). */
const HOME: Record<FailCondition, 'both' | 'fc' | 'sh'> = {
  dead: 'both',
  paused: 'both',
  'stale-workers': 'both',
  'failed-pairs': 'both',
  outage: 'both',
  'not-ready': 'both',
  'no-relay': 'fc',
  'apply-due': 'sh',
};
/** The service that takes a side's due rows, live and running. */
const SERVICE = {
  fc: { command: RELAY_COMMAND, state: 'running', n: 1 },
  sh: { command: RESOLVER_COMMAND, state: 'running', n: 2 },
};

/**
 * Facts where exactly the conditions in `on` are present, each section of `side` read as `read`
 * (rows are due on both queues; each side's service is registered unless its due condition is on).
 */
function facts(on: readonly FailCondition[], read: Read, side: 'fc' | 'sh'): ConditionFacts {
  const other = side === 'fc' ? 'sh' : 'fc';
  const states = (dead: boolean) => ({ states: { DEAD: dead ? 2 : 0, PENDING: 7 }, due: 3 });
  const deadHere = on.includes('dead');
  const dueWithout = side === 'fc' ? 'no-relay' : 'apply-due';
  const live = [
    ...(on.includes(dueWithout) ? [] : [SERVICE[side]]),
    // a stale or gone row of the service is no service: it is not in `live`
    ...(on.includes('outage') ? [{ command: 'x', state: 'outage', n: 1 }] : []),
    ...(on.includes('not-ready') ? [{ command: 'x', state: 'starting', n: 1 }] : []),
    { command: 'x', state: 'running', n: 0 },
  ];
  return {
    outbox: sec(side === 'fc' ? read : 'ok', states(side === 'fc' && deadHere)),
    applyCommands: sec(side === 'sh' ? read : 'ok', states(side === 'sh' && deadHere)),
    fleet: {
      [side]: sec(read, { stale: on.includes('stale-workers') ? 1 : 0, live }),
      [other]: sec('ok', { stale: 0, live: [SERVICE[other]] }),
    } as unknown as ConditionFacts['fleet'],
    pauses: {
      [side]: sec(read, { pauses: on.includes('paused') ? [{}] : [] }),
      [other]: sec('ok', { pauses: [] }),
    } as unknown as ConditionFacts['pauses'],
    reconcile: sec(read, { run: { failed: on.includes('failed-pairs') ? 1 : 0 } }),
  };
}

describe('parseFailIf', () => {
  it('takes every subset of the names, in any order, duplicates once', () => {
    for (const s of subsets(FAIL_CONDITIONS).filter((x) => x.length > 0)) {
      expect(parseFailIf(s.join(','))).toEqual({ ok: true, conditions: s });
      expect(parseFailIf([...s].reverse().join(', '))).toEqual({ ok: true, conditions: [...s].reverse() });
    }
    expect(parseFailIf('dead,dead')).toEqual({ ok: true, conditions: ['dead'] });
  });
  it('refuses an unknown name, an empty one, and other spellings', () => {
    for (const bad of ['bogus', 'dead,bogus', '', 'dead,', 'DEAD', 'stale_workers', 'failed-pair'])
      expect(parseFailIf(bad)).toMatchObject({ ok: false, message: expect.stringMatching(/^unknown condition /) });
  });
});

describe('conditionsOf', () => {
  it('each condition holds exactly when its fact is present in a section that was read', () => {
    // a service in outage is not ready either (its /readyz is 503)
    const present = (on: readonly FailCondition[], name: FailCondition) =>
      on.includes(name) || (name === 'not-ready' && on.includes('outage'));
    for (const on of subsets(FAIL_CONDITIONS))
      for (const read of READS)
        for (const side of ['fc', 'sh'] as const) {
          const c = conditionsOf(facts(on, read, side));
          for (const name of FAIL_CONDITIONS)
            expect(c[name], `${name} ${on} ${read} ${side}`).toBe(
              read === 'ok' && present(on, name) && HOME[name] !== (side === 'fc' ? 'sh' : 'fc'),
            );
        }
  });
  it('rows due with the service registered but stale or gone: no live one, the condition holds; none due: it does not', () => {
    const f = facts([], 'ok', 'fc');
    const noLive = { status: 'ok', stale: 1, live: [] } as const;
    expect(conditionsOf({ ...f, fleet: { ...f.fleet, fc: noLive } })['no-relay']).toBe(true);
    expect(conditionsOf({ ...f, fleet: { ...f.fleet, sh: noLive } })['apply-due']).toBe(true);
    const noneDue = { status: 'ok', states: {}, due: 0 } as const;
    const idle = { ...f, outbox: noneDue, applyCommands: noneDue, fleet: { fc: noLive, sh: noLive } };
    expect(conditionsOf(idle)['no-relay']).toBe(false);
    expect(conditionsOf(idle)['apply-due']).toBe(false);
    // a paused relay is registered and live: not no-relay, but paused and not-ready
    const paused = { status: 'ok', stale: 0, live: [{ command: RELAY_COMMAND, state: 'paused', n: 1 }] } as const;
    const c = conditionsOf({ ...f, fleet: { ...f.fleet, fc: paused } });
    expect([c['no-relay'], c['not-ready'], c.outage]).toEqual([false, true, false]);
  });
  it('apply-due per app key: each app key with commands due needs a live resolver of its own (or one of an fcctl naming none)', () => {
    const f = facts([], 'ok', 'sh');
    const judge = (dueAppKeys: readonly string[], commands: readonly string[]) =>
      conditionsOf({
        ...f,
        applyCommands: { status: 'ok', states: {}, due: 2, dueAppKeys },
        fleet: {
          ...f.fleet,
          sh: { status: 'ok', stale: 0, live: commands.map((command) => ({ command, state: 'running', n: 1 })) },
        },
      })['apply-due'];
    const r = (key: string) => registryCommand(RESOLVER_COMMAND, key);
    const table: Array<[string, readonly string[], readonly string[], boolean]> = [
      ['another key only', ['A'], [r('B')], true],
      ['its own key', ['A'], [r('A')], false],
      ['two keys, one served', ['A', 'B'], [r('A')], true],
      ['two keys, both served', ['A', 'B'], [r('B'), r('A')], false],
      ['a resolver naming no key (an older fcctl) serves any', ['A'], [RESOLVER_COMMAND], false],
      ['a key that only starts with the served one', ['AB'], [r('A')], true],
      ['a relay is no resolver', ['A'], [`deliveries send A`], true],
      ['a key cut at the column: its beginning matches', ['K'.repeat(40)], [r('K'.repeat(40))], false],
      ['cut at the column: another key with that beginning too', [`${'K'.repeat(34)}Z`], [r('K'.repeat(40))], false],
    ];
    for (const [name, keys, commands, holds] of table) expect(judge(keys, commands), name).toBe(holds);
    expect(r('K'.repeat(40))).toHaveLength(64);
  });
  it('no run at all: no failed pairs', () => {
    const f = facts([], 'ok', 'fc');
    expect(conditionsOf({ ...f, reconcile: { status: 'ok', run: null } })['failed-pairs']).toBe(false);
  });
});

describe('failingOf and statusExitCode', () => {
  it('1 exactly when an asked condition holds, 3 whenever a side did not answer, else 0', () => {
    for (const held of subsets(FAIL_CONDITIONS))
      for (const asked of subsets(FAIL_CONDITIONS)) {
        const conditions = Object.fromEntries(FAIL_CONDITIONS.map((c) => [c, held.includes(c)])) as Record<
          FailCondition,
          boolean
        >;
        const failing = failingOf(conditions, asked);
        expect(failing).toEqual(asked.filter((c) => held.includes(c)));
        expect(statusExitCode({ unreachable: 0, unjudged: 0, failing })).toBe(failing.length > 0 ? 1 : 0);
        expect(statusExitCode({ unreachable: 1, unjudged: 0, failing })).toBe(3);
        expect(statusExitCode({ unreachable: 0, unjudged: 1, failing })).toBe(3);
      }
  });
});

describe('unjudgedOf: a condition asked for whose sections were not all read', () => {
  const NEEDS: Record<FailCondition, { fc: boolean; sh: boolean }> = {
    dead: { fc: true, sh: true },
    paused: { fc: true, sh: true },
    'stale-workers': { fc: true, sh: true },
    // facts() reads the run's section (SH) as `read` whichever side it is given
    'failed-pairs': { fc: true, sh: true },
    outage: { fc: true, sh: true },
    'not-ready': { fc: true, sh: true },
    'no-relay': { fc: true, sh: false },
    'apply-due': { fc: false, sh: true },
  };
  it('is every asked condition that reads the side not read, and nothing when all was read', () => {
    for (const asked of subsets(FAIL_CONDITIONS))
      for (const read of READS)
        for (const side of ['fc', 'sh'] as const) {
          const u = unjudgedOf(facts([], read, side), asked);
          const expected = read === 'ok' ? [] : asked.filter((c) => NEEDS[c][side]);
          expect(
            u.map((x) => x.condition),
            `${asked} ${read} ${side}`,
          ).toEqual(expected);
        }
  });
  it('is not a condition that holds on the side read: one DEAD row read is enough', () => {
    for (const c of FAIL_CONDITIONS.filter((x) => x !== 'apply-due')) {
      // the condition holds on FC's sections (the run's, for failed-pairs); every other SH section not read
      const f = facts([c], 'ok', 'fc');
      const g: ConditionFacts = {
        ...f,
        applyCommands: NOT_READ,
        fleet: { ...f.fleet, sh: NOT_READ },
        pauses: { ...f.pauses, sh: NOT_READ },
      };
      expect(conditionsOf(g)[c], c).toBe(true);
      expect(unjudgedOf(g, [c]), c).toEqual([]);
    }
    // apply-due holds on SH's sections, FC not read
    const a = facts(['apply-due'], 'ok', 'sh');
    const onlySh: ConditionFacts = { ...a, outbox: NOT_READ, fleet: { ...a.fleet, fc: NOT_READ } };
    expect(conditionsOf(onlySh)['apply-due']).toBe(true);
    expect(unjudgedOf(onlySh, ['apply-due', 'no-relay'])).toEqual([
      { condition: 'no-relay', sections: ['outbox', 'fleet.fc'] },
    ]);
    const deadOnSh = { ...facts(['dead'], 'ok', 'sh'), outbox: NOT_READ };
    expect(conditionsOf(deadOnSh).dead).toBe(true);
    expect(unjudgedOf(deadOnSh, ['dead'])).toEqual([]);
    // a condition that does not hold on what was read is still not judged
    const noFcPauses = { ...deadOnSh, pauses: { ...deadOnSh.pauses, fc: NOT_READ } };
    expect(unjudgedOf(noFcPauses, ['dead', 'paused']).map((u) => u.condition)).toEqual(['paused']);
  });
  it('names the sections and says why, one line', () => {
    const f = facts([], 'not configured', 'sh');
    const u = unjudgedOf(f, ['dead', 'failed-pairs', 'stale-workers']);
    expect(u).toEqual([
      { condition: 'dead', sections: ['applyCommands'] },
      { condition: 'failed-pairs', sections: ['reconcile'] },
      { condition: 'stale-workers', sections: ['fleet.sh'] },
    ]);
    expect(unjudgedLine(u, f)).toBe(
      '--fail-if dead cannot be judged: applyCommands not read (SH database not configured: FCCTL_SH_DATABASE_URL); ' +
        'failed-pairs cannot be judged: reconcile not read (SH database not configured: FCCTL_SH_DATABASE_URL); ' +
        'stale-workers cannot be judged: fleet.sh not read (SH database not configured: FCCTL_SH_DATABASE_URL)',
    );
    const down = facts([], 'unreachable', 'fc');
    expect(unjudgedLine(unjudgedOf(down, ['paused']), down)).toBe(
      '--fail-if paused cannot be judged: pauses.fc not read (FC database unreachable: x)',
    );
    expect(unjudgedLine([], f)).toBeNull();
  });
});

describe('the reconcile run', () => {
  it('ETA at the rate finished so far; 0 when all are finished; unknown before any', () => {
    expect(runEta({ total: 10, finished: 4, elapsedSeconds: 60 })).toBe(90);
    expect(runEta({ total: 10, finished: 10, elapsedSeconds: 60 })).toBe(0);
    expect(runEta({ total: 10, finished: 0, elapsedSeconds: 60 })).toBeNull();
    expect(runEta({ total: 0, finished: 0, elapsedSeconds: 0 })).toBe(0);
  });
  it('pairs by state, differences of done pairs, processes without their claim numbers', () => {
    const run = reconcileRunOf(
      'r1',
      [
        { state: 'DONE', n: 6, withDifferences: 2, started: '2026-12-01 01:00:00', elapsed: 120 },
        { state: 'FAILED', n: 1, withDifferences: 0, started: '2026-12-01 01:00:05', elapsed: 115 },
        { state: 'CLAIMED', n: 2, withDifferences: 0, started: '2026-12-01 00:59:59', elapsed: 121 },
        { state: 'PENDING', n: 5, withDifferences: 0, started: null, elapsed: 0 },
      ],
      ['h1:10:ab:3', 'h1:10:ab:4', 'h2:11:cd:1'],
    );
    expect(run).toEqual({
      runId: 'r1',
      startedAt: '2026-12-01 00:59:59',
      total: 14,
      done: 6,
      failed: 1,
      pending: 5,
      claimed: 2,
      withDifferences: 2,
      processes: ['h1:10:ab', 'h2:11:cd'],
      etaSeconds: Math.round((7 * 121) / 7),
    });
    expect(processOfToken('host:1:ff')).toBe('host:1:ff');
  });
});

describe('claim owners and the mode', () => {
  it('host and pid from host:pid:random', () => {
    expect(claimOwnerOf('web-1.x:4242:9fa0', 3, 't')).toEqual({
      owner: 'web-1.x:4242:9fa0',
      host: 'web-1.x',
      pid: 4242,
      rows: 3,
      expiresAt: 't',
    });
    expect(claimOwnerOf('legacy', 1, 't')).toMatchObject({ host: null, pid: null });
  });
  it('--watch: the live view on a terminal, one snapshot with --json, refused off a terminal without it; --format line alone', () => {
    for (const watch of [false, true])
      for (const json of [false, true])
        for (const interactive of [false, true])
          for (const format of ['report', 'line'] as const) {
            const m = statusMode({ watch, json, format, interactive });
            if (format === 'line' && json)
              expect(m).toEqual({ ok: false, message: '--format line and --json are two formats: pass one of them' });
            else if (format === 'line' && watch)
              expect(m).toMatchObject({
                ok: false,
                message: expect.stringMatching(/^--format line prints one snapshot/),
              });
            else if (watch && !json && !interactive)
              expect(m).toMatchObject({ ok: false, message: expect.stringContaining('--watch') });
            else expect(m).toEqual({ ok: true, mode: watch && !json ? 'watch' : 'snapshot' });
          }
  });
});

describe('rows by state: exact, or the history state estimated', () => {
  const base = {
    accepted: { last5m: 1, last1h: 2 },
    due: 0,
    held: 0,
    stuck: 0,
    oldestDueAgeSeconds: null,
    dead: [],
    failed: [],
    warnings: [],
  };
  const STATES = ['PENDING', 'BROKER_ACCEPTED', 'FAILED', 'DEAD', 'GRANT_REVOKED'];

  it('counts exactly below 200,000 estimated rows or when asked, else estimates', () => {
    expect(countMode(0, false)).toBe('exact');
    expect(countMode(EXACT_BELOW_ROWS - 1, false)).toBe('exact');
    expect(countMode(EXACT_BELOW_ROWS, false)).toBe('estimate');
    expect(countMode(5_000_000, true)).toBe('exact');
  });

  it('exact counts: every state as read, a state with none 0, nothing marked estimated', () => {
    const q = queueOf(STATES, 'BROKER_ACCEPTED', {
      ...base,
      counts: [
        { state: 'BROKER_ACCEPTED', n: 9 },
        { state: 'DEAD', n: 2 },
      ],
      estimatedTableRows: null,
    });
    expect(q.states).toEqual({ PENDING: 0, BROKER_ACCEPTED: 9, FAILED: 0, DEAD: 2, GRANT_REVOKED: 0 });
    expect(q.estimated).toEqual([]);
    expect(q.accepted).toEqual({ last5m: 1, last1h: 2 });
  });

  it('estimated: the table estimate less the exact open states, never below 0, and named', () => {
    const counts = [
      { state: 'PENDING', n: 100 },
      { state: 'DEAD', n: 50 },
    ];
    const q = queueOf(STATES, 'BROKER_ACCEPTED', { ...base, counts, estimatedTableRows: 1_000_000 });
    expect(q.states).toEqual({ PENDING: 100, BROKER_ACCEPTED: 999_850, FAILED: 0, DEAD: 50, GRANT_REVOKED: 0 });
    expect(q.estimated).toEqual(['BROKER_ACCEPTED']);
    const low = queueOf(STATES, 'BROKER_ACCEPTED', { ...base, counts, estimatedTableRows: 120 });
    expect(low.states['BROKER_ACCEPTED']).toBe(0);
  });
});
