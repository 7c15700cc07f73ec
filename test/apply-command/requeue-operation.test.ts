/**
 * `apply-command requeue` operations against the real MariaDB: the operation id is bound to one
 * selection before any command is touched (a concurrent call with another selection is refused
 * whole), an interrupted `--dead` operation continues under the same id, and a temporary answer
 * (CLAIMED) is not recorded.
 */
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { openDb } from '../../src/lib/db/connect.js';
import type { RequeueResult } from '../../src/lib/apply-command/requeue/decide.js';
import { runRequeue } from '../../src/lib/apply-command/requeue/run.js';
import type { RequeueOptions } from '../../src/lib/apply-command/requeue/types.js';
import type { TestDatabases } from '../helpers/db.js';
import { BIZ_TYPE, commandsOf, insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'requeueop', init: 'sh' });
let dbs: TestDatabases;
let dir: string;
test.beforeAll(({ dbs: d, tmp }) => {
  [dbs, dir] = [d, tmp];
});

let seq = 0;
/** One runRequeue on its own pool (as a separate process would have). */
async function requeueOn(
  target: RequeueOptions['target'],
  operationId: string,
  extra: { signal?: AbortSignal; onResult?: (r: RequeueResult) => void; concurrency?: number } = {},
) {
  const db = await openDb('SH database', dbs.shUrl, { connectionLimit: 8 });
  try {
    return await runRequeue(
      {
        target,
        operationId,
        execute: true,
        evidencePath: join(dir, `e-${++seq}.jsonl`),
        concurrency: extra.concurrency ?? 8,
        maxSeconds: 3600,
      },
      {
        shDb: async () => db,
        stdin: (async function* () {})(),
        now: () => new Date(),
        signal: extra.signal ?? new AbortController().signal,
        clock: Date.now,
        onResult: extra.onResult,
      },
    );
  } finally {
    await db.close();
  }
}
const setReason = (p: string, reason: string) =>
  dbs.admin.query(`UPDATE \`${dbs.shName}\`.flow_apply_command SET last_error = ? WHERE biz_id LIKE ?`, [
    reason,
    `${p}%`,
  ]);
const opRows = async (op: string) => {
  const { opDigest } = await import('../../src/lib/deliveries/replay/decide.js');
  return (
    await dbs.admin.query(
      `SELECT biz_type, biz_id, selector, completed_at FROM \`${dbs.shName}\`.fcctl_requeue_operation WHERE op_digest = ?`,
      [opDigest(op)],
    )
  )[0] as Array<{ biz_type: string; biz_id: string; selector: string; completed_at: Date | null }>;
};
const auditCount = async (op: string) =>
  Number(
    (
      (
        await dbs.admin.query(`SELECT COUNT(*) AS n FROM \`${dbs.shName}\`.fc_reconcile_audit WHERE proof_id = ?`, [op])
      )[0] as Array<{ n: string }>
    )[0]!.n,
  );

/** `n` DEAD commands (budget spent) of a fresh prefix, all with one last_error. */
async function deadCommands(tag: string, n: number, lastError: string): Promise<string> {
  const p = uniquePrefix(tag);
  await insertCommands(
    dbs.admin,
    dbs.shName,
    Array.from({ length: n }, (_, i) => ({ bizId: `${p}-${i}`, state: 'DEAD' as const, retryCount: 6 })),
  );
  await setReason(p, lastError);
  return p;
}

