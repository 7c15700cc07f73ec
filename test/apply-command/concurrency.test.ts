import { spawn } from 'node:child_process';
import { describe, expect } from 'vitest';
import { FCCTL_BIN, jsonLines, spawnCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import {
  APP,
  APP_FLOW,
  BIZ_TYPE,
  commandsOf,
  defaults,
  type Env,
  flowEnv,
  insertCommands,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'applyconc', init: 'sh', flowApps: APP_FLOW, flowLatencyMs: 2 });
let dbs: TestDatabases, fc: FlowCenter, env: Env;
test.beforeAll(({ dbs: d, flowCenter }) => void ([dbs, fc, env] = [d, flowCenter, flowEnv(d, flowCenter)]));

describe('two resolve-unknown processes at once', () => {
  test('5,000 rows: every row looked up exactly once, resent at most once (only when not found), all DONE', {
    timeout: 300_000,
  }, async () => {
    const p = uniquePrefix('conc');
    const n = 5000;
    const ids = Array.from({ length: n }, (_, i) => `${p}-${i}`);
    await insertCommands(
      dbs.admin,
      dbs.shName,
      ids.map((bizId, i) => ({ bizId, state: i % 5 === 0 ? 'FAILED' : 'UNKNOWN' })),
    );
    // Half the instances exist already (rejected or withdrawn: a resend would restart them).
    const existing = ids.filter((_, i) => i % 2 === 0);
    await fc.addInstances(
      existing.map((bizId, i) => ({
        bizType: BIZ_TYPE,
        bizId,
        status: i % 2 ? 30 : 40,
        applyAppKey: APP.key,
        submitterId: defaults(bizId).submitterId,
        flowGuid: defaults(bizId).flowGuid,
      })),
    );

    const args = ['--json', 'apply-command', 'resolve-unknown', '--concurrency', '8', '--batch-size', '50'];
    const [a, b] = await Promise.all([
      spawnCli(args, { env, timeoutMs: 280_000 }),
      spawnCli(args, { env, timeoutMs: 280_000 }),
    ]);
    expect(a.stderr).toBe('');
    expect(b.stderr).toBe('');
    expect([a.code, b.code]).toEqual([0, 0]);
    const sa = jsonLines(a.stdout).find((l) => l['type'] === 'summary')!;
    const sb = jsonLines(b.stdout).find((l) => l['type'] === 'summary')!;
    expect(Number(sa['claimed']) + Number(sb['claimed'])).toBe(n);
    expect(Number(sa['claimed'])).toBeGreaterThan(0);
    expect(Number(sb['claimed'])).toBeGreaterThan(0);
    expect(Number(sa['stale']) + Number(sb['stale'])).toBe(0);
    expect(Number(sa['posts']) + Number(sb['posts'])).toBe(n / 2);

    const log = (await fc.log()).filter((e) => e.bizId?.startsWith(p));
    const gets = new Map<string, number>();
    const postsBy = new Map<string, number>();
    for (const e of log) {
      const m = e.method === 'GET' ? gets : postsBy;
      m.set(e.bizId!, (m.get(e.bizId!) ?? 0) + 1);
    }
    expect(gets.size).toBe(n);
    expect([...gets.values()].every((c) => c === 1)).toBe(true);
    const existingSet = new Set(existing);
    expect([...postsBy.keys()].some((id) => existingSet.has(id))).toBe(false);
    expect(postsBy.size).toBe(n / 2);
    expect([...postsBy.values()].every((c) => c === 1)).toBe(true);
    expect(log.every((e) => e.auth === 'ok' && e.status === 200)).toBe(true);

    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(rows.every((r) => r.state === 'DONE' && r.claim_owner === null && r.flow_status === r.remote_status)).toBe(
      true,
    );
  });
});

describe('SIGINT', () => {
  test('stops claiming, lets requests in flight finish, releases what it has not started, prints the summary', {
    timeout: 120_000,
  }, async () => {
    const p = uniquePrefix('sig');
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 300 }, (_, i) => ({ bizId: `${p}-${i}` })),
    );
    await fc.faults([{ path: '*', kind: 'latency', ms: 100 }]);
    const child = spawn(
      process.execPath,
      [FCCTL_BIN, '--json', 'apply-command', 'resolve-unknown', '--concurrency', '2', '--batch-size', '50'],
      { env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const closed = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    // Interrupt once it is surely running: a few rows have reached the flow center.
    await waitFor(
      'requests of the run',
      async () => (await fc.log()).filter((e) => e.bizId?.startsWith(p)).length >= 4,
      60_000,
      50,
    );
    child.kill('SIGINT');
    const code = await closed;
    await fc.clearFaults();
    const summary = jsonLines(out).find((l) => l['type'] === 'summary')!;
    // not all done: an interrupt is exit 1 in every command (README "Exit codes")
    expect(code).toBe(1);
    expect(summary).toMatchObject({ exitCode: 1, stoppedBy: 'signal', failed: 0, dead: 0, stale: 0 });
    expect(Number(summary['released'])).toBeGreaterThan(0);
    expect(Number(summary['done']) + Number(summary['released'])).toBe(Number(summary['claimed']));
    const rows = await commandsOf(dbs.admin, dbs.shName, p);
    expect(
      rows.every(
        (r) => r.claim_owner === null && (r.state === 'DONE' || (r.state === 'UNKNOWN' && r.retry_count === 0)),
      ),
    ).toBe(true);
    expect(rows.filter((r) => r.state === 'DONE')).toHaveLength(Number(summary['done']));
  });
});
