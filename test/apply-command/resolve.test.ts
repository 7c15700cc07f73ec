import { join } from 'node:path';
import { generationOf } from '../../src/lib/apply-command/types.js';
import { beforeEach, describe, expect } from 'vitest';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { freshDatabases, type TestDatabases } from '../helpers/db.js';
import {
  APP,
  APP_FLOW,
  clearFlowCenter,
  commandsByName,
  commandsOf,
  defaults,
  type Env,
  flowEnv,
  insertCommands,
  linesOf,
  logOf as of,
  makeDue,
  ownedInstance as owned,
  SH_TABLES,
  summaryOf,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import type { FlowCenter, LogEntry } from '../helpers/flow-center.js';
import { servicesTest } from '../helpers/services.js';
import { readProm } from '../helpers/textfile.js';

// a second app the stand-in knows, for instances and commands of another app key
const test = servicesTest({ prefix: 'apply', init: 'sh', flowApps: { ...APP_FLOW, '100099': 'other-app-secret' } });
let dbs: TestDatabases, fc: FlowCenter, env: Env, dir: string;
test.beforeAll(
  ({ dbs: d, flowCenter, tmp }) => void ([dbs, fc, env, dir] = [d, flowCenter, flowEnv(d, flowCenter), tmp]),
);
beforeEach(() => clearFlowCenter(fc));

// A request timeout well above what a loaded test machine needs for a loopback answer.
const FAST = ['--request-timeout', '1', '--lease-seconds', '30'];
const resolveRun = (args: string[] = [], e = env) =>
  runCli(['--json', 'apply-command', 'resolve-unknown', ...FAST, ...args], { env: e });
const rowEvents = (stdout: string) => linesOf(stdout, 'row');
const posts = (log: LogEntry[]) => log.filter((e) => e.method === 'POST');
const shChecksum = () => checksumTables(dbs.admin, dbs.shName, SH_TABLES);

describe('apply-command resolve-unknown: look up first, never resend when found', () => {
  test('1,000 rows whose instance exists with status 30 or 40: zero POSTs, all DONE, status mirrored — also when lookups time out first', async () => {
    const p = uniquePrefix('found');
    const ids = Array.from({ length: 1000 }, (_, i) => `${p}-${i}`);
    await insertCommands(
      dbs.admin,
      dbs.shName,
      ids.map((bizId, i) => ({ bizId, state: i % 3 === 0 ? 'FAILED' : 'UNKNOWN' })),
    );
    await fc.addInstances(ids.map((bizId, i) => owned(bizId, i % 2 === 0 ? 30 : 40, { instanceId: `FI-${bizId}` })));
    // The first 64 lookups never answer.
    await fc.faults([{ path: '/oapi/flow/instance', kind: 'timeout', count: 64 }]);

    const first = await resolveRun(['--concurrency', '16', '--max-consecutive-errors', '100000']);
    expect(first.code).toBe(1);
    expect(summaryOf(first.stdout)).toMatchObject({
      claimed: 1000,
      posts: 0,
      done: 936,
      failed: 64,
      dead: 0,
      failedByReason: { LOOKUP_TIMEOUT: 64 },
    });
    let rows = await commandsOf(dbs.admin, dbs.shName, p);
    const failed = rows.filter((r) => r.state === 'FAILED');
    expect(failed).toHaveLength(64);
    expect(failed.every((r) => r.retry_count === 1)).toBe(true);
    expect(
      failed.every((r) => r.backoff === 20 && r.last_error?.startsWith('LOOKUP_TIMEOUT: ') && r.flow_status === null),
    ).toBe(true);

    await makeDue(dbs.admin, dbs.shName, p);
    const second = await resolveRun(['--concurrency', '16']);
    expect(second.code).toBe(0);
    expect(summaryOf(second.stdout)).toMatchObject({ claimed: 64, posts: 0, done: 64 });

    rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(rows.every((r) => r.state === 'DONE' && r.claim_owner === null)).toBe(true);
    expect(
      rows.every(
        (r, i) =>
          r.remote_status === (i % 2 === 0 ? 30 : 40) &&
          r.flow_status === r.remote_status &&
          r.remote_instance_id === `FI-${ids[i]}`,
      ),
    ).toBe(true);
    const log = of(await fc.log(), p);
    expect(posts(log)).toHaveLength(0);
    expect(log).toHaveLength(1064);
    // A third run finds nothing to do.
    const third = await resolveRun();
    expect(summaryOf(third.stdout)).toMatchObject({ claimed: 0, lookups: 0 });
  });

  test('not found → exactly one POST with the same token and attempt; CREATED → DONE with the created instance', async () => {
    const p = uniquePrefix('nf');
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: `${p}-unknown`, state: 'UNKNOWN', attempt: 3 },
      { bizId: `${p}-failed`, state: 'FAILED', retryCount: 2, nextRetryAt: 'NOW() - INTERVAL 5 SECOND' },
      { bizId: `${p}-old-pending`, state: 'PENDING', createTime: 'NOW() - INTERVAL 11 MINUTE' },
      // not taken: PENDING inside the grace, FAILED not yet due, DONE, DEAD
      { bizId: `${p}-new-pending`, state: 'PENDING', createTime: 'NOW() - INTERVAL 5 MINUTE' },
      { bizId: `${p}-not-due`, state: 'FAILED', nextRetryAt: 'NOW() + INTERVAL 5 MINUTE' },
      { bizId: `${p}-done`, state: 'DONE' },
      { bizId: `${p}-dead`, state: 'DEAD' },
    ]);
    const r = await resolveRun();
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 3,
      lookups: 3,
      posts: 3,
      done: 3,
      doneViaApply: 3,
      branches: { CREATED: 3 },
    });
    const log = of(await fc.log(), p);
    expect(log.map((e) => `${e.method} ${e.bizId}`).sort()).toEqual(
      [
        `GET ${p}-failed`,
        `GET ${p}-old-pending`,
        `GET ${p}-unknown`,
        `POST ${p}-failed`,
        `POST ${p}-old-pending`,
        `POST ${p}-unknown`,
      ].sort(),
    );
    for (const post of posts(log)) {
      // the lookup came first, and the POST carried the row's own token and attempt
      expect(log.find((e) => e.method === 'GET' && e.bizId === post.bizId)!.seq).toBeLessThan(post.seq);
      expect(post.requestToken).toBe(defaults(post.bizId!).requestToken);
      expect(post.attempt).toBe(post.bizId === `${p}-unknown` ? 3 : 1);
    }
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    const byId = Object.fromEntries(rows.map((x) => [x.biz_id.slice(p.length + 1), x]));
    for (const k of ['unknown', 'failed', 'old-pending']) {
      expect(byId[k]).toMatchObject({
        state: 'DONE',
        remote_status: 10,
        flow_status: 10,
        last_branch: 'CREATED',
        last_error: null,
        claim_owner: null,
      });
      expect(byId[k]!.remote_instance_id).toMatch(/^FI-/);
    }
    expect(byId['new-pending']).toMatchObject({ state: 'PENDING', flow_status: null });
    expect(byId['not-due']).toMatchObject({ state: 'FAILED' });
    const created = (await fc.instances()).filter((i) => i.bizId.startsWith(p));
    expect(created.map((i) => [i.bizId, i.requestToken, i.submitterId])).toEqual(
      expect.arrayContaining([[`${p}-unknown`, `tok-${p}-unknown`, '9007199254740993']]),
    );
  });

  test('--pending-grace takes younger PENDING rows too', async () => {
    const p = uniquePrefix('grace');
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: `${p}-1`, state: 'PENDING', createTime: 'NOW() - INTERVAL 3 MINUTE' },
    ]);
    expect(summaryOf((await resolveRun()).stdout)).toMatchObject({ claimed: 0 });
    await resolveRun(['--pending-grace', '2m']);
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({ state: 'DONE' });
  });

  test('found but owned by someone else (any of the three fields) → DEAD OWNERSHIP_MISMATCH, no POST', async () => {
    const p = uniquePrefix('own');
    await insertCommands(
      dbs.admin,
      dbs.shName,
      ['key', 'sub', 'guid'].map((k) => ({ bizId: `${p}-${k}` })),
    );
    await fc.addInstances([
      owned(`${p}-key`, 30, { applyAppKey: '100099' }),
      owned(`${p}-sub`, 10, { submitterId: '9007199254740992' }),
      owned(`${p}-guid`, 40, { flowGuid: 'someone-elses' }),
    ]);
    const r = await resolveRun();
    expect(r.code).toBe(1);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 3,
      posts: 0,
      dead: 3,
      deadByReason: { OWNERSHIP_MISMATCH: 3 },
    });
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(
      rows.every(
        (x) =>
          x.state === 'DEAD' &&
          x.last_error?.startsWith('OWNERSHIP_MISMATCH: ') &&
          x.flow_status === null &&
          x.remote_instance_id === null,
      ),
    ).toBe(true);
    expect(rows.map((x) => x.last_error)).toEqual([
      expect.stringContaining('applyAppKey differ'),
      expect.stringContaining('submitterId differ'),
      expect.stringContaining('flowGuid differ'),
    ]);
    expect(posts(of(await fc.log(), p))).toHaveLength(0);
  });

  test('every branch of the apply guard (lookup lagging behind the instance)', async () => {
    const p = uniquePrefix('br');
    const id = (k: string) => `${p}-${k}`;
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: id('same') },
      { bizId: id('idem') },
      { bizId: id('stale'), attempt: 1 },
      { bizId: id('restart'), attempt: 2 },
      { bizId: id('replay') },
      { bizId: id('concurrent') },
      { bizId: id('created') },
    ]);
    await fc.addInstances([
      owned(id('same'), 30, { requestToken: defaults(id('same')).requestToken }),
      owned(id('idem'), 20, { requestToken: 'another-token' }),
      owned(id('stale'), 30, { requestToken: 'older-token', round: 1 }),
      owned(id('restart'), 40, { requestToken: 'older-token', round: 1 }),
      owned(id('replay'), 30, { requestToken: 'older-token' }),
    ]);
    await fc.faults([
      ...['same', 'idem', 'stale', 'restart', 'replay'].map((k) => ({
        path: '/oapi/flow/instance' as const,
        kind: 'not-found' as const,
        bizId: id(k),
      })),
      { path: '/oapi/flow/apply', kind: 'branch', branch: 'REPLAY_ONLY', bizId: id('replay') },
      { path: '/oapi/flow/apply', kind: 'concurrent', bizId: id('concurrent') },
    ]);
    const r = await resolveRun();
    expect(r.code).toBe(1);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 7,
      posts: 7,
      done: 4,
      dead: 3,
      deadByReason: { UNEXPECTED_BRANCH: 3 },
      branches: {
        SAME_REQUEST: 1,
        IDEMPOTENT: 1,
        STALE_ROUND: 1,
        RESTARTED: 1,
        REPLAY_ONLY: 1,
        CONCURRENT_CREATED: 1,
        CREATED: 1,
      },
    });
    const rows = await commandsByName(dbs.admin, dbs.shName, p);
    expect(rows['same']).toMatchObject({
      state: 'DONE',
      last_branch: 'SAME_REQUEST',
      remote_status: 30,
      flow_status: 30,
    });
    expect(rows['idem']).toMatchObject({
      state: 'DONE',
      last_branch: 'IDEMPOTENT',
      remote_status: 20,
      flow_status: 20,
    });
    expect(rows['concurrent']).toMatchObject({
      state: 'DONE',
      last_branch: 'CONCURRENT_CREATED',
      remote_status: 10,
      flow_status: 10,
    });
    expect(rows['created']).toMatchObject({
      state: 'DONE',
      last_branch: 'CREATED',
      remote_status: 10,
      flow_status: 10,
    });
    for (const k of ['stale', 'restart', 'replay']) {
      expect(rows[k]).toMatchObject({ state: 'DEAD', flow_status: null, remote_status: null });
      expect(rows[k]!.last_error).toMatch(/^UNEXPECTED_BRANCH: /);
    }
    expect([rows['stale']!.last_branch, rows['restart']!.last_branch, rows['replay']!.last_branch]).toEqual([
      'STALE_ROUND',
      'RESTARTED',
      'REPLAY_ONLY',
    ]);
    const events = rowEvents(r.stdout);
    expect(events.find((e) => e['bizId'] === id('restart'))).toMatchObject({
      kind: 'dead',
      reason: 'UNEXPECTED_BRANCH',
      branch: 'RESTARTED',
    });
  });

  test('a flow center that refuses connections: rows FAILED with backoff, retry budget untouched however often it happens', async () => {
    const p = uniquePrefix('refused');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }, { bizId: `${p}-2` }]);
    const down = { ...env, FCCTL_FLOW_URL: 'http://127.0.0.1:1' };
    for (let run = 0; run < 8; run++) {
      const r = await resolveRun([], down);
      expect(r.code).toBe(1);
      expect(summaryOf(r.stdout)).toMatchObject({ failed: 2, dead: 0, failedByReason: { LOOKUP_NETWORK: 2 } });
      const rows = await commandsOf(dbs.admin, dbs.shName, p);
      expect(rows.map((x) => [x.state, x.retry_count, x.backoff])).toEqual([
        ['FAILED', 0, 20],
        ['FAILED', 0, 20],
      ]);
      await makeDue(dbs.admin, dbs.shName, p);
    }
    // back up: settled at once
    await fc.addInstances([owned(`${p}-1`, 30), owned(`${p}-2`, 40)]);
    expect(summaryOf((await resolveRun()).stdout)).toMatchObject({ done: 2 });
  });

  test('an apply that timed out after the flow center acted: FAILED, then the next lookup settles it with no second POST', async () => {
    const p = uniquePrefix('late');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }]);
    await fc.faults([{ path: '/oapi/flow/apply', kind: 'timeout', after: true, count: 1 }]);
    const first = await resolveRun();
    expect(first.code).toBe(1);
    let [row] = await commandsOf(dbs.admin, dbs.shName, p);
    expect(row).toMatchObject({ state: 'FAILED', retry_count: 1, backoff: 20, flow_status: null });
    expect(row!.last_error).toMatch(/^APPLY_TIMEOUT: /);
    await makeDue(dbs.admin, dbs.shName, p);
    const second = await resolveRun();
    expect(summaryOf(second.stdout)).toMatchObject({ done: 1, doneViaLookup: 1, posts: 0 });
    [row] = await commandsOf(dbs.admin, dbs.shName, p);
    expect(row).toMatchObject({ state: 'DONE', remote_status: 10, flow_status: 10, last_error: null });
    expect(posts(of(await fc.log(), p))).toHaveLength(1);
  });

  test('an apply refused before acting (503): FAILED, then resent with the same token → CREATED', async () => {
    const p = uniquePrefix('503');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }]);
    await fc.faults([{ path: '/oapi/flow/apply', kind: 'status', status: 503, count: 1 }]);
    expect((await resolveRun()).code).toBe(1);
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]!.last_error).toMatch(/^APPLY_HTTP_503: /);
    await makeDue(dbs.admin, dbs.shName, p);
    expect((await resolveRun()).code).toBe(0);
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({ state: 'DONE', last_branch: 'CREATED' });
    const sent = posts(of(await fc.log(), p));
    expect(sent.map((e) => [e.requestToken, e.attempt, e.status])).toEqual([
      [`tok-${p}-1`, 1, 503],
      [`tok-${p}-1`, 1, 200],
    ]);
  });

  test('a race lost to another owner at apply time (409) → FAILED, then the lookup sees it → DEAD OWNERSHIP_MISMATCH', async () => {
    const p = uniquePrefix('race');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }]);
    await fc.faults([
      {
        path: '/oapi/flow/apply',
        kind: 'concurrent',
        owner: { applyAppKey: '100099', requestToken: 'theirs' },
        count: 1,
      },
    ]);
    expect((await resolveRun()).code).toBe(1);
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]!.last_error).toMatch(/^APPLY_HTTP_409: /);
    await makeDue(dbs.admin, dbs.shName, p);
    await resolveRun();
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({ state: 'DEAD', retry_count: 1 });
    expect(posts(of(await fc.log(), p))).toHaveLength(1);
  });

  test('timeouts, 5xx, malformed bodies → FAILED with backoff 20 s × 2^n, DEAD after --max-retries', async () => {
    const p = uniquePrefix('err');
    const kinds = [
      { k: 'timeout', fault: { kind: 'timeout' as const }, reason: 'LOOKUP_TIMEOUT' },
      { k: 'drop', fault: { kind: 'drop' as const }, reason: 'LOOKUP_NETWORK' },
      { k: '500', fault: { kind: 'status' as const, status: 500 }, reason: 'LOOKUP_HTTP_500' },
      { k: '502', fault: { kind: 'status' as const, status: 502 }, reason: 'LOOKUP_HTTP_502' },
      { k: '404', fault: { kind: 'status' as const, status: 404 }, reason: 'LOOKUP_HTTP_404' },
      { k: 'notjson', fault: { kind: 'malformed' as const, variant: 'not-json' }, reason: 'LOOKUP_MALFORMED' },
      { k: 'badstatus', fault: { kind: 'malformed' as const, variant: 'bad-status' }, reason: 'LOOKUP_MALFORMED' },
      { k: 'wrongkey', fault: { kind: 'malformed' as const, variant: 'wrong-key' }, reason: 'LOOKUP_MALFORMED' },
      {
        k: 'apply500',
        fault: { kind: 'status' as const, status: 500, path: '/oapi/flow/apply' as const },
        reason: 'APPLY_HTTP_500',
      },
      // a known branch with no instance: not well formed (an unknown branch is DEAD at once, resolve-guards)
      {
        k: 'applybad',
        fault: { kind: 'status' as const, status: 200, body: { branch: 'CREATED' }, path: '/oapi/flow/apply' as const },
        reason: 'APPLY_MALFORMED',
      },
    ];
    await insertCommands(
      dbs.admin,
      dbs.shName,
      kinds.map(({ k }) => ({ bizId: `${p}-${k}` })),
    );
    await fc.faults(
      kinds.map(({ k, fault }) => ({ path: '/oapi/flow/instance' as const, ...fault, bizId: `${p}-${k}` })),
    );
    const backoffs: number[][] = [];
    for (let run = 1; run <= 4; run++) {
      const r = await resolveRun(['--max-retries', '4']);
      expect(r.code).toBe(1);
      const rows = await commandsOf(dbs.admin, dbs.shName, p);
      for (const [i, row] of rows.entries()) {
        expect(row.retry_count).toBe(run);
        expect(row.last_error!.split(':')[0]).toBe(kinds[i]!.reason);
        expect(row.state).toBe(run < 4 ? 'FAILED' : 'DEAD');
        expect(row.flow_status).toBeNull();
      }
      backoffs.push([...new Set(rows.map((x) => x.backoff ?? -1))]);
      await makeDue(dbs.admin, dbs.shName, p);
    }
    expect(backoffs).toEqual([[20], [40], [80], [-1]]);
    // apply failures were after a "not found": exactly one POST per run for those two rows
    const log = of(await fc.log(), p);
    expect(
      posts(log)
        .map((e) => e.bizId)
        .sort(),
    ).toEqual([...Array(4).fill(`${p}-apply500`), ...Array(4).fill(`${p}-applybad`)].sort());
    expect(posts(log).every((e) => e.requestToken === `tok-${e.bizId}`)).toBe(true);
  });

  test('a tampered signature (wrong secret) → 401 → the run stops at once (exit 3, one line naming the settings), no row charged; the secret is never printed', async () => {
    const p = uniquePrefix('sig');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }]);
    const wrong = { ...env, FCCTL_APP_SECRET: 'not-the-secret-xyz' };
    const r = await resolveRun([], wrong);
    expect(r.code).toBe(3);
    expect(`${r.stdout}${r.stderr}`).not.toContain('not-the-secret-xyz');
    expect(r.stderr).toMatch(
      /^fcctl: flow center refused our credentials \(HTTP 401 on GET \/oapi\/flow\/instance: .*SIGNATURE_INVALID.*\): check FCCTL_APP_KEY and FCCTL_APP_SECRET; /,
    );
    const [row] = await commandsOf(dbs.admin, dbs.shName, p);
    expect(row).toMatchObject({ state: 'UNKNOWN', retry_count: 0, last_error: null, claim_owner: null });
    const log = of(await fc.log(), p);
    expect(log.map((e) => [e.method, e.status, e.auth])).toEqual([['GET', 401, 'signature mismatch']]);
    const ok = await resolveRun();
    expect(`${ok.stdout}${ok.stderr}`).not.toContain(APP.secret);
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({ state: 'DONE' });
  });

  test('an owned instance in an earlier round than the attempt: DONE (never resent), flagged ROUND_BEHIND', async () => {
    const p = uniquePrefix('round');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, attempt: 2 }]);
    await fc.addInstances([owned(`${p}-1`, 30, { round: 1 })]);
    const r = await resolveRun();
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ done: 1, roundBehind: 1, posts: 0 });
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({
      state: 'DONE',
      flow_status: 30,
      last_error: expect.stringMatching(/^ROUND_BEHIND: /),
    });
  });

  test('no service_apply row: DONE, reported as mirrorMissing', async () => {
    const p = uniquePrefix('nomirror');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, serviceApply: false }]);
    await fc.addInstances([owned(`${p}-1`, 20)]);
    expect(summaryOf((await resolveRun()).stdout)).toMatchObject({ done: 1, mirrorMissing: 1 });
  });

  test('rows of another apply app key are never touched (counted as otherAppKey)', async () => {
    const p = uniquePrefix('other');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, applyAppKey: '100099' }]);
    const before = await shChecksum();
    const r = await resolveRun();
    expect(summaryOf(r.stdout)).toMatchObject({ claimed: 0, otherAppKey: 1 });
    expect(await shChecksum()).toBe(before);
    expect(of(await fc.log(), p)).toHaveLength(0);
    await dbs.admin.query(`DELETE FROM \`${dbs.shName}\`.flow_apply_command WHERE biz_id LIKE ?`, [`${p}%`]);
  });

  test('--dry-run: lookups only — no claim, no POST, no write', async () => {
    const p = uniquePrefix('dry');
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: `${p}-found` },
      { bizId: `${p}-missing` },
      { bizId: `${p}-foreign` },
    ]);
    await fc.addInstances([owned(`${p}-found`, 30), owned(`${p}-foreign`, 30, { flowGuid: 'x' })]);
    const before = await shChecksum();
    const r = await resolveRun(['--dry-run']);
    expect(summaryOf(r.stdout)).toMatchObject({
      dryRun: true,
      claimed: 3,
      lookups: 3,
      posts: 0,
      done: 1,
      dead: 1,
      wouldPost: 1,
    });
    expect(await shChecksum()).toBe(before);
    const log = of(await fc.log(), p);
    expect(log.every((e) => e.method === 'GET')).toBe(true);
    // clean up for the tests that follow
    await resolveRun();
  });

  test('--dry-run pages through more rows than a batch: each looked up exactly once, --max-rows honoured, nothing written', async () => {
    const p = uniquePrefix('drypages');
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 25 }, (_, i) => ({ bizId: `${p}-${i}` })),
    );
    await fc.addInstances(Array.from({ length: 25 }, (_, i) => owned(`${p}-${i}`, 30)));
    const before = await shChecksum();
    const all = await resolveRun(['--dry-run', '--batch-size', '4', '--concurrency', '3']);
    expect(summaryOf(all.stdout)).toMatchObject({
      dryRun: true,
      claimed: 25,
      lookups: 25,
      done: 25,
      posts: 0,
      stoppedBy: 'drained',
    });
    const looked = of(await fc.log(), p).map((e) => e.bizId);
    expect(new Set(looked).size).toBe(25);
    expect(looked).toHaveLength(25);
    await fc.reset();
    const some = await resolveRun(['--dry-run', '--batch-size', '4', '--max-rows', '10']);
    expect(summaryOf(some.stdout)).toMatchObject({ claimed: 10, lookups: 10, stoppedBy: 'max-rows' });
    expect(await shChecksum()).toBe(before);
    await fc.addInstances(Array.from({ length: 25 }, (_, i) => owned(`${p}-${i}`, 30)));
    await resolveRun();
  });

  test('a flow center answering only errors stops the run (exit 3) and releases untried rows with their budget untouched', async () => {
    const p = uniquePrefix('down');
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 40 }, (_, i) => ({ bizId: `${p}-${i}` })),
    );
    await fc.faults([{ path: '*', kind: 'status', status: 503 }]);
    const r = await resolveRun(['--max-consecutive-errors', '5', '--concurrency', '2', '--batch-size', '10']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^fcctl: flow center gave 5 errors in a row/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    const s = summaryOf(r.stdout);
    expect(s).toMatchObject({ exitCode: 3, stoppedBy: 'flow-center-errors' });
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    const failed = rows.filter((x) => x.state === 'FAILED');
    expect(failed.length).toBeGreaterThanOrEqual(5);
    expect(failed.length).toBeLessThanOrEqual(7);
    expect(rows.filter((x) => x.state === 'UNKNOWN').every((x) => x.retry_count === 0 && x.claim_owner === null)).toBe(
      true,
    );
    await fc.clearFaults();
    await resolveRun();
    await makeDue(dbs.admin, dbs.shName, p);
    await resolveRun();
    expect((await commandsOf(dbs.admin, dbs.shName, p)).every((x) => x.state === 'DONE')).toBe(true);
  });

  test('--max-rows bounds what one run takes', async () => {
    const p = uniquePrefix('max');
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 10 }, (_, i) => ({ bizId: `${p}-${i}` })),
    );
    await fc.addInstances(Array.from({ length: 10 }, (_, i) => owned(`${p}-${i}`, 30)));
    const r = await resolveRun(['--max-rows', '3', '--batch-size', '2']);
    expect(summaryOf(r.stdout)).toMatchObject({ claimed: 3, done: 3, stoppedBy: 'max-rows' });
    expect((await commandsOf(dbs.admin, dbs.shName, p)).filter((x) => x.state === 'DONE')).toHaveLength(3);
    expect(summaryOf((await resolveRun()).stdout)).toMatchObject({ claimed: 7, done: 7, stoppedBy: 'drained' });
  });

  test('JSON lines: one event per row that did not simply settle by lookup, and a summary', async () => {
    const p = uniquePrefix('ev');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-a` }, { bizId: `${p}-b` }]);
    await fc.addInstances([owned(`${p}-a`, 30)]);
    const r = await resolveRun(['--metrics-file', join(dir, `${p}.prom`)]);
    const lines = jsonLines(r.stdout);
    expect(lines.map((l) => l['type'])).toEqual(['row', 'summary']);
    expect(lines[0]).toMatchObject({
      type: 'row',
      bizId: `${p}-b`,
      kind: 'done',
      via: 'apply',
      branch: 'CREATED',
      status: 10,
    });
    const prom = readProm(join(dir, `${p}.prom`));
    expect(prom).toContain('fcctl_rows{command="apply-command resolve-unknown",result="done"} 2');
    expect(prom).toContain('fcctl_run_exit_code{command="apply-command resolve-unknown"} 0');
  });
});

describe('claims do not grow with history', () => {
  test('a run starts after the DONE prefix and each claim walks the primary key from the last one (a range, not a scan from the start)', async () => {
    const { openDb } = await import('../../src/lib/db/connect.js');
    const { claimStart } = await import('../../src/lib/apply-command/resolve-unknown/store.js');
    const { claimSelect } = await import('../../src/lib/apply-command/resolve-unknown/sql.js');
    const own = await freshDatabases('hist');
    const db = await openDb('SH database', own.shUrl);
    try {
      expect((await runCli(['db', 'init', '--side', 'sh'], { env: own.env() })).code).toBe(0);
      expect(await claimStart(db, APP.key, 0)).toBe('0');
      await insertCommands(
        own.admin,
        own.shName,
        Array.from({ length: 300 }, (_, i) => ({ bizId: `done-${i}`, state: 'DONE' as const })),
      );
      await insertCommands(own.admin, own.shName, [
        { bizId: 'todo-1' },
        { bizId: 'todo-2', state: 'DEAD' },
        { bizId: 'todo-3', state: 'FAILED' },
      ]);
      const ids = Object.fromEntries(
        (
          (
            await own.admin.query(
              `SELECT biz_id, id FROM \`${own.shName}\`.flow_apply_command WHERE biz_id LIKE 'todo-%'`,
            )
          )[0] as Array<{ biz_id: string; id: string }>
        ).map((r) => [r.biz_id, BigInt(r.id)]),
      );
      // Just before the first row in a state resolve can take; the 300 DONE rows lie behind it.
      expect(await claimStart(db, APP.key, 0)).toBe(String(ids['todo-1']! - 1n));
      const q = claimSelect(APP.key, 600, await claimStart(db, APP.key, 0), 10);
      const [plan] = (await own.admin.query(
        `EXPLAIN ${q.sql.replace('FROM flow_apply_command', `FROM \`${own.shName}\`.flow_apply_command`)}`,
        q.params,
      )) as unknown as [Array<{ type: string; key: string }>];
      expect(plan[0]).toMatchObject({ type: 'range', key: 'PRIMARY' });
    } finally {
      await db.close();
      await own.drop();
    }
  });
});

describe('stale workers change nothing', () => {
  test("a lease that expired and was taken over: the old owner's write matches nothing", async () => {
    const { openDb } = await import('../../src/lib/db/connect.js');
    const { claimRows, applyWrite } = await import('../../src/lib/apply-command/resolve-unknown/store.js');
    const p = uniquePrefix('stale');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }]);
    const db = await openDb('SH database', dbs.shUrl);
    try {
      const mine = (await claimRows(db, 'owner-a', APP.key, 600, '0', 1000, 30)).filter((r) => r.biz_id.startsWith(p));
      expect(mine).toHaveLength(1);
      // the lease runs out; owner b claims the row
      await dbs.admin.query(
        `UPDATE \`${dbs.shName}\`.flow_apply_command SET claim_expires_at = NOW() - INTERVAL 1 SECOND WHERE biz_id LIKE ?`,
        [`${p}%`],
      );
      const theirs = (await claimRows(db, 'owner-b', APP.key, 600, '0', 1000, 30)).filter((r) =>
        r.biz_id.startsWith(p),
      );
      expect(theirs).toHaveLength(1);
      const gen = generationOf(mine[0]!);
      const mirror = {
        status: 30,
        claimed: { exists: true, status: null },
        changedNote: 'MIRROR_CHANGED: x',
        deletedNote: 'MIRROR_CHANGED: d',
      };
      const stale = await applyWrite(db, 'owner-a', {
        kind: 'done',
        gen,
        status: 30,
        instanceId: 'FI-x',
        branch: null,
        note: null,
        mirror,
      });
      expect(stale).toEqual({ kind: 'stale' });
      expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({
        state: 'UNKNOWN',
        flow_status: null,
        claim_owner: 'owner-b',
      });
      // the new owner's write of an older generation (retry count moved on) also matches nothing
      await dbs.admin.query(`UPDATE \`${dbs.shName}\`.flow_apply_command SET retry_count = 1 WHERE biz_id LIKE ?`, [
        `${p}%`,
      ]);
      expect(await applyWrite(db, 'owner-b', { kind: 'release', gen })).toEqual({ kind: 'stale' });
      // a resubmission re-armed the row in place (new token, higher attempt): the old attempt's write matches nothing
      await dbs.admin.query(
        `UPDATE \`${dbs.shName}\`.flow_apply_command SET attempt = attempt + 1, request_token = 'tok-resubmitted' WHERE biz_id LIKE ?`,
        [`${p}%`],
      );
      expect(
        await applyWrite(db, 'owner-b', {
          kind: 'done',
          gen: { ...gen, retryCount: 1 },
          status: 30,
          instanceId: 'FI-x',
          branch: null,
          note: null,
          mirror,
        }),
      ).toEqual({ kind: 'stale' });
      expect(
        await applyWrite(db, 'owner-b', {
          kind: 'release',
          gen: { ...gen, retryCount: 1, attempt: gen.attempt + 1, requestToken: 'tok-resubmitted' },
        }),
      ).toEqual({ kind: 'written', mirror: null });
    } finally {
      await db.close();
    }
  });
});

