/**
 * resolve-unknown, issue 17 items 1–3 against the real MariaDB and the flow-center stand-in: an
 * apply answer with a branch outside the seven is DEAD at once (never resent), the status mirror
 * is written only over the value read at claim, and a flow center that refuses our credentials
 * stops the run at the first refusal without charging any row.
 */
import { spawn } from 'node:child_process';
import { beforeEach, describe, expect } from 'vitest';
import { FCCTL_BIN, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import {
  APP_FLOW,
  BIZ_TYPE,
  clearFlowCenter,
  commandsByName,
  commandsOf,
  type Env,
  flowEnv,
  insertCommands,
  linesOf,
  logOf as of,
  makeDue,
  ownedInstance as owned,
  summaryOf,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'applyguard', init: 'sh', flowApps: APP_FLOW });
let dbs: TestDatabases, fc: FlowCenter, env: Env;
test.beforeAll(({ dbs: d, flowCenter }) => void ([dbs, fc, env] = [d, flowCenter, flowEnv(d, flowCenter)]));
beforeEach(() => clearFlowCenter(fc));

const FAST = ['--request-timeout', '2', '--lease-seconds', '30'];
const resolveRun = (args: string[] = [], e = env) =>
  runCli(['--json', 'apply-command', 'resolve-unknown', ...FAST, ...args], { env: e });
const rowEvents = (stdout: string) => linesOf(stdout, 'row');
const byKey = (p: string) => commandsByName(dbs.admin, dbs.shName, p);
const setFlowStatus = (bizId: string, status: number | null) =>
  dbs.admin.query(`UPDATE \`${dbs.shName}\`.service_apply SET flow_status = ? WHERE biz_id = ?`, [status, bizId]);

describe('an apply answer with a branch outside the seven (item 1)', () => {
  test("is DEAD UNEXPECTED_BRANCH at once with the branch kept (cut to last_branch's 32 characters), and never resent", async () => {
    const p = uniquePrefix('ub');
    const id = (k: string) => `${p}-${k}`;
    const long = `NEW_BRANCH_${'X'.repeat(40)}`;
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: id('maybe') },
      { bizId: id('long') },
      { bizId: id('acted') },
    ]);
    await fc.faults([
      { path: '/oapi/flow/apply', kind: 'branch', branch: 'MAYBE_CREATED', bizId: id('maybe') },
      { path: '/oapi/flow/apply', kind: 'branch', branch: long, bizId: id('long') },
      // the flow center created the instance, then answered a branch fcctl does not know
      { path: '/oapi/flow/apply', kind: 'malformed', variant: 'unknown-branch', after: true, bizId: id('acted') },
    ]);
    const r = await resolveRun();
    expect(r.code).toBe(1);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 3,
      posts: 3,
      dead: 3,
      failed: 0,
      deadByReason: { UNEXPECTED_BRANCH: 3 },
      branches: { MAYBE_CREATED: 2, [long.slice(0, 32)]: 1 },
    });
    let rows = await byKey(p);
    expect(rows['maybe']).toMatchObject({
      state: 'DEAD',
      retry_count: 0,
      last_branch: 'MAYBE_CREATED',
      remote_status: null,
      flow_status: null,
    });
    expect(rows['maybe']!.last_error).toMatch(
      /^UNEXPECTED_BRANCH: "MAYBE_CREATED" \(not a branch code of seed 000 §7\.4\), instance FI-synthetic status 10$/,
    );
    expect(rows['long']).toMatchObject({ state: 'DEAD', last_branch: long.slice(0, 32) });
    expect(rows['long']!.last_error).toContain(JSON.stringify(long));
    expect(rows['acted']).toMatchObject({ state: 'DEAD', last_branch: 'MAYBE_CREATED', flow_status: null });
    expect(rowEvents(r.stdout).find((e) => e['bizId'] === id('maybe'))).toMatchObject({
      kind: 'dead',
      reason: 'UNEXPECTED_BRANCH',
      branch: 'MAYBE_CREATED',
    });

    // Later runs leave them for a person: no lookup, no second apply, the branch still there.
    await makeDue(dbs.admin, dbs.shName, p);
    const again = await resolveRun();
    expect(summaryOf(again.stdout)).toMatchObject({ claimed: 0 });
    const log = of(await fc.log(), p);
    expect(
      log
        .filter((e) => e.method === 'POST')
        .map((e) => e.bizId)
        .sort(),
    ).toEqual([id('acted'), id('long'), id('maybe')].sort());
    expect(log).toHaveLength(6);
    rows = await byKey(p);
    expect(rows['acted']).toMatchObject({
      state: 'DEAD',
      last_branch: 'MAYBE_CREATED',
      last_error: expect.stringContaining('MAYBE_CREATED'),
    });
  });
});

