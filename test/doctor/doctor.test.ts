import { afterAll, describe, expect } from 'vitest';
import { doctorExitCode, vhostCheck } from '../../src/lib/doctor/decide.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import { hardenedBroker } from '../helpers/broker.js';
import { ensureExchange, insertRegistry, PUBLISHER } from '../helpers/deliveries.js';
import { freshVhost } from '../helpers/vhost.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'doctor' });

describe('doctor checks (pure)', () => {
  test('warns on the default vhost only', () => {
    expect(vhostCheck('amqp://u:p@h:5672').status).toBe('warn');
    expect(vhostCheck('amqp://u:p@h:5672/').status).toBe('warn');
    expect(vhostCheck('amqp://u:p@h:5672/%2F').status).toBe('warn');
    expect(vhostCheck('amqp://u:p@h:5672/fcctl')).toEqual({
      check: 'broker vhost',
      status: 'ok',
      detail: 'vhost fcctl',
    });
  });
  test('fails on any failed check, not on warnings', () => {
    expect(
      doctorExitCode([
        { check: 'a', status: 'warn', detail: '' },
        { check: 'b', status: 'skipped', detail: '' },
      ]),
    ).toBe(0);
    expect(
      doctorExitCode([
        { check: 'a', status: 'ok', detail: '' },
        { check: 'b', status: 'fail', detail: '' },
      ]),
    ).toBe(3);
  });
});

describe('fcctl doctor (real services)', () => {
  let dbs: TestDatabases;
  const vhost = freshVhost();
  test.beforeAll(async ({ dbs: services }) => {
    dbs = services;
    await ensureExchange();
  });
  afterAll(() => {
    vhost.drop();
  });
  const checks = (stdout: string) =>
    Object.fromEntries(
      jsonLines(stdout)
        .filter((l) => l['type'] === 'check')
        .map((l) => [l['check'], l]),
    );

  test('empty databases: schema checks fail naming missing tables, exit 3', async () => {
    const r = await runCli(['--json', 'doctor'], { env: dbs.env({ FCCTL_AMQP_URL: testAmqpUrl() }) });
    expect(r.code).toBe(3);
    const c = checks(r.stdout);
    expect(c['FC database']).toMatchObject({ status: 'ok' });
    expect(c['FC database schema']).toMatchObject({ status: 'fail' });
    expect(String(c['FC database schema']!['detail'])).toContain('missing table answer_delivery');
    expect(c['delivery exchange']).toMatchObject({ status: 'ok' });
  });

  test('after db init, with --probe: every check passes, the return arrives before its ack', async () => {
    expect((await runCli(['db', 'init', '--side', 'all'], { env: dbs.env() })).code).toBe(0);
    const r = await runCli(['--json', 'doctor', '--probe'], { env: dbs.env({ FCCTL_AMQP_URL: testAmqpUrl() }) });
    expect(r.code).toBe(0);
    const c = checks(r.stdout);
    expect(c['mandatory return probe']).toMatchObject({
      status: 'ok',
      detail:
        'a mandatory probe through fc.answer.delivery.v2 to fc.snapshot.v2.fcctl-return-probe.0 came back as a return before its ack',
    });
    expect(c['flow center']).toMatchObject({ status: 'skipped' });
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'summary', command: 'doctor', exitCode: 0, fail: 0 });
  });

  test('a least-privilege publisher (configure ^$, write on the exchange, read ^$): the exchange check passes saying what it could not verify; --probe exit 0', async () => {
    const hard = await hardenedBroker('^fc\\.snapshot\\.v2\\.');
    try {
      const r = await runCli(['--json', 'doctor', '--probe'], { env: dbs.env({ FCCTL_AMQP_URL: hard.publisherUrl }) });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      const c = checks(r.stdout);
      expect(c['delivery exchange']).toMatchObject({
        status: 'ok',
        detail:
          'fc.answer.delivery.v2 exists; its type and durability were not verified: the publisher may not configure it (re-declaring it was refused, 403 ACCESS_REFUSED), as seed 000 §6 asks; doctor --isolation verifies them through the management API',
      });
      expect(c['mandatory return probe']).toMatchObject({ status: 'ok' });
      expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'summary', command: 'doctor', exitCode: 0, fail: 0 });
    } finally {
      await hard.drop();
    }
  });

  test('a vhost without the delivery exchange fails the exchange check; send refuses to run (exit 3) and declares nothing', async () => {
    const env = dbs.env({
      FCCTL_AMQP_URL: vhost.url,
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
    });
    const r = await runCli(['--json', 'doctor'], { env });
    expect(r.code).toBe(3);
    expect(checks(r.stdout)['delivery exchange']).toMatchObject({ status: 'fail' });
    const send = await runCli(['deliveries', 'send'], { env });
    expect(send.code).toBe(3);
    expect(send.stderr).toBe(
      'fcctl: exchange fc.answer.delivery.v2 does not exist on the broker: create it, or pass --declare\n',
    );
    // still missing: nothing was declared
    expect(checks((await runCli(['--json', 'doctor'], { env })).stdout)['delivery exchange']).toMatchObject({
      status: 'fail',
    });
    // --declare creates it (send checks the publisher against the registry first)
    await insertRegistry(dbs.admin, dbs.fcName);
    expect((await runCli(['deliveries', 'send', '--declare'], { env })).code).toBe(0);
    expect(checks((await runCli(['--json', 'doctor'], { env })).stdout)['delivery exchange']).toMatchObject({
      status: 'ok',
    });
  });

  test('an unreachable broker and flow center are failed checks with the password masked', async () => {
    const r = await runCli(['--json', 'doctor'], {
      env: dbs.env({ FCCTL_AMQP_URL: 'amqp://fcctl:pw-SECRET-1@127.0.0.1:1/x', FCCTL_FLOW_URL: 'http://127.0.0.1:1/' }),
    });
    expect(r.code).toBe(3);
    const c = checks(r.stdout);
    expect(c['broker']).toMatchObject({ status: 'fail' });
    expect(c['flow center']).toMatchObject({ status: 'fail' });
    expect(r.stdout + r.stderr).not.toContain('pw-SECRET-1');
  });
});