describe('bad input: exit 2, one line, nothing touched', () => {
  const cases: Array<[string, string[], Record<string, string | undefined>]> = [
    ['--pending-grace abc', ['--pending-grace', 'abc'], {}],
    ['--batch-size 0', ['--batch-size', '0'], {}],
    ['--concurrency 0', ['--concurrency', '0'], {}],
    ['--max-retries x', ['--max-retries', 'x'], {}],
    ['lease shorter than two requests', ['--request-timeout', '20', '--lease-seconds', '30'], {}],
    ['missing flowUrl', [], { FCCTL_FLOW_URL: undefined }],
    ['missing appSecret', [], { FCCTL_APP_SECRET: undefined }],
    ['missing appKey', [], { FCCTL_APP_KEY: undefined }],
    ['flowUrl with credentials', [], { FCCTL_FLOW_URL: 'https://u:pw@flow.example' }],
    ['flowUrl not http', [], { FCCTL_FLOW_URL: 'ftp://flow.example' }],
  ];
  for (const [name, args, over] of cases) {
    test(name, async () => {
      const p = uniquePrefix('bad');
      await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }]);
      const before = await shChecksum();
      const e = { ...env, ...over };
      for (const [k, v] of Object.entries(over)) if (v === undefined) delete e[k];
      const r = await runCli(['--json', 'apply-command', 'resolve-unknown', ...args], { env: e });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      expect(r.stderr).toMatch(/^fcctl: /);
      expect(r.stderr).not.toContain(APP.secret);
      expect(r.stderr).not.toContain('pw@');
      expect(await shChecksum()).toBe(before);
      expect(of(await fc.log(), p)).toHaveLength(0);
      await dbs.admin.query(`DELETE FROM \`${dbs.shName}\`.flow_apply_command WHERE biz_id LIKE ?`, [`${p}%`]);
    });
  }
});