describe('an unknown branch that comes without a valid instance', () => {
  test('is DEAD UNEXPECTED_BRANCH with the branch kept (absent, null or invalid instance), never resent; a known branch without one stays APPLY_MALFORMED', async () => {
    const p = uniquePrefix('ubn');
    const id = (k: string) => `${p}-${k}`;
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: id('absent') },
      { bizId: id('null') },
      { bizId: id('bad') },
      { bizId: id('known') },
    ]);
    const answer = (k: string, body: unknown) => ({
      path: '/oapi/flow/apply' as const,
      kind: 'status' as const,
      status: 200,
      body,
      bizId: id(k),
    });
    await fc.faults([
      answer('absent', { branch: 'REJECTED_BY_GUARD' }),
      answer('null', { branch: `REJECTED_BY_GUARD_${'Y'.repeat(30)}`, instance: null }),
      answer('bad', {
        branch: 'REJECTED_BY_GUARD',
        instance: { instanceId: 'FI-1', bizType: BIZ_TYPE, bizId: id('bad'), status: 99 },
      }),
      answer('known', { branch: 'CREATED' }),
    ]);
    const r = await resolveRun();
    expect(r.code).toBe(1);
    let rows = await byKey(p);
    expect(rows['absent']).toMatchObject({
      state: 'DEAD',
      retry_count: 0,
      last_branch: 'REJECTED_BY_GUARD',
      last_error:
        'UNEXPECTED_BRANCH: "REJECTED_BY_GUARD" (not a branch code of seed 000 §7.4), no valid instance (instance is not an object)',
    });
    expect(rows['null']).toMatchObject({
      state: 'DEAD',
      last_branch: `REJECTED_BY_GUARD_${'Y'.repeat(30)}`.slice(0, 32),
      last_error: expect.stringContaining(`"REJECTED_BY_GUARD_${'Y'.repeat(30)}"`),
    });
    expect(rows['bad']).toMatchObject({
      state: 'DEAD',
      last_branch: 'REJECTED_BY_GUARD',
      last_error: expect.stringMatching(/no valid instance \(instance\.status 99 /),
    });
    expect(rows['known']).toMatchObject({
      state: 'FAILED',
      retry_count: 1,
      last_branch: null,
      last_error: expect.stringMatching(/^APPLY_MALFORMED: instance is not an object/),
    });
    // never resent: a later run leaves the DEAD rows alone
    await makeDue(dbs.admin, dbs.shName, p);
    await resolveRun();
    rows = await byKey(p);
    expect(['absent', 'null', 'bad'].map((k) => rows[k]!.state)).toEqual(['DEAD', 'DEAD', 'DEAD']);
    const posts = of(await fc.log(), p).filter((e) => e.method === 'POST');
    expect(
      posts
        .filter((e) => e.bizId !== id('known'))
        .map((e) => e.bizId)
        .sort(),
    ).toEqual([id('absent'), id('bad'), id('null')]);
  });
});

