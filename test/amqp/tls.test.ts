import { readFileSync } from 'node:fs';
import amqp from 'amqplib';
import { afterAll, afterEach, describe, expect } from 'vitest';
import { type Broker, openBroker } from '../../src/lib/amqp/connect.js';
import { jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import { type TestDatabases, testAmqpUrl } from '../helpers/db.js';
import { mqCtl } from '../helpers/broker.js';
import {
  drainQueue,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { freePort, httpGet, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';
import { CLIENT_CN, startTlsBroker, type TlsBroker, TLS_PLAIN_USER } from '../helpers/tls-broker.js';

/**
 * fcctl on a broker reachable only over TLS with client certificates: a private RabbitMQ node
 * (test/helpers/tls-broker.ts: its own ports and directory, started once for this file) with
 * `verify_peer` + `fail_if_no_peer_cert` and the `rabbitmq_auth_mechanism_ssl` plugin, the
 * certificates made by openssl. What the broker itself reports is read back with rabbitmqctl.
 */

const EXCHANGE = 'fc.answer.delivery.v2';
const test = servicesTest({ prefix: 'mqtls', init: 'all' });
let mq: TlsBroker;
let dbs: TestDatabases;
const opened: Broker[] = [];

test.beforeAll(async ({ dbs: d }) => {
  dbs = d;
  mq = await startTlsBroker();
  await insertRegistry(dbs.admin, dbs.fcName);
  // the delivery exchange, declared by an administrator over TLS
  const conn = await amqp.connect(mq.url({}), {
    ca: readFileSync(mq.files.ca),
    cert: readFileSync(mq.files.cert),
    key: readFileSync(mq.files.key),
  });
  await (await conn.createChannel()).assertExchange(EXCHANGE, 'topic', { durable: true });
  await conn.close();
}, 180_000);
afterAll(async () => {
  await mq?.stop();
});
afterEach(async () => {
  for (const b of opened.splice(0)) await b.close();
});

/** The URL parameters of mutual TLS with this node's CA and the trusted client certificate. */
const mutual = () => ({ cacertfile: mq.files.ca, certfile: mq.files.cert, keyfile: mq.files.key });
const open = async (url: string) => {
  const b = await openBroker(url);
  opened.push(b);
  return b;
};
/** What the broker says of the connection `b` holds: its user, login mechanism, heartbeat (`timeout`), TLS. */
async function brokerView(b: Broker, ctl = mq.ctl): Promise<Record<string, string>> {
  const port = (b.connection as unknown as { connection: { stream: { localPort: number } } }).connection.stream
    .localPort;
  const cols = ['peer_port', 'user', 'auth_mechanism', 'timeout', 'ssl'];
  const out = await ctl('list_connections', '--no-table-headers', '--quiet', ...cols);
  const row = out
    .trim()
    .split('\n')
    .map((l) => l.split('\t'))
    .find((r) => r[0] === String(port));
  if (!row) throw new Error(`no connection from port ${port} in:\n${out}`);
  return Object.fromEntries(cols.map((c, i) => [c, row[i]!]));
}
const env = (amqpUrl: string) =>
  dbs.env({ FCCTL_AMQP_URL: amqpUrl, FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
const checks = (stdout: string) =>
  Object.fromEntries(
    jsonLines(stdout)
      .filter((l) => l['type'] === 'check')
      .map((l) => [l['check'], l]),
  );

/** A queue bound to every school of `key` (declared over TLS, as a consumer would), to read back what was published. */
async function bindOverTls(key: string) {
  const conn = await amqp.connect(mq.url({}), {
    ca: readFileSync(mq.files.ca),
    cert: readFileSync(mq.files.cert),
    key: readFileSync(mq.files.key),
  });
  const ch = await conn.createChannel();
  const queue = `tls.${key}`;
  await ch.assertQueue(queue, { durable: false });
  await ch.bindQueue(queue, EXCHANGE, `fc.snapshot.v2.${key}.*`);
  return { drain: () => drainQueue(ch, queue), close: () => conn.close() };
}

describe('RabbitMQ over TLS with client certificates (a private TLS node)', () => {
  test('mutual TLS with a PLAIN login: the broker sees TLS, the user, PLAIN, and the heartbeat the URL names', async () => {
    const b = await open(mq.url({ ...mutual(), heartbeat: '7' }));
    expect(await brokerView(b)).toMatchObject({
      user: TLS_PLAIN_USER.name,
      auth_mechanism: 'PLAIN',
      timeout: '7',
      ssl: 'true',
    });
  });

  test("no heartbeat in the URL: fcctl's 15 s is what the broker applies (amqplib alone gave the broker's 60)", async () => {
    const b = await open(mq.url(mutual()));
    expect((await brokerView(b))['timeout']).toBe('15');
  });

  test("auth_mechanism=external: logged in as the certificate's CN, with no user or password in the URL", async () => {
    const b = await open(mq.url({ ...mutual(), auth_mechanism: 'external' }, null));
    expect(await brokerView(b)).toMatchObject({ user: CLIENT_CN, auth_mechanism: 'EXTERNAL', timeout: '15' });
  });

  test('a password beyond ASCII (percent-encoded UTF-8, as URLs write it) logs in with PLAIN, the default, as with AMQPLAIN', async () => {
    const user = { name: 'fcctl-tls-utf8', password: 'pässwörd-密码' };
    await mq.ctl('add_user', user.name, user.password);
    await mq.ctl('set_permissions', '-p', 'fcctl', user.name, '.*', '.*', '.*');
    const plain = await open(mq.url(mutual(), user));
    expect(await brokerView(plain)).toMatchObject({ user: user.name, auth_mechanism: 'PLAIN' });
    const amqplain = await open(mq.url({ ...mutual(), auth_mechanism: 'amqplain' }, user));
    expect(await brokerView(amqplain)).toMatchObject({ user: user.name, auth_mechanism: 'AMQPLAIN' });
  });

  test("auth_mechanism=amqplain logs in with the URL's user and password", async () => {
    const b = await open(mq.url({ ...mutual(), auth_mechanism: 'amqplain' }));
    expect(await brokerView(b)).toMatchObject({ user: TLS_PLAIN_USER.name, auth_mechanism: 'AMQPLAIN' });
  });

  test('server_name_indication: the name checked against the certificate when the URL names an IP; a name it lacks is exit 3 naming it', async () => {
    const byIp = (params: Record<string, string>) =>
      mq.url(params).replace('//fcctl-tls:fcctl-tls-local@localhost:', '//fcctl-tls:fcctl-tls-local@127.0.0.1:');
    await open(byIp({ ...mutual(), server_name_indication: 'localhost' }));
    // by IP alone (the certificate holds IP:127.0.0.1): connected, and no DEP0123 warning on stderr
    // about amqplib sending an IP as SNI (a real process: the warning goes to its stderr)
    const ip = await spawnCli(['--json', 'doctor'], { env: env(byIp(mutual())) });
    expect(checks(ip.stdout)['broker']).toMatchObject({ status: 'ok' });
    expect(ip.stderr).toBe('');
    const r = await runCli(['--json', 'doctor'], {
      env: env(byIp({ ...mutual(), server_name_indication: 'mq.example' })),
    });
    expect(r.code).toBe(3);
    expect(checks(r.stdout)['broker']).toMatchObject({ status: 'fail' });
    expect(String(checks(r.stdout)['broker']!['detail'])).toMatch(
      /: the broker's certificate does not name "mq\.example": connect by a name it holds, or set "server_name_indication" \(ERR_TLS_CERT_ALTNAME_INVALID\)$/,
    );
  });

  test('doctor --probe over mutual TLS with EXTERNAL: every check passes, the broker line says how it connected', async () => {
    const url = mq.url({ ...mutual(), auth_mechanism: 'external' }, null);
    const r = await runCli(['--json', 'doctor', '--probe'], { env: env(url) });
    const c = checks(r.stdout);
    expect(c['broker']).toMatchObject({
      status: 'ok',
      detail:
        "connected over TLS: the broker's certificate checked (verify_peer), a client certificate, login EXTERNAL, heartbeat 15 s",
    });
    expect(c['delivery exchange']).toMatchObject({ status: 'ok' });
    expect(c['mandatory return probe']).toMatchObject({ status: 'ok' });
    expect(r.code, r.stdout).toBe(0);
  });

  test('deliveries send publishes over amqps, logged in by its certificate (EXTERNAL): each row BROKER_ACCEPTED and delivered', async () => {
    const key = uniqueConsumerKey('tls');
    await insertGrant(dbs.admin, dbs.fcName, {
      formUuid: '0f0e0d0c-0000-4000-8000-000000000001',
      schoolId: 5,
      consumerKey: key,
    });
    const ids = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 3);
    const q = await bindOverTls(key);
    try {
      const r = await runCli(['--json', 'deliveries', 'send'], {
        env: env(mq.url({ ...mutual(), auth_mechanism: 'external' }, null)),
      });
      expect(r.code, r.stderr).toBe(0);
      const got = await q.drain();
      expect(got.map((m) => m.properties.messageId).sort()).toEqual([...ids].sort());
      const [rows] = await dbs.admin.query(
        `SELECT state FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ?`,
        [key],
      );
      expect((rows as { state: string }[]).map((x) => x.state)).toEqual([
        'BROKER_ACCEPTED',
        'BROKER_ACCEPTED',
        'BROKER_ACCEPTED',
      ]);
    } finally {
      await q.close();
    }
  });

  test.each<[string, () => Record<string, string>, RegExp]>([
    [
      'no client certificate',
      () => ({ cacertfile: mq.files.ca }),
      /the broker requires a client certificate and none was given: set "certfile" and "keyfile" \(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED\)/,
    ],
    [
      'a wrong CA',
      () => ({ ...mutual(), cacertfile: mq.files.otherCa }),
      /the broker's certificate is not signed by a trusted CA \(cacertfile .*other-ca\.pem\) \(SELF_SIGNED_CERT_IN_CHAIN\)/,
    ],
    [
      'a client certificate the broker does not trust',
      () => ({ cacertfile: mq.files.ca, certfile: mq.files.strangerCert, keyfile: mq.files.strangerKey }),
      /the broker does not trust the client certificate .*stranger\.pem \(ERR_SSL_TLSV1_ALERT_UNKNOWN_CA\)/,
    ],
    // OpenSSL's own answer named neither the file nor the cause (ERR_OSSL_UNSUPPORTED, ERR_OSSL_PEM_NO_START_LINE)
    [
      'an encrypted key',
      () => ({ ...mutual(), keyfile: mq.files.encryptedKey }),
      /keyfile .*client-encrypted\.key \(amqpUrl\) is an encrypted key: give the key unencrypted/,
    ],
    [
      'the certificate and key given the wrong way round',
      () => ({ ...mutual(), certfile: mq.files.key, keyfile: mq.files.cert }),
      /certfile .*client\.key \(amqpUrl\) holds no PEM certificate/,
    ],
    [
      'a certificate file that is not there',
      () => ({ ...mutual(), certfile: '/nonexistent/client.pem' }),
      /cannot read certfile \/nonexistent\/client\.pem \(amqpUrl\): ENOENT/,
    ],
  ])('%s: deliveries send exits 3, one line naming it, nothing claimed', async (_name, params, cause) => {
    const key = uniqueConsumerKey('tlsx');
    await insertGrant(dbs.admin, dbs.fcName, {
      formUuid: '0f0e0d0c-0000-4000-8000-000000000001',
      schoolId: 5,
      consumerKey: key,
    });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 1);
    const r = await runCli(['deliveries', 'send'], { env: env(mq.url(params())) });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^fcctl: [^\n]+\n$/);
    expect(r.stderr).toMatch(cause);
    expect(r.stderr).not.toContain(TLS_PLAIN_USER.password);
    const [rows] = await dbs.admin.query(
      `SELECT state, claim_owner FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ?`,
      [key],
    );
    expect(rows).toEqual([{ state: 'PENDING', claim_owner: null }]);
  });

  test('EXTERNAL refused: a certificate whose CN is no user, or a vhost the user may not use: exit 3 naming it', async () => {
    const nobody = await runCli(['deliveries', 'send'], {
      env: env(
        mq.url(
          {
            cacertfile: mq.files.ca,
            certfile: mq.files.nobodyCert,
            keyfile: mq.files.nobodyKey,
            auth_mechanism: 'external',
          },
          null,
        ),
      ),
    });
    expect(nobody.code).toBe(3);
    expect(nobody.stderr).toMatch(
      /^fcctl: cannot connect to RabbitMQ at [^\n]*ACCESS_REFUSED - Login was refused using authentication mechanism EXTERNAL[^\n]*\n$/,
    );
    const vhost = await runCli(['deliveries', 'send'], {
      env: env(mq.url({ ...mutual(), auth_mechanism: 'external' }, null).replace('/fcctl?', '/fcctl-elsewhere?')),
    });
    expect(vhost.code).toBe(3);
    expect(vhost.stderr).toMatch(
      /: vhost "fcctl-elsewhere" not found or not permitted for the client certificate's user\n$/,
    );
  });

  test('deliveries send --follow over TLS: no client certificate is a misconfiguration (/readyz 503 naming it, nothing claimed); with one it relays', async () => {
    const key = uniqueConsumerKey('tlsf');
    await insertGrant(dbs.admin, dbs.fcName, {
      formUuid: '0f0e0d0c-0000-4000-8000-000000000001',
      schoolId: 5,
      consumerKey: key,
    });
    const ids = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 2);
    const port = await freePort();
    const broken = startService(['--json', 'deliveries', 'send', '--follow', '--listen', `:${port}`], {
      env: env(mq.url({ cacertfile: mq.files.ca })),
    });
    const line = await broken.waitForLine(
      'misconfigured',
      (l) => l['type'] === 'state' && l['state'] === 'misconfigured',
    );
    expect(String(line['detail'])).toMatch(/the broker requires a client certificate and none was given/);
    const ready = await httpGet(port, '/readyz');
    expect([ready.status, ready.body]).toEqual([
      503,
      expect.stringMatching(/^misconfigured: .*requires a client certificate/),
    ]);
    expect((await broken.stop()).code).toBe(0);
    const state = async () => {
      const [rows] = await dbs.admin.query(
        `SELECT state, claim_owner FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ?`,
        [key],
      );
      return rows as { state: string; claim_owner: string | null }[];
    };
    expect(await state()).toEqual([
      { state: 'PENDING', claim_owner: null },
      { state: 'PENDING', claim_owner: null },
    ]);
    const q = await bindOverTls(key);
    const relay = startService(['--json', 'deliveries', 'send', '--follow'], {
      env: env(mq.url({ ...mutual(), auth_mechanism: 'external' }, null)),
    });
    await waitFor(
      'both rows accepted over TLS',
      async () => (await state()).every((r) => r.state === 'BROKER_ACCEPTED'),
      30_000,
      100,
    ).catch((e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(relay.lines().slice(-5))} ${relay.stderr()}`);
    });
    expect((await relay.stop()).code).toBe(0);
    expect((await q.drain()).map((m) => m.properties.messageId).sort()).toEqual([...ids].sort());
    await q.close();
  }, 90_000);

  test('amqp:// to the TLS port: exit 3 at once, one line that names amqps:// (the node answers a TLS alert and closes)', async () => {
    const plain = mq.url({}).replace(/^amqps:/, 'amqp:');
    const started = Date.now();
    const r = await runCli(['deliveries', 'send'], { env: env(plain) });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^fcctl: cannot connect to RabbitMQ at amqp:\/\/fcctl-tls:\*\*\*@[^\n]*: (Socket closed abruptly during opening handshake|ECONNRESET) \(the broker restarting, or a TLS port: amqps:\/\/\)\n$/,
    );
    // not a hang: within the 5 s connection_timeout, plus a process start on a loaded machine
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test("verify=verify_none connects whatever signed the broker's certificate", async () => {
    const b = await open(mq.url({ ...mutual(), cacertfile: mq.files.otherCa, verify: 'verify_none' }));
    expect((await brokerView(b))['ssl']).toBe('true');
  });

  test('an unknown parameter or a bad value: exit 2, one line, before any connection', async () => {
    const typo = await runCli(['deliveries', 'send'], { env: env(mq.url({ ...mutual(), hearbeat: '5' })) });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^fcctl: amqpUrl has an unknown parameter "hearbeat" \(known: [^\n]+\n$/);
    // a "%" not followed by two hex digits: was amqplib's URIError, "URI malformed", exit 3
    const malformed = await runCli(['deliveries', 'send'], {
      env: env(mq.url(mutual(), { name: 'fcctl-tls', password: 'x' }).replace(':x@', ':50%off@')),
    });
    expect([malformed.code, malformed.stderr]).toEqual([
      2,
      expect.stringMatching(
        /^fcctl: amqpUrl (has a stray % in its user or password|'s user or password is not percent-encoded): amqps:\/\/fcctl-tls:\*\*\*@[^\n]+\n$/,
      ),
    ]);
    const verify = await runCli(['deliveries', 'send'], { env: env(mq.url({ ...mutual(), verify: 'yes' })) });
    expect(verify.code).toBe(2);
    expect(verify.stderr).toMatch(
      /^fcctl: amqpUrl has verify=yes \(one of: verify_peer, verify_none\): amqps:\/\/fcctl-tls:\*\*\*@[^\n]+\n$/,
    );
  });
});

describe('the heartbeat on the plain local broker', () => {
  test("no heartbeat in the URL: 15 s read back from the broker (it was 60, the broker's: amqplib ignored the option); the URL's own wins", async () => {
    const b = await open(testAmqpUrl());
    expect((await brokerView(b, mqCtl))['timeout']).toBe('15');
    const named = await open(`${testAmqpUrl()}?heartbeat=9`);
    expect((await brokerView(named, mqCtl))['timeout']).toBe('9');
  });
});
