/**
 * A claim transaction whose connection is dropped at its statement deadline while the network
 * stalls (issue 34 §6, review): the server never hears the close, and the transaction stayed open
 * with its row locks — every `SKIP LOCKED` claim passed those rows by for as long as the server kept
 * the dead session (its wait_timeout: 8 h by default), the resolver `running` meanwhile. Each
 * fcctl session now asks MariaDB to end a session left idle inside a transaction.
 */
import { afterEach, describe, expect } from 'vitest';
import {
  APP_FLOW,
  clearFlowCenter,
  commandsOf,
  flowEnv,
  insertCommands,
  uniquePrefix,
} from '../helpers/apply-commands.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'abtx', init: 'all', flowApps: APP_FLOW });
const running: RunningService[] = [];
const proxies: TcpProxy[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop('SIGKILL')));
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
});

describe('a transaction abandoned at its deadline does not hold its rows', () => {
  test('resolver: the network stalls between the claim’s SELECT … FOR UPDATE and its UPDATE; once it is back the rows are resolved within a minute', async ({
    dbs,
    flowCenter,
  }) => {
    await clearFlowCenter(flowCenter);
    const u = new URL(dbs.shUrl);
    const db = new TcpProxy(u.hostname, Number(u.port));
    await db.start();
    proxies.push(db);
    const p = uniquePrefix('tx');
    await insertCommands(
      dbs.admin,
      dbs.shName,
      [1, 2, 3].map((i) => ({ bizId: `${p}-${i}`, state: 'UNKNOWN' as const })),
    );
    // the claim's rows are locked by its SELECT; its UPDATE never reaches the server
    db.freezeAtStatement('claim_expires_at = NOW() + INTERVAL');
    const r = startService(['--json', 'apply-command', 'resolve-unknown', '--follow', '--backoff-base', '1'], {
      env: { ...flowEnv(dbs, flowCenter), FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, db.port) },
    });
    running.push(r);
    await waitFor('the claim frozen', async () => db.isFrozen, 20_000, 50);
    await r.waitForLine('outage', (l) => l['type'] === 'state' && l['state'] === 'outage', 20_000);
    db.thaw();
    const resolved = async () => (await commandsOf(dbs.admin, dbs.shName, p)).every((c) => c.state === 'DONE');
    await waitFor('the rows resolved', resolved, 60_000, 500);
    expect(r.lines().filter((l) => l['type'] === 'state' && l['state'] === 'running').length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
