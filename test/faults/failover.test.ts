import { randomBytes } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { freshDatabases, testAmqpUrl, testMysqlUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { grantStatements, privilegesPage } from '../helpers/privileges.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { freePort, httpGet, startService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A managed failover (issue 35 §5), as RDS/Aurora or Cloud SQL make it: the writer turns read-only
 * for a while (`SET GLOBAL read_only=1`, 20 s) under a `deliveries send --follow` relay that runs
 * as a least-privilege user (docs/privileges.md) and is mid-drain. The relay rides it out as an
 * outage: the batches it had published keep their outcomes and write them once writable (no row
 * goes out twice), nothing is charged, `/readyz` says 503 meanwhile and 200 after, and it says
 * `running` again once, when a write succeeds. A batch run meanwhile exits 3 with one line.
 * Sets a global variable: a fault test (run alone), restored in `finally`.
 */

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const ROWS = 3000;
const READ_ONLY_MS = 20_000;
let dbs: TestDatabases;
let admin: mysql.Connection;
let account: string;
let env: Record<string, string | undefined>;

const count = async (sql: string, params: unknown[] = []) =>
  Number(((await admin.query(sql, params))[0] as Array<{ n: number }>)[0]!.n);
const readOnly = (on: boolean) => admin.query(`SET GLOBAL read_only = ${on ? 1 : 0}`);

beforeAll(async () => {
  dbs = await freshDatabases('ffailover');
  admin = dbs.admin;
  await admin.query(`USE \`${dbs.fcName}\``);
  const adminEnv = dbs.env({
    FCCTL_AMQP_URL: testAmqpUrl(),
    FCCTL_APP_KEY: PUBLISHER.appKey,
    FCCTL_APP_CODE: PUBLISHER.appCode,
  });
  expect((await runCli(['db', 'init', '--side', 'fc'], { env: adminEnv })).code).toBe(0);
  await insertRegistry(admin, dbs.fcName);
  await ensureExchange();
  // the relay's own user, holding exactly the grants docs/privileges.md names (no SUPER, no
  // READ ONLY ADMIN: read_only applies to it, as to an application user on a managed server)
  const grants = privilegesPage().find((g) => g.command === 'deliveries send --follow');
  if (!grants) throw new Error('docs/privileges.md has no block for deliveries send --follow');
  const user = { name: `fcctl_fo_${randomBytes(4).toString('hex')}`, password: `pw-${randomBytes(8).toString('hex')}` };
  account = `'${user.name}'@'%'`;
  await admin.query(`CREATE USER ${account} IDENTIFIED BY '${user.password}'`);
  for (const s of grantStatements(grants, { fc: dbs.fcName, sh: dbs.shName, user: account })) await admin.query(s);
  const url = new URL(testMysqlUrl());
  url.username = user.name;
  url.password = user.password;
  url.pathname = `/${dbs.fcName}`;
  env = { ...adminEnv, FCCTL_FC_DATABASE_URL: url.toString() };
});
afterAll(async () => {
  await readOnly(false).catch(() => undefined);
  await admin?.query(`DROP USER IF EXISTS ${account}`).catch(() => undefined);
  await dbs?.drop().catch(() => undefined);
});

describe('a follow relay through a failover (the writer read-only for 20 s)', () => {
  it('keeps its published outcomes, charges nothing, is unready meanwhile, running once after', async () => {
    const key = uniqueConsumerKey('ffo');
    const queue = await bindQueue(key, { durable: true });
    await insertGrant(admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, ROWS);
    // the broker behind a slow link: the drain takes ~15 s, so read-only begins mid-drain, with
    // batches published and their outcomes not yet written
    const amqpUrl = new URL(testAmqpUrl());
    const proxy = new TcpProxy(amqpUrl.hostname, Number(amqpUrl.port || 5672));
    await proxy.start();
    proxy.delayMs = 40;
    const port = await freePort();
    const relay = startService(
      [
        '--json',
        'deliveries',
        'send',
        '--follow',
        '--listen',
        `:${port}`,
        '--batch-size',
        '100',
        '--window',
        '20',
        // shorter than the default 120 s, so a batch left claimed would go out again within the test
        '--lease-seconds',
        '45',
      ],
      { env: { ...env, FCCTL_AMQP_URL: viaProxy(testAmqpUrl(), proxy.port) }, timeoutMs: 300_000 },
    );
    const accepted = () =>
      count(`SELECT COUNT(*) AS n FROM answer_delivery WHERE consumer_app_key = ? AND state = 'BROKER_ACCEPTED'`, [
        key,
      ]);
    const charged = () => count('SELECT COUNT(*) AS n FROM answer_delivery WHERE retry_count > 0');
    try {
      await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running', 60_000);
      await waitFor('the drain under way', async () => (await accepted()) >= 300, 60_000, 50);
      let linesAtEnd = 0;
      let linesAtStart = 0;
      let during = { unready: 0, polls: 0, claimed: 0 };
      let batch: Awaited<ReturnType<typeof runCli>> | null = null;
      await readOnly(true);
      try {
        linesAtStart = relay.lines().length;
        const began = Date.now();
        await waitFor(
          'unready during read-only',
          async () => (await httpGet(port, '/readyz').catch(() => ({ status: -1 }))).status === 503,
          10_000,
          100,
        );
        // a batch run meanwhile: exit 3, one line, nothing claimed
        batch = await runCli(['deliveries', 'send', '--max-seconds', '20'], { env });
        while (Date.now() - began < READ_ONLY_MS) {
          const r = await httpGet(port, '/readyz').catch(() => ({ status: -1 }));
          during.polls += 1;
          if (r.status === 503) during.unready += 1;
          await new Promise((res) => setTimeout(res, 200));
        }
        // nothing charged: the claimed rows keep their budget (their state is PENDING, claimed)
        during = {
          ...during,
          claimed: await count('SELECT COUNT(*) AS n FROM answer_delivery WHERE claim_owner IS NOT NULL'),
        };
        expect(await charged()).toBe(0);
      } finally {
        linesAtEnd = relay.lines().length;
        await readOnly(false);
      }
      const states = (from: number, to?: number) =>
        relay
          .lines()
          .slice(from, to)
          .filter((l) => l['type'] === 'state')
          .map((l) => String(l['state']));
      expect(batch?.code, batch?.stderr).toBe(3);
      expect(batch?.stderr.trim().split('\n')).toHaveLength(1);
      expect(batch?.stderr).toMatch(/^fcctl: the FC database is read-only \(a failover\?\): .*read-only/);
      expect(during.unready, `/readyz 503 on every poll during read-only (${during.polls} polls)`).toBe(during.polls);
      // before: each retry reconnected with reads only and said running (~20 times in 20 s)
      expect(states(linesAtStart, linesAtEnd).filter((s) => s === 'running')).toEqual([]);
      await waitFor('ready again', async () => (await httpGet(port, '/readyz')).status === 200, 60_000, 200);
      await waitFor('every row accepted', async () => (await accepted()) === ROWS, 120_000, 500);
      const stopped = await relay.stop('SIGTERM');
      expect(stopped.code).toBe(0);
      const after = states(linesAtEnd);
      expect(after.filter((s) => s === 'running').length, after.join(' ')).toBeLessThanOrEqual(1);
      expect(await charged()).toBe(0);
      expect(await count('SELECT COUNT(*) AS n FROM answer_delivery WHERE claim_owner IS NOT NULL')).toBe(0);
      const messages = await queue.drain();
      const ids = messages.map((m) => String(m.properties.messageId));
      const distinct = new Set(ids);
      expect(distinct.size).toBe(ROWS);
      // published once each: the outcomes of the batches caught by read-only were written when it ended
      expect(ids.length - distinct.size, 'rows published twice').toBe(0);
      console.log(
        `failover: ${ROWS} rows, ${during.claimed} claimed through ${READ_ONLY_MS / 1000} s read-only, ` +
          `${during.unready}/${during.polls} /readyz 503, batch run: ${batch?.code} ${JSON.stringify(batch?.stderr.trim())}, states during: ${states(linesAtStart, linesAtEnd).join(' ')}; after: ${after.join(' ')}`,
      );
    } finally {
      await relay.stop('SIGKILL');
      await proxy.stop();
      await queue.close();
    }
  }, 300_000);
});