describe('the status mirror is written only over the value read at claim (item 2)', () => {
  test('a status the service writes between claim and write is kept: DONE, MIRROR_CHANGED reported and counted; unchanged values are mirrored', async () => {
    const p = uniquePrefix('mc');
    const id = (k: string) => `${p}-${k}`;
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: id('changed') },
      { bizId: id('was20') },
      { bizId: id('null') },
      { bizId: id('applied') },
      { bizId: id('gone') },
      { bizId: id('none'), serviceApply: false },
      { bizId: id('late'), serviceApply: false },
      { bizId: id('late20'), serviceApply: false },
    ]);
    await setFlowStatus(id('was20'), 20);
    await fc.addInstances([
      owned(id('changed'), 10),
      owned(id('was20'), 40),
      owned(id('null'), 30),
      owned(id('gone'), 20),
      owned(id('none'), 20),
      owned(id('late'), 30),
      owned(id('late20'), 30),
    ]);
    // Two lookups wait long enough for "the service" to write in between; the others answer at once.
    await fc.faults([
      { path: '/oapi/flow/instance', kind: 'latency', ms: 1500, bizId: id('changed') },
      { path: '/oapi/flow/instance', kind: 'latency', ms: 1500, bizId: id('gone') },
      { path: '/oapi/flow/instance', kind: 'latency', ms: 1500, bizId: id('late') },
      { path: '/oapi/flow/instance', kind: 'latency', ms: 1500, bizId: id('late20') },
      { path: '/oapi/flow/apply', kind: 'latency', ms: 1500, bizId: id('applied') },
    ]);
    const run = resolveRun(['--concurrency', '8']);
    // the claim has happened: the rows are leased
    await waitFor(
      'the claim',
      async () => (await commandsOf(dbs.admin, dbs.shName, p)).every((x) => x.claim_owner !== null),
      10_000,
      20,
    );
    // the service's flow callbacks: rejected (30) meanwhile; a withdrawn (40) before the resent apply
    // is answered; one service_apply row deleted
    await setFlowStatus(id('changed'), 30);
    await setFlowStatus(id('applied'), 40);
    await dbs.admin.query(`DELETE FROM \`${dbs.shName}\`.service_apply WHERE biz_id = ?`, [id('gone')]);
    // service_apply rows that were not there at claim: the service's own, never written by us
    await dbs.admin.query(
      `INSERT INTO \`${dbs.shName}\`.service_apply (biz_type, biz_id, flow_status) VALUES (?, ?, NULL), (?, ?, 20)`,
      [BIZ_TYPE, id('late'), BIZ_TYPE, id('late20')],
    );
    const r = await run;
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 8,
      done: 8,
      mirrorChanged: 2,
      mirrorDeleted: 1,
      mirrorMissing: 3,
    });
    const rows = await byKey(p);
    expect(rows['changed']).toMatchObject({ state: 'DONE', remote_status: 10, flow_status: 30, claim_owner: null });
    expect(rows['changed']!.last_error).toMatch(
      /^MIRROR_CHANGED: service_apply\.flow_status was NULL at claim and has changed since; status 10 of instance FI-\d+ status 10 was not mirrored over it$/,
    );
    expect(rows['applied']).toMatchObject({
      state: 'DONE',
      last_branch: 'CREATED',
      remote_status: 10,
      flow_status: 40,
    });
    expect(rows['applied']!.last_error).toMatch(/^MIRROR_CHANGED: /);
    expect(rows['gone']).toMatchObject({ state: 'DONE', remote_status: 20, flow_status: null });
    expect(rows['gone']!.last_error).toMatch(
      /^MIRROR_CHANGED: the service_apply row \(flow_status NULL at claim\) has been deleted since; status 20 of instance FI-\d+ status 20 was not mirrored$/,
    );
    expect(rows['late']).toMatchObject({ state: 'DONE', remote_status: 30, flow_status: null, last_error: null });
    expect(rows['late20']).toMatchObject({ state: 'DONE', remote_status: 30, flow_status: 20, last_error: null });
    // unchanged since the claim: mirrored over it, whatever it held
    expect(rows['was20']).toMatchObject({ state: 'DONE', remote_status: 40, flow_status: 40, last_error: null });
    expect(rows['null']).toMatchObject({ state: 'DONE', remote_status: 30, flow_status: 30, last_error: null });
    expect(rows['none']).toMatchObject({ state: 'DONE', remote_status: 20, flow_status: null, last_error: null });
    const events = rowEvents(r.stdout);
    expect(events.find((e) => e['bizId'] === id('changed'))).toMatchObject({
      kind: 'done',
      via: 'lookup',
      status: 10,
      mirror: 'changed',
    });
    expect(events.find((e) => e['bizId'] === id('applied'))).toMatchObject({
      kind: 'done',
      via: 'apply',
      mirror: 'changed',
    });
    expect(events.find((e) => e['bizId'] === id('gone'))).toMatchObject({
      kind: 'done',
      via: 'lookup',
      mirror: 'deleted',
    });
    // a plain DONE by lookup with its mirror written stays quiet
    expect(events.find((e) => e['bizId'] === id('null'))).toBeUndefined();
  });
});

