/**
 * `status --fail-if` never green while a failure exists (issue 34 §15), as real `bin/fcctl`
 * processes on real databases: a condition whose side is not configured is not judged (exit 3, the
 * line says which); stale workers are counted over the whole registry, not its 200 listed rows; a
 * database whose `db init` was not re-run (no `idx_delivery_state_time`) still shows its DEAD rows
 * and says to run `db init`.
 */
import { describe, expect } from 'vitest';
import { insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { spawnCli } from '../helpers/cli.js';
import { insertDeliveries, uniqueConsumerKey } from '../helpers/deliveries.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'statusfail', init: 'all' });
type Doc = Record<string, any>;

async function status(args: string[], env: Record<string, string | undefined>) {
  const r = await spawnCli(['--json', 'status', ...args], { env, timeoutMs: 30_000 });
  return { ...r, doc: r.stdout.trim() === '' ? null : (JSON.parse(r.stdout) as Doc) };
}

describe('status --fail-if judges every failure or says it cannot', () => {
  test('SH not configured while it holds DEAD apply commands: dead and failed-pairs are not judged, exit 3, the line says which', async ({
    dbs,
  }) => {
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: uniquePrefix('dead'), state: 'DEAD', retryCount: 6 }]);
    // both sides read: the DEAD command holds the condition
    const both = await status(['--fail-if', 'dead'], dbs.env());
    expect(both.code, both.stderr).toBe(1);

    const env = dbs.env({ FCCTL_SH_DATABASE_URL: '' });
    const r = await status(['--fail-if', 'dead,failed-pairs'], env);
    expect(r.code, r.stderr).toBe(3);
    expect(r.doc!['applyCommands']).toEqual({ status: 'not configured' });
    expect(r.doc!['unjudged']).toEqual([
      { condition: 'dead', sections: ['applyCommands'] },
      { condition: 'failed-pairs', sections: ['reconcile'] },
    ]);
    expect(r.doc!['exitCode']).toBe(3);
    expect(both.doc!['unjudged']).toEqual([]);
    expect(r.stderr).toBe(
      'fcctl: --fail-if dead cannot be judged: applyCommands not read (SH database not configured: FCCTL_SH_DATABASE_URL); ' +
        'failed-pairs cannot be judged: reconcile not read (SH database not configured: FCCTL_SH_DATABASE_URL)\n',
    );
    // a condition that holds on the side read is judged: FC not configured, SH's DEAD command fails it (exit 1)
    const shOnly = await status(['--fail-if', 'dead'], dbs.env({ FCCTL_FC_DATABASE_URL: '' }));
    expect(shOnly.code, shOnly.stderr).toBe(1);
    expect(shOnly.doc!['failing']).toEqual(['dead']);
    expect(shOnly.doc!['unjudged']).toEqual([]);
    expect(shOnly.stderr).toBe('');
    // a condition FC alone answers for... none: paused and stale-workers read both sides
    expect((await status(['--fail-if', 'paused'], env)).code).toBe(3);
    // without --fail-if a side not configured is no failure (the document says so)
    const plain = await status([], env);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stderr).toBe('');
  });

  test('200 fresh registry rows and 1 stale one listed after them: stale-workers holds (the count is over all rows)', async ({
    dbs,
  }) => {
    const fc = `\`${dbs.fcName}\``;
    const rows = Array.from({ length: 200 }, (_, i) => [
      `w-fresh-${i}`,
      'deliveries send',
      `host-${String(i).padStart(3, '0')}`,
      i + 1,
    ]);
    await dbs.admin.query(
      `INSERT INTO ${fc}.fcctl_worker (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state) VALUES ` +
        rows.map(() => "(?, ?, ?, ?, '1.0.0', UTC_TIMESTAMP(), UTC_TIMESTAMP(), 3600, 'running')").join(', '),
      rows.flat(),
    );
    // sorts after every fresh row (command, host, pid): the 201st, never listed
    await dbs.admin.query(
      `INSERT INTO ${fc}.fcctl_worker (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state)
       VALUES ('w-stale', 'zz resolve', 'zz-host', 1, '1.0.0', UTC_TIMESTAMP() - INTERVAL 1 HOUR, UTC_TIMESTAMP() - INTERVAL 10 MINUTE, 5, 'running')`,
    );
    const r = await status(['--fail-if', 'stale-workers'], dbs.env());
    expect(r.code, r.stderr).toBe(1);
    expect(r.doc!['fleet'].fc.workers).toHaveLength(200);
    expect(r.doc!['fleet'].fc.workers.some((w: { stale: boolean }) => w.stale)).toBe(false);
    expect(r.doc!['fleet'].fc.stale).toBe(1);
    expect(r.doc!['fleet'].sh.stale).toBe(0);
    expect(r.doc!['failing']).toEqual(['stale-workers']);
  });

  test('idx_delivery_state_time missing (db init not re-run): the outbox is still read, its DEAD rows hold dead, the warning says db init', async ({
    dbs,
  }) => {
    const fc = `\`${dbs.fcName}\``;
    const ids = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: uniqueConsumerKey('nx'), schoolId: 5 }, 2);
    await dbs.admin.query(
      `UPDATE ${fc}.answer_delivery SET state = 'DEAD', retry_count = 8, last_error = 'NACK: x' WHERE event_id = ?`,
      [ids[0]],
    );
    await dbs.admin.query(`ALTER TABLE ${fc}.answer_delivery DROP INDEX idx_delivery_state_time`);
    const r = await status(['--fail-if', 'dead'], dbs.env());
    expect(r.code, r.stderr).toBe(1);
    expect(r.doc!['outbox'].status).toBe('ok');
    expect(r.doc!['outbox'].states.DEAD).toBe(1);
    expect(r.doc!['outbox'].warnings).toEqual([
      'idx_delivery_state_time is missing: the last hour counted without it; run fcctl db init',
    ]);
    expect(r.doc!['failing']).toEqual(['dead']);
    expect(r.stderr).toBe(
      'fcctl: outbox: idx_delivery_state_time is missing: the last hour counted without it; run fcctl db init\n',
    );
    // db init puts it back: no warning
    expect((await spawnCli(['db', 'init', '--side', 'fc'], { env: dbs.env() })).code).toBe(0);
    const after = await status(['--fail-if', 'dead'], dbs.env());
    expect(after.code).toBe(1);
    expect(after.doc!['outbox'].warnings).toEqual([]);
    expect(after.stderr).toBe('');
  });
});
