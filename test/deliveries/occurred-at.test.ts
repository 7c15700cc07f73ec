import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect } from 'vitest';
import { openDb } from '../../src/lib/db/connect.js';
import { readServerZone, zoneFromServer } from '../../src/lib/time/service-zone.js';
import { offsetAt } from '../../src/lib/time/zone.js';
import { jsonLines, spawnCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { servicesTest } from '../helpers/services.js';

/**
 * SPEC §10 (issue 16, part 5): `occurredAt` carries the service's offset, never the fcctl host's.
 * The built binary sends the same row under two host zones; the message bodies are byte-identical.
 * `deliveries send` relays every due row of its database, so this file has databases of its own.
 */

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const test = servicesTest({ prefix: 'occurred', init: 'fc' });
const HOST_ZONES = ['UTC', 'Asia/Shanghai'] as const;
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let key: string;
let eventId: string;
let queue: Awaited<ReturnType<typeof bindQueue>>;

test.beforeAll(async ({ dbs: d }) => {
  dbs = d;
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  await insertRegistry(dbs.admin, dbs.fcName);
  await ensureExchange();
  key = uniqueConsumerKey('tz');
  queue = await bindQueue(key);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  // occurred_at '2026-10-21 10:05:00', the seed's example
  [eventId] = (await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key })) as [string];
});
afterAll(async () => {
  await queue?.close();
});

/** Sends the row once with the built binary under host zone `tz`; returns the one message it published. */
async function sendUnder(tz: string, extra: Record<string, string | undefined>, flags: readonly string[] = []) {
  await dbs.admin.query(
    `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'PENDING', retry_count = 0, next_retry_at = NULL, broker_accepted_at = NULL, claim_owner = NULL, claim_expires_at = NULL WHERE event_id = ?`,
    [eventId],
  );
  const r = await spawnCli(['--json', ...flags, 'deliveries', 'send'], { env: { ...env, ...extra, TZ: tz } });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'summary', accepted: 1, failed: 0 });
  const messages = await queue.drain();
  expect(messages).toHaveLength(1);
  return messages[0]!;
}

describe('occurredAt under two host zones (the built binary)', () => {
  test('the host TZ really changes what a JS Date says (so the comparison below can fail)', () => {
    const offsets = HOST_ZONES.map(
      (tz) =>
        spawnSync(
          process.execPath,
          ['-e', 'process.stdout.write(String(new Date(2026, 9, 21, 10, 5).getTimezoneOffset()))'],
          { env: { ...process.env, TZ: tz }, encoding: 'utf8' },
        ).stdout,
    );
    expect(offsets).toEqual(['0', '-480']);
  });

  test.each([
    [
      'FCCTL_SERVICE_TIME_ZONE=Asia/Shanghai',
      { FCCTL_SERVICE_TIME_ZONE: 'Asia/Shanghai' },
      [],
      '2026-10-21T10:05:00+08:00',
    ],
    [
      'FCCTL_SERVICE_TIME_ZONE=America/New_York (summer time in October)',
      { FCCTL_SERVICE_TIME_ZONE: 'America/New_York' },
      [],
      '2026-10-21T10:05:00-04:00',
    ],
    ['--service-time-zone +05:30', {}, ['--service-time-zone', '+05:30'], '2026-10-21T10:05:00+05:30'],
  ] as const)('%s: the same bytes under TZ=UTC and TZ=Asia/Shanghai', async (_name, extra, flags, occurredAt) => {
    const bodies: Buffer[] = [];
    for (const tz of HOST_ZONES) bodies.push((await sendUnder(tz, extra, flags)).content);
    expect(bodies[0]!.equals(bodies[1]!)).toBe(true);
    const body = JSON.parse(bodies[0]!.toString('utf8')) as Record<string, unknown>;
    expect(body['eventId']).toBe(eventId);
    expect(body['occurredAt']).toBe(occurredAt);
  });

  test("unset: the FC database's own zone (the local MariaDB: SYSTEM, system_time_zone UTC → +00:00), the same under both host zones", async () => {
    const db = await openDb('FC database', dbs.fcUrl);
    const facts = await readServerZone(db).finally(() => db.close());
    const expected = `2026-10-21T10:05:00${offsetAt('2026-10-21 10:05:00', zoneFromServer(facts).zone)}`;
    // the local test server runs in UTC (services.sh); an external one says what it is
    if (facts.globalZone === 'SYSTEM' && facts.systemZone === 'UTC') expect(expected).toBe('2026-10-21T10:05:00+00:00');
    const [utc, shanghai] = [await sendUnder('UTC', {}), await sendUnder('Asia/Shanghai', {})];
    expect(utc.content.equals(shanghai.content)).toBe(true);
    expect(utc.properties).toEqual(shanghai.properties);
    expect((JSON.parse(utc.content.toString('utf8')) as Record<string, unknown>)['occurredAt']).toBe(expected);
  });
});