describe('apply-command requeue operations', () => {
  test('one operation id, two selections at once (--dead of 3000 and one key): one runs, the other is OPERATION_CONFLICT before it touches anything', {
    timeout: 120_000,
  }, async () => {
    const n = 3000;
    const p = await deadCommands('opsel', n, 'LOOKUP_NETWORK: reset');
    const op = `sel-${p}`;
    const [dead, one] = await Promise.all([
      requeueOn({ kind: 'dead', reason: 'LOOKUP_NETWORK' }, op),
      requeueOn({ kind: 'key', key: { bizType: BIZ_TYPE, bizId: `${p}-${n - 1}` } }, op),
    ]);
    const refused = [dead, one].filter((r) => r.operationConflict !== null);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ exitCode: 1, results: [], stoppedBy: 'operation-conflict' });
    const winner = [dead, one].find((r) => r.operationConflict === null)!;
    expect(winner.exitCode).toBe(0);
    // every recorded answer and the header name the winner's selection only
    const rows = await opRows(op);
    expect(new Set(rows.map((r) => r.selector))).toEqual(new Set([winner.selector]));
    expect(rows.filter((r) => r.biz_type !== '')).toHaveLength(winner.results.length);
    expect(await auditCount(op)).toBe(winner.results.length);
    // a re-run of either is what it was: the winner repeats, the other is refused
    const again = await requeueOn(
      winner === dead
        ? { kind: 'dead', reason: 'LOOKUP_NETWORK' }
        : { kind: 'key', key: { bizType: BIZ_TYPE, bizId: `${p}-${n - 1}` } },
      op,
    );
    expect(again).toMatchObject({ exitCode: 0, operationConflict: null, repeated: winner.results.length });
  });

  test('an interrupted --dead operation continues under the same id; once complete it only repeats', {
    timeout: 120_000,
  }, async () => {
    const n = 3000;
    const p = await deadCommands('opint', n, 'APPLY_HTTP_503: unavailable');
    const op = `int-${p}`;
    const target = { kind: 'dead', reason: 'APPLY_HTTP_503' } as const;
    const stop = new AbortController();
    let seen = 0;
    const first = await requeueOn(target, op, {
      signal: stop.signal,
      onResult: () => void (++seen === 500 && stop.abort()),
    });
    expect(first.stoppedBy).toBe('signal');
    expect(first.exitCode).toBe(1);
    expect(first.notRun).toBeGreaterThan(0);
    const done = first.results.length;
    const second = await requeueOn(target, op);
    expect({
      exitCode: second.exitCode,
      items: second.items,
      repeated: second.repeated,
      notRun: second.notRun,
    }).toEqual({ exitCode: 0, items: n, repeated: done, notRun: 0 });
    expect(second.byCode['REQUEUED']).toBe(n);
    expect((await commandsOf(dbs.admin, dbs.shName, p)).filter((c) => c.state !== 'UNKNOWN')).toEqual([]);
    expect((await opRows(op)).find((r) => r.biz_type === '')!.completed_at).not.toBeNull();
    // complete: a row dying again for that reason is not taken; the answers repeat, nothing is written
    await dbs.admin.query(
      `UPDATE \`${dbs.shName}\`.flow_apply_command SET state = 'DEAD', retry_count = 6, last_error = 'APPLY_HTTP_503: again' WHERE biz_id = ?`,
      [`${p}-0`],
    );
    const audits = await auditCount(op);
    const third = await requeueOn(target, op);
    expect({ exitCode: third.exitCode, items: third.items, repeated: third.repeated }).toEqual({
      exitCode: 0,
      items: n,
      repeated: n,
    });
    expect(await auditCount(op)).toBe(audits);
    expect((await commandsOf(dbs.admin, dbs.shName, `${p}-0`)).find((c) => c.biz_id === `${p}-0`)).toMatchObject({
      state: 'DEAD',
    });
  });

  test('CLAIMED is not recorded: the same operation id after the lease requeues the command', async () => {
    const p = uniquePrefix('opclm');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, state: 'FAILED', retryCount: 2 }]);
    await dbs.admin.query(
      `UPDATE \`${dbs.shName}\`.flow_apply_command SET claim_owner = 'host:1:live', claim_expires_at = NOW() + INTERVAL 5 MINUTE WHERE biz_id = ?`,
      [`${p}-1`],
    );
    const op = `clm-${p}`;
    const target = { kind: 'key', key: { bizType: BIZ_TYPE, bizId: `${p}-1` } } as const;
    const first = await requeueOn(target, op);
    expect(first.results.map((r) => [r.code, r.repeated])).toEqual([['CLAIMED', false]]);
    expect(first.exitCode).toBe(1);
    expect((await opRows(op)).filter((r) => r.biz_type !== '')).toEqual([]);
    expect(await auditCount(op)).toBe(1);
    await dbs.admin.query(
      `UPDATE \`${dbs.shName}\`.flow_apply_command SET claim_owner = NULL, claim_expires_at = NULL WHERE biz_id = ?`,
      [`${p}-1`],
    );
    const second = await requeueOn(target, op);
    expect(second.results.map((r) => [r.code, r.repeated])).toEqual([['REQUEUED', false]]);
    expect(second.exitCode).toBe(0);
    expect((await commandsOf(dbs.admin, dbs.shName, p))[0]).toMatchObject({ state: 'UNKNOWN', retry_count: 0 });
  });
});
