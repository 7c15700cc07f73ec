/**
 * resolve-unknown, issue 17 items 1–3 against the real MariaDB and the flow-center stand-in: an
 * apply answer with a branch outside the seven is DEAD at once (never resent), the status mirror
 * is written only over the value read at claim, and a flow center that refuses our credentials
 * stops the run at the first refusal without charging any row.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonLines, runCli } from '../helpers/cli.js';
import { freshDatabases, type TestDatabases } from '../helpers/db.js';
import { APP, BIZ_TYPE, commandsOf, defaults, insertCommands, makeDue, uniquePrefix } from '../helpers/apply-commands.js';
import { type FlowCenter, type LogEntry, startFlowCenter, type StandInInstance } from '../helpers/flow-center.js';
import { waitFor } from '../helpers/wait.js';

let dbs: TestDatabases;
let fc: FlowCenter;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  dbs = await freshDatabases('applyguard');
  fc = await startFlowCenter({ apps: { [APP.key]: APP.secret } });
  env = dbs.env({ FCCTL_FLOW_URL: fc.url, FCCTL_APP_KEY: APP.key, FCCTL_APP_SECRET: APP.secret });
  expect((await runCli(['db', 'init', '--side', 'sh'], { env })).code).toBe(0);
});
afterAll(async () => {
  await fc?.stop();
  await dbs?.drop();
});
beforeEach(async () => {
  await fc.clearFaults();
  await fc.clearLog();
});

const FAST = ['--request-timeout', '2', '--lease-seconds', '30'];
const resolveRun = (args: string[] = [], e = env) => runCli(['--json', 'apply-command', 'resolve-unknown', ...FAST, ...args], { env: e });
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const rowEvents = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'row');
const owned = (bizId: string, status: StandInInstance['status'], over: Partial<StandInInstance> = {}): StandInInstance => ({
  bizType: BIZ_TYPE, bizId, status, applyAppKey: APP.key, submitterId: defaults(bizId).submitterId, flowGuid: defaults(bizId).flowGuid, round: 1, ...over,
});
const of = (log: LogEntry[], prefix: string) => log.filter((e) => e.bizId?.startsWith(prefix));
const byKey = async (p: string) => Object.fromEntries((await commandsOf(dbs.admin, dbs.shName, p)).map((x) => [x.biz_id.slice(p.length + 1), x]));
const setFlowStatus = (bizId: string, status: number | null) => dbs.admin.query(`UPDATE \`${dbs.shName}\`.service_apply SET flow_status = ? WHERE biz_id = ?`, [status, bizId]);

describe('an apply answer with a branch outside the seven (item 1)', () => {
  it('is DEAD UNEXPECTED_BRANCH at once with the branch kept (cut to last_branch\'s 32 characters), and never resent', async () => {
    const p = uniquePrefix('ub');
    const id = (k: string) => `${p}-${k}`;
    const long = `NEW_BRANCH_${'X'.repeat(40)}`;
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: id('maybe') }, { bizId: id('long') }, { bizId: id('acted') }]);
    await fc.faults([
      { path: '/oapi/flow/apply', kind: 'branch', branch: 'MAYBE_CREATED', bizId: id('maybe') },
      { path: '/oapi/flow/apply', kind: 'branch', branch: long, bizId: id('long') },
      // the flow center created the instance, then answered a branch fcctl does not know
      { path: '/oapi/flow/apply', kind: 'malformed', variant: 'unknown-branch', after: true, bizId: id('acted') },
    ]);
    const r = await resolveRun();
    expect(r.code).toBe(1);
    expect(summaryOf(r.stdout)).toMatchObject({ claimed: 3, posts: 3, dead: 3, failed: 0, deadByReason: { UNEXPECTED_BRANCH: 3 }, branches: { MAYBE_CREATED: 2, [long.slice(0, 32)]: 1 } });
    let rows = await byKey(p);
    expect(rows['maybe']).toMatchObject({ state: 'DEAD', retry_count: 0, last_branch: 'MAYBE_CREATED', remote_status: null, flow_status: null });
    expect(rows['maybe']!.last_error).toMatch(/^UNEXPECTED_BRANCH: "MAYBE_CREATED" \(not a branch code of seed 000 §7\.4\), instance FI-synthetic status 10$/);
    expect(rows['long']).toMatchObject({ state: 'DEAD', last_branch: long.slice(0, 32) });
    expect(rows['long']!.last_error).toContain(JSON.stringify(long));
    expect(rows['acted']).toMatchObject({ state: 'DEAD', last_branch: 'MAYBE_CREATED', flow_status: null });
    expect(rowEvents(r.stdout).find((e) => e['bizId'] === id('maybe'))).toMatchObject({ kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: 'MAYBE_CREATED' });

    // Later runs leave them for a person: no lookup, no second apply, the branch still there.
    await makeDue(dbs.admin, dbs.shName, p);
    const again = await resolveRun();
    expect(summaryOf(again.stdout)).toMatchObject({ claimed: 0 });
    const log = of(await fc.log(), p);
    expect(log.filter((e) => e.method === 'POST').map((e) => e.bizId).sort()).toEqual([id('acted'), id('long'), id('maybe')].sort());
    expect(log).toHaveLength(6);
    rows = await byKey(p);
    expect(rows['acted']).toMatchObject({ state: 'DEAD', last_branch: 'MAYBE_CREATED', last_error: expect.stringContaining('MAYBE_CREATED') });
  });
});

describe('the status mirror is written only over the value read at claim (item 2)', () => {
  it('a status the service writes between claim and write is kept: DONE, MIRROR_CHANGED reported and counted; unchanged values are mirrored', async () => {
    const p = uniquePrefix('mc');
    const id = (k: string) => `${p}-${k}`;
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: id('changed') }, { bizId: id('was20') }, { bizId: id('null') }, { bizId: id('applied') }, { bizId: id('gone') }, { bizId: id('none'), serviceApply: false }]);
    await setFlowStatus(id('was20'), 20);
    await fc.addInstances([owned(id('changed'), 10), owned(id('was20'), 40), owned(id('null'), 30), owned(id('gone'), 20), owned(id('none'), 20)]);
    // Two lookups wait long enough for "the service" to write in between; the others answer at once.
    await fc.faults([
      { path: '/oapi/flow/instance', kind: 'latency', ms: 1500, bizId: id('changed') },
      { path: '/oapi/flow/instance', kind: 'latency', ms: 1500, bizId: id('gone') },
      { path: '/oapi/flow/apply', kind: 'latency', ms: 1500, bizId: id('applied') },
    ]);
    const run = resolveRun(['--concurrency', '8']);
    // the claim has happened: the rows are leased
    await waitFor('the claim', async () => (await commandsOf(dbs.admin, dbs.shName, p)).every((x) => x.claim_owner !== null), 10_000, 20);
    // the service's flow callbacks: rejected (30) meanwhile; a withdrawn (40) before the resent apply
    // is answered; one service_apply row deleted
    await setFlowStatus(id('changed'), 30);
    await setFlowStatus(id('applied'), 40);
    await dbs.admin.query(`DELETE FROM \`${dbs.shName}\`.service_apply WHERE biz_id = ?`, [id('gone')]);
    const r = await run;
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ claimed: 6, done: 6, mirrorChanged: 3, mirrorMissing: 1 });
    const rows = await byKey(p);
    expect(rows['changed']).toMatchObject({ state: 'DONE', remote_status: 10, flow_status: 30, claim_owner: null });
    expect(rows['changed']!.last_error).toMatch(/^MIRROR_CHANGED: service_apply\.flow_status was NULL at claim and has changed since; status 10 of instance FI-\d+ status 10 was not mirrored over it$/);
    expect(rows['applied']).toMatchObject({ state: 'DONE', last_branch: 'CREATED', remote_status: 10, flow_status: 40 });
    expect(rows['applied']!.last_error).toMatch(/^MIRROR_CHANGED: /);
    expect(rows['gone']).toMatchObject({ state: 'DONE', remote_status: 20, flow_status: null, last_error: expect.stringMatching(/^MIRROR_CHANGED: /) });
    // unchanged since the claim: mirrored over it, whatever it held
    expect(rows['was20']).toMatchObject({ state: 'DONE', remote_status: 40, flow_status: 40, last_error: null });
    expect(rows['null']).toMatchObject({ state: 'DONE', remote_status: 30, flow_status: 30, last_error: null });
    expect(rows['none']).toMatchObject({ state: 'DONE', remote_status: 20, flow_status: null, last_error: null });
    const events = rowEvents(r.stdout);
    expect(events.find((e) => e['bizId'] === id('changed'))).toMatchObject({ kind: 'done', via: 'lookup', status: 10, mirror: 'changed' });
    expect(events.find((e) => e['bizId'] === id('applied'))).toMatchObject({ kind: 'done', via: 'apply', mirror: 'changed' });
    // a plain DONE by lookup with its mirror written stays quiet
    expect(events.find((e) => e['bizId'] === id('null'))).toBeUndefined();
  });
});

describe('a flow center that refuses our credentials stops the run at the first refusal (item 3)', () => {
  const wrong = () => ({ ...env, FCCTL_APP_SECRET: 'wrong-secret-issue-17' });
  const unchargedRows = async (p: string, states: Record<string, { state: string; retry_count: number }>) => {
    const rows = await byKey(p);
    for (const [k, want] of Object.entries(states)) expect(rows[k], k).toMatchObject({ ...want, claim_owner: null, flow_status: null });
  };

  it('a wrong secret (401 for every request): exit 3 with one line naming the settings; no retry charged, rows in flight released; a right secret then settles them', async () => {
    const p = uniquePrefix('s401');
    const n = 40;
    await insertCommands(dbs.admin, dbs.shName, [
      ...Array.from({ length: n }, (_, i) => ({ bizId: `${p}-${i}` })),
      { bizId: `${p}-failed`, state: 'FAILED' as const, retryCount: 5, nextRetryAt: 'NOW() - INTERVAL 1 SECOND' },
    ]);
    const r = await resolveRun(['--concurrency', '4', '--batch-size', '10'], wrong());
    expect(r.code).toBe(3);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^fcctl: flow center refused our credentials \(HTTP 401 on GET \/oapi\/flow\/instance: .*\): check FCCTL_APP_KEY and FCCTL_APP_SECRET; stopped at the first refusal, no retry was charged to any row \(\d+ released\)\n$/);
    expect(r.stderr + r.stdout).not.toContain('wrong-secret-issue-17');
    const s = summaryOf(r.stdout);
    expect(s).toMatchObject({ exitCode: 3, stoppedBy: 'credentials-refused', failed: 0, dead: 0, done: 0, credentialsRefused: expect.stringMatching(/^HTTP 401 on GET \/oapi\/flow\/instance: .*SIGNATURE_INVALID/) });
    expect(Number(s['released'])).toBe(Number(s['claimed']));
    // at most one request per slot of the limiter reached the flow center: no row after the first refusal
    const log = of(await fc.log(), p);
    expect(log.length).toBeGreaterThanOrEqual(1);
    expect(log.length).toBeLessThanOrEqual(4);
    expect(log.every((e) => e.status === 401 && e.method === 'GET')).toBe(true);
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(rows.filter((x) => x.biz_id !== `${p}-failed`).every((x) => x.state === 'UNKNOWN' && x.retry_count === 0 && x.last_error === null && x.claim_owner === null)).toBe(true);
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

  it('403 on the lookup: the same stop', async () => {
    const p = uniquePrefix('s403');
    await insertCommands(dbs.admin, dbs.shName, Array.from({ length: 5 }, (_, i) => ({ bizId: `${p}-${i}` })));
    await fc.faults([{ path: '/oapi/flow/instance', kind: 'status', status: 403, body: { error: 'APP_NOT_PERMITTED', message: 'this app may not look instances up' } }]);
    const r = await resolveRun(['--concurrency', '1']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^fcctl: flow center refused our credentials \(HTTP 403 on GET \/oapi\/flow\/instance: .*APP_NOT_PERMITTED.*\): check FCCTL_APP_KEY and FCCTL_APP_SECRET/);
    expect(of(await fc.log(), p)).toHaveLength(1);
    expect((await commandsOf(dbs.admin, dbs.shName, p)).every((x) => x.state === 'UNKNOWN' && x.retry_count === 0 && x.claim_owner === null)).toBe(true);
  });

  it('403 on the resent apply after "not found": released, not failed; nothing else is sent', async () => {
    const p = uniquePrefix('a403');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-0`, retryCount: 2 }, ...Array.from({ length: 5 }, (_, i) => ({ bizId: `${p}-${i + 1}` }))]);
    await fc.faults([{ path: '/oapi/flow/apply', kind: 'status', status: 403 }]);
    const r = await resolveRun(['--concurrency', '1']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/HTTP 403 on POST \/oapi\/flow\/apply/);
    expect(summaryOf(r.stdout)).toMatchObject({ stoppedBy: 'credentials-refused', lookups: 1, posts: 1, failed: 0, dead: 0 });
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(rows.map((x) => [x.state, x.retry_count, x.claim_owner, x.last_error])).toEqual([['UNKNOWN', 2, null, null], ...Array(5).fill(['UNKNOWN', 0, null, null])]);
  });

  it('other 4xx statuses still fail the row with backoff (a 401/403 is special, not every client error)', async () => {
    const p = uniquePrefix('s429');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1` }]);
    await fc.faults([{ path: '/oapi/flow/instance', kind: 'status', status: 429, bizId: `${p}-1` }]);
    const r = await resolveRun();
    expect(r.code).toBe(1);
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({ state: 'FAILED', retry_count: 1, last_error: expect.stringMatching(/^LOOKUP_HTTP_429: /) });
  });
});