describe('a flow center that refuses our credentials stops the run at the first refusal (item 3)', () => {
  const wrong = () => ({ ...env, FCCTL_APP_SECRET: 'wrong-secret-issue-17' });
  const unchargedRows = async (p: string, states: Record<string, { state: string; retry_count: number }>) => {
    const rows = await byKey(p);
    for (const [k, want] of Object.entries(states))
      expect(rows[k], k).toMatchObject({ ...want, claim_owner: null, flow_status: null });
  };

  test('a wrong secret (401 for every request): exit 3 with one line naming the settings; no retry charged, rows in flight released; a right secret then settles them', async () => {
    const p = uniquePrefix('s401');
    const n = 40;
    await insertCommands(dbs.admin, dbs.shName, [
      ...Array.from({ length: n }, (_, i) => ({ bizId: `${p}-${i}` })),
      { bizId: `${p}-failed`, state: 'FAILED' as const, retryCount: 5, nextRetryAt: 'NOW() - INTERVAL 1 SECOND' },
    ]);
    const r = await resolveRun(['--concurrency', '4', '--batch-size', '10'], wrong());
    expect(r.code).toBe(3);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^fcctl: flow center refused our credentials \(HTTP 401 on GET \/oapi\/flow\/instance: .*\): check FCCTL_APP_KEY and FCCTL_APP_SECRET; stopped at the first refusal, no retry was charged to any row \(\d+ released\)\n$/,
    );
    expect(r.stderr + r.stdout).not.toContain('wrong-secret-issue-17');
    const s = summaryOf(r.stdout);
    expect(s).toMatchObject({
      exitCode: 3,
      stoppedBy: 'credentials-refused',
      failed: 0,
      dead: 0,
      done: 0,
      credentialsRefused: expect.stringMatching(/^HTTP 401 on GET \/oapi\/flow\/instance: .*SIGNATURE_INVALID/),
    });
    expect(Number(s['released'])).toBe(Number(s['claimed']));
    // at most one request per slot of the limiter reached the flow center: no row after the first refusal
    const log = of(await fc.log(), p);
    expect(log.length).toBeGreaterThanOrEqual(1);
    expect(log.length).toBeLessThanOrEqual(4);
    expect(log.every((e) => e.status === 401 && e.method === 'GET')).toBe(true);
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(
      rows
        .filter((x) => x.biz_id !== `${p}-failed`)
        .every((x) => x.state === 'UNKNOWN' && x.retry_count === 0 && x.last_error === null && x.claim_owner === null),
    ).toBe(true);
    await unchargedRows(p, { failed: { state: 'FAILED', retry_count: 5 } });

    // the same with --dry-run: exit 3, nothing written either way
    const dry = await resolveRun(['--dry-run'], wrong());
    expect(dry.code).toBe(3);
    expect(dry.stderr).toMatch(/refused our credentials.*FCCTL_APP_KEY and FCCTL_APP_SECRET/);

    await fc.addInstances(Array.from({ length: n }, (_, i) => owned(`${p}-${i}`, 30)));
    const ok = await resolveRun();
    expect(summaryOf(ok.stdout)).toMatchObject({ done: n + 1, failed: 0 });
    expect(ok.code).toBe(0);
  });

  test('403 on the first lookup (nothing signed accepted yet): the same stop', async () => {
    const p = uniquePrefix('s403');
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 5 }, (_, i) => ({ bizId: `${p}-${i}` })),
    );
    await fc.faults([
      {
        path: '/oapi/flow/instance',
        kind: 'status',
        status: 403,
        body: { error: 'APP_NOT_PERMITTED', message: 'this app may not look instances up' },
      },
    ]);
    const r = await resolveRun(['--concurrency', '1']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^fcctl: flow center refused our credentials \(HTTP 403 on GET \/oapi\/flow\/instance: .*APP_NOT_PERMITTED.*\): check FCCTL_APP_KEY and FCCTL_APP_SECRET/,
    );
    expect(of(await fc.log(), p)).toHaveLength(1);
    expect(
      (await commandsOf(dbs.admin, dbs.shName, p)).every(
        (x) => x.state === 'UNKNOWN' && x.retry_count === 0 && x.claim_owner === null,
      ),
    ).toBe(true);
  });

  test("a 403 after the flow center accepted our signed requests is the row's: FAILED with backoff and charged, the other rows settle, run after run", async () => {
    const p = uniquePrefix('a403');
    const id = (i: number) => `${p}-R${i}`;
    const ids = [1, 2, 3, 4, 5, 6];
    await insertCommands(
      dbs.admin,
      dbs.shName,
      ids.map((i) => ({
        bizId: id(i),
        state: 'FAILED' as const,
        retryCount: 1,
        nextRetryAt: 'NOW() - INTERVAL 1 SECOND',
      })),
    );
    await fc.faults([
      {
        path: '/oapi/flow/apply',
        kind: 'status',
        status: 403,
        bizId: id(2),
        body: { error: 'FORBIDDEN', message: 'not for this one' },
      },
      { path: '/oapi/flow/instance', kind: 'status', status: 403, bizId: id(4) },
    ]);
    for (const run of [1, 2]) {
      if (run === 2) await makeDue(dbs.admin, dbs.shName, p);
      const r = await resolveRun(['--concurrency', '1']);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).not.toMatch(/refused our credentials/);
      expect(summaryOf(r.stdout)).toMatchObject({
        stoppedBy: 'drained',
        failed: 2,
        dead: 0,
        released: 0,
        failedByReason: { APPLY_HTTP_403: 1, LOOKUP_HTTP_403: 1 },
      });
      const rows = await byKey(p);
      expect(rows['R2']).toMatchObject({
        state: 'FAILED',
        retry_count: 1 + run,
        claim_owner: null,
        last_error: expect.stringMatching(/^APPLY_HTTP_403: .*FORBIDDEN/),
      });
      expect(rows['R4']).toMatchObject({
        state: 'FAILED',
        retry_count: 1 + run,
        claim_owner: null,
        last_error: expect.stringMatching(/^LOOKUP_HTTP_403: /),
      });
      for (const k of ['R1', 'R3', 'R5', 'R6'])
        expect(rows[k], k).toMatchObject({ state: 'DONE', remote_status: 10, last_branch: 'CREATED' });
    }
    const [due] = (await dbs.admin.query(
      `SELECT TIMESTAMPDIFF(SECOND, NOW(), next_retry_at) AS s FROM \`${dbs.shName}\`.flow_apply_command WHERE biz_id = ?`,
      [id(2)],
    )) as unknown as [Array<{ s: number }>];
    // backoff after the second charged failure: 20 s × 2^2
    expect(Number(due[0]!.s)).toBeGreaterThan(70);
    expect(
      of(await fc.log(), p)
        .filter((e) => e.method === 'POST' && e.bizId === id(2))
        .map((e) => e.status),
    ).toEqual([403, 403]);
  });

  test('a 401 stops the run even after requests were accepted (exit 3, uncharged)', async () => {
    const p = uniquePrefix('a401');
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 4 }, (_, i) => ({ bizId: `${p}-${i}`, retryCount: 2 })),
    );
    await fc.faults([{ path: '/oapi/flow/apply', kind: 'status', status: 401, bizId: `${p}-1` }]);
    const r = await resolveRun(['--concurrency', '1']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/HTTP 401 on POST \/oapi\/flow\/apply/);
    expect(summaryOf(r.stdout)).toMatchObject({ stoppedBy: 'credentials-refused', done: 1, failed: 0, dead: 0 });
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(rows.map((x) => [x.state, x.retry_count, x.claim_owner])).toEqual([
      ['DONE', 2, null],
      ...Array(3).fill(['UNKNOWN', 2, null]),
    ]);
  });

  test('other 4xx statuses still fail the row with backoff (a 401/403 is special, not every client error)', async () => {
    const p = uniquePrefix('s429');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }]);
    await fc.faults([{ path: '/oapi/flow/instance', kind: 'status', status: 429, bizId: `${p}-1` }]);
    const r = await resolveRun();
    expect(r.code).toBe(1);
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({
      state: 'FAILED',
      retry_count: 1,
      last_error: expect.stringMatching(/^LOOKUP_HTTP_429: /),
    });
  });
});

