/**
 * `explain` and `reconcile history` against databases that stop answering (not refusing): each
 * section's reads, connect included, end by the reports' 10 s deadline (lib/cli/section.ts), a side
 * that did not answer is not waited for again, and the process ends as soon as it has printed. The
 * databases are reached through a TCP proxy that freezes as a `kill -STOP`ped server does
 * (test/helpers/proxy.ts): at the first statement (every handshake done), or before any greeting.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect } from 'vitest';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { servicesTest } from '../helpers/services.js';
import { spawnTimed } from '../helpers/timed.js';

const test = servicesTest({ prefix: 'explainstall', init: 'all' });

let proxy: TcpProxy | undefined;
afterEach(async () => {
  await proxy?.stop();
  proxy = undefined;
});

/** Both databases (one server) through a proxy, frozen as `how` says. */
async function frozen(
  dbs: { fcUrl: string; shUrl: string; env: (e?: Record<string, string>) => Record<string, string | undefined> },
  how: 'at the first statement' | 'before any greeting',
) {
  const u = new URL(dbs.shUrl);
  proxy = new TcpProxy(u.hostname, Number(u.port));
  await proxy.start();
  if (how === 'at the first statement') proxy.freezeAtStatement();
  else proxy.freeze();
  return dbs.env({
    FCCTL_FC_DATABASE_URL: viaProxy(dbs.fcUrl, proxy.port),
    FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, proxy.port),
  });
}

/** A process that printed ends at once: two pools closed one after the other, 0.5 s of grace each (1.1 s measured; 2.5 s on a busy machine). */
const PRINT_TO_EXIT_MS = 2500;

describe('explain when the databases stop answering', () => {
  for (const how of ['at the first statement', 'before any greeting'] as const) {
    test(`frozen ${how}: every section unreachable, exit 3, within one deadline, and the process ends once printed`, async ({
      dbs,
    }) => {
      const env = await frozen(dbs, how);
      const r = await spawnTimed(['--json', 'explain', 'answer', randomUUID(), '--consumer', 'app-x'], env);
      expect(r.code, r.stderr).toBe(3);
      const doc = JSON.parse(r.stdout) as Record<string, { status?: string; error?: string }>;
      for (const name of ['fc', 'grants', 'outbox', 'sh', 'applyCommands']) {
        expect(doc[name]?.status, name).toBe('unreachable');
        expect(doc[name]?.error, name).toMatch(
          /^(no answer in 10 s|cannot connect to (FC|SH) database at mysql:\/\/[^:]+:\*\*\*@.*: ETIMEDOUT)$/,
        );
      }
      // one deadline for both sides (read at once), not one per section: 20.8 s before
      expect(r.printedMs!).toBeLessThan(12_000);
      expect(r.exitedMs - r.printedMs!).toBeLessThan(PRINT_TO_EXIT_MS);
    }, 60_000);
  }

  test('explain command, frozen at the first statement: exit 3 within the deadline, the process ends', async ({
    dbs,
  }) => {
    const env = await frozen(dbs, 'at the first statement');
    const r = await spawnTimed(['--json', 'explain', 'command', '--biz-type', 'LEAVE', '--biz-id', '42'], env);
    expect(r.code, r.stderr).toBe(3);
    expect(r.exitedMs).toBeLessThan(12_000);
  }, 60_000);
});

describe('reconcile history when the SH database stops answering', () => {
  for (const how of ['at the first statement', 'before any greeting'] as const) {
    test(`frozen ${how}: one line, exit 3, within the deadline`, async ({ dbs }) => {
      const env = await frozen(dbs, how);
      const r = await spawnTimed(['reconcile', 'history', '--last', '3'], env);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        /^fcctl: (SH database: no answer in 10 s|cannot connect to SH database at mysql:\/\/[^:]+:\*\*\*@.*: ETIMEDOUT)\n$/,
      );
      expect(r.exitedMs).toBeLessThan(12_000);
    }, 60_000);
  }
});
