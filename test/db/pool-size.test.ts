import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { makeContext, Resources } from '../../src/commands/context.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { testMysqlUrl } from '../helpers/db.js';
import { testIo } from '../helpers/io.js';

/** How many connections the FC pool of a command's context uses for 24 statements at once. */
async function connectionsUsed(poolSize: string | undefined): Promise<number> {
  const resources = new Resources();
  const env = cleanEnv({ FCCTL_FC_DATABASE_URL: `${testMysqlUrl()}/mysql`, FCCTL_DB_POOL_SIZE: poolSize });
  const ctx = makeContext(
    new Command('scan') as never,
    { io: testIo().io, env, now: () => new Date(), signal: new AbortController().signal },
    resources,
  );
  try {
    const db = await ctx.fcDb();
    const ids = await Promise.all(
      Array.from({ length: 24 }, () => db.query<{ id: string }>('SELECT CONNECTION_ID() AS id, SLEEP(0.05) AS s')),
    );
    return new Set(ids.map((rows) => String(rows[0]!.id))).size;
  } finally {
    await resources.closeAll();
  }
}

describe('dbPoolSize: the connections of a database pool', () => {
  it('default: 10 connections, as before the setting', async () => {
    expect(await connectionsUsed(undefined)).toBe(10);
  });
  it('FCCTL_DB_POOL_SIZE=3: 3 connections, the statements wait their turn', async () => {
    expect(await connectionsUsed('3')).toBe(3);
  });
  it('a bad value: exit 2, one line naming the setting', async () => {
    const r = await runCli(['deliveries', 'scan'], {
      env: cleanEnv({ FCCTL_FC_DATABASE_URL: `${testMysqlUrl()}/mysql`, FCCTL_DB_POOL_SIZE: '0' }),
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/dbPoolSize must be a whole number from 1 to 1000, not "0"/),
    ]);
  });
});