describe('a DONE by lookup', () => {
  test('clears last_branch: the row was settled by the lookup, not by a branch left from an earlier answer', async () => {
    const p = uniquePrefix('lb');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-requeued` }, { bizId: `${p}-applied` }]);
    // a requeued row still carries the branch of its earlier answer
    await dbs.admin.query(`UPDATE \`${dbs.shName}\`.flow_apply_command SET last_branch = 'created' WHERE biz_id = ?`, [
      `${p}-requeued`,
    ]);
    await fc.addInstances([owned(`${p}-requeued`, 30)]);
    const r = await resolveRun();
    expect(r.code).toBe(0);
    const rows = await byKey(p);
    expect(rows['requeued']).toMatchObject({ state: 'DONE', remote_status: 30, last_branch: null });
    expect(rows['applied']).toMatchObject({ state: 'DONE', remote_status: 10, last_branch: 'CREATED' });
  });
});

describe('SIGTERM', () => {
  test('no POST starts after the signal: a row whose lookup came back "not found" after it is released uncharged', {
    timeout: 60_000,
  }, async () => {
    const p = uniquePrefix('term');
    const ids = Array.from({ length: 4 }, (_, i) => `${p}-${i}`);
    await insertCommands(
      dbs.admin,
      dbs.shName,
      ids.map((bizId) => ({ bizId, retryCount: 1 })),
    );
    // slow lookups: the signal comes while all four are in flight; each then answers "not found"
    await fc.faults(
      ids.map((bizId) => ({ path: '/oapi/flow/instance' as const, kind: 'latency' as const, ms: 1500, bizId })),
    );
    const child = spawn(
      process.execPath,
      [FCCTL_BIN, '--json', 'apply-command', 'resolve-unknown', ...FAST, '--concurrency', '4'],
      { env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const closed = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    await waitFor(
      'the four lookups',
      async () => of(await fc.log(), p).filter((e) => e.method === 'GET').length >= 4,
      20_000,
      20,
    );
    child.kill('SIGTERM');
    const code = await closed;
    expect(code).toBe(1);
    const summary = summaryOf(out);
    expect(summary).toMatchObject({ exitCode: 1, stoppedBy: 'signal', posts: 0, failed: 0, dead: 0, done: 0 });
    expect(Number(summary['released'])).toBe(Number(summary['claimed']));
    expect(of(await fc.log(), p).filter((e) => e.method === 'POST')).toEqual([]);
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(rows.map((x) => [x.state, x.retry_count, x.claim_owner, x.last_error])).toEqual(
      Array(4).fill(['UNKNOWN', 1, null, null]),
    );
  });
});
