import { describe, expect, test } from 'vitest';
import { UsageError } from '../../src/lib/cli/exit.js';
import { brokerConnectedCheck, type CheckResult } from '../../src/lib/doctor/decide.js';
import { type AmqpUrlSettings, parseAmqpUrl, tlsCause } from '../../src/lib/amqp/url.js';

const TLS = 'amqps://pub:s3cret@mq.example:5671/fcctl';

describe("parseAmqpUrl: the URL parameters, with RabbitMQ's names", () => {
  test.each<[string, string, Partial<AmqpUrlSettings>]>([
    [
      "no parameters: heartbeat 15 (fcctl's, given to amqplib in the URL), 5 s connect, PLAIN, verify_peer",
      'amqp://u:p@h:5672/v',
      {
        clientUrl: 'amqp://u:p@h:5672/v?heartbeat=15',
        tls: false,
        heartbeatSeconds: 15,
        connectionTimeoutMs: 5000,
        authMechanism: 'plain',
        verify: 'verify_peer',
      },
    ],
    ['heartbeat from the URL', 'amqp://h/v?heartbeat=7', { clientUrl: 'amqp://h/v?heartbeat=7', heartbeatSeconds: 7 }],
    ['connection_timeout in ms', 'amqp://h/v?connection_timeout=20000', { connectionTimeoutMs: 20000 }],
    [
      'mutual TLS: files, verify, SNI; the TLS parameters never reach amqplib',
      `${TLS}?cacertfile=/tls/ca.pem&certfile=/tls/c.pem&keyfile=/tls/c.key&verify=verify_peer&server_name_indication=mq.internal`,
      {
        clientUrl: `${TLS}?heartbeat=15`,
        tls: true,
        cacertfile: '/tls/ca.pem',
        certfile: '/tls/c.pem',
        keyfile: '/tls/c.key',
        verify: 'verify_peer',
        serverName: 'mq.internal',
      },
    ],
    ['verify_none', `${TLS}?verify=verify_none`, { verify: 'verify_none' }],
    [
      'a path with spaces, percent-encoded',
      `${TLS}?cacertfile=%2Fetc%2Ffc%20ctl%2Fca.pem`,
      { cacertfile: '/etc/fc ctl/ca.pem' },
    ],
    [
      'EXTERNAL with a client certificate',
      `${TLS}?certfile=/c.pem&keyfile=/c.key&auth_mechanism=external`,
      { authMechanism: 'external' },
    ],
    ['AMQPLAIN, any case', 'amqp://u:p@h/v?auth_mechanism=AMQPLAIN', { authMechanism: 'amqplain' }],
    ['a fragment is dropped with the query', 'amqp://h/v?heartbeat=9#x', { clientUrl: 'amqp://h/v?heartbeat=9' }],
  ])('%s', (_name, url, expected) => {
    expect(parseAmqpUrl(url)).toMatchObject(expected);
  });

  test.each<[string, string, RegExp]>([
    ['an unknown parameter', 'amqp://u:pw@h/v?hearbeat=5', /unknown parameter "hearbeat" \(known: cacertfile, /],
    ["amqplib's own names are not RabbitMQ's", 'amqp://h/v?frameMax=4096', /unknown parameter "frameMax"/],
    ['a parameter twice', 'amqp://h/v?heartbeat=5&heartbeat=6', /names "heartbeat" twice/],
    ['a TLS parameter on amqp://', 'amqp://h/v?cacertfile=/ca.pem', /"cacertfile", a TLS parameter: use amqps:\/\//],
    ['verify with a typo', `${TLS}?verify=verify-peer`, /verify=verify-peer \(one of: verify_peer, verify_none\)/],
    [
      'an unknown mechanism',
      `${TLS}?auth_mechanism=scram`,
      /auth_mechanism=scram \(one of: plain, amqplain, external\)/,
    ],
    [
      "heartbeat 0 (amqplib would take the broker's)",
      'amqp://h/v?heartbeat=0',
      /heartbeat=0 \(a whole number from 1 to 65535\)/,
    ],
    ['heartbeat not a number', 'amqp://h/v?heartbeat=15s', /heartbeat=15s/],
    ['heartbeat too large', 'amqp://h/v?heartbeat=70000', /heartbeat=70000/],
    ['connection_timeout negative', 'amqp://h/v?connection_timeout=-1', /connection_timeout=-1/],
    ['certfile without keyfile', `${TLS}?certfile=/c.pem`, /needs both "certfile" and "keyfile"/],
    ['an empty file name', `${TLS}?cacertfile=`, /empty "cacertfile"/],
    ['an empty server name', `${TLS}?server_name_indication=`, /empty "server_name_indication"/],
    [
      'EXTERNAL without a certificate',
      `${TLS}?auth_mechanism=external`,
      /auth_mechanism=external without a client certificate/,
    ],
    [
      'EXTERNAL over plain AMQP',
      'amqp://h/v?auth_mechanism=external',
      /auth_mechanism=external without a client certificate/,
    ],
    ['another scheme', 'http://h/v', /must start with amqp:\/\/ or amqps:\/\//],
    // Read as written these were host "pub", port 2024 and a parameter (or fragment) holding the
    // rest of the password: the error named that parameter and showed the URL unmasked.
    [
      'a raw "?" in the password',
      'amqps://pub:2024?s3cret@mq.example/fcctl',
      /before an "@": percent-encode it in the user or password/,
    ],
    ['a raw "#" in the password', 'amqps://pub:2024#s3cret@mq.example/fcctl', /before an "@"/],
    ['a raw "/" in the password', 'amqp://pub:2024/s3cret@mq.example/fcctl', /before an "@"/],
    ['a raw "?" in the user', 'amqps://p?ub:s3cret@mq.example/fcctl', /before an "@"/],
  ])('%s: exit 2, one line naming it, the password masked', (_name, url, message) => {
    let err: unknown;
    try {
      parseAmqpUrl(url);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    const text = (err as Error).message;
    expect(text).toMatch(message);
    expect(text).not.toMatch(/\n|s3cret|:pw@/);
  });
});

describe('tlsCause: a TLS failure named by what to change in the URL', () => {
  const s = (q: string) => parseAmqpUrl(`${TLS}${q}`);
  test.each<[string, AmqpUrlSettings, string | null]>([
    [
      'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
      s(''),
      'the broker requires a client certificate and none was given: set "certfile" and "keyfile" (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED)',
    ],
    [
      'SELF_SIGNED_CERT_IN_CHAIN',
      s('?cacertfile=/wrong/ca.pem'),
      "the broker's certificate is not signed by a trusted CA (cacertfile /wrong/ca.pem) (SELF_SIGNED_CERT_IN_CHAIN)",
    ],
    [
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      s(''),
      'the broker\'s certificate is not signed by a trusted CA (no "cacertfile": Node\'s default CAs and NODE_EXTRA_CA_CERTS) (UNABLE_TO_VERIFY_LEAF_SIGNATURE)',
    ],
    [
      'ERR_TLS_CERT_ALTNAME_INVALID',
      s(''),
      'the broker\'s certificate does not name "mq.example": connect by a name it holds, or set "server_name_indication" (ERR_TLS_CERT_ALTNAME_INVALID)',
    ],
    [
      'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
      s('?certfile=/c.pem&keyfile=/c.key'),
      'the broker does not trust the client certificate /c.pem (ERR_SSL_TLSV1_ALERT_UNKNOWN_CA)',
    ],
    [
      'ERR_SSL_WRONG_VERSION_NUMBER',
      s(''),
      'no TLS on that port (amqps:// to a plain AMQP listener?) (ERR_SSL_WRONG_VERSION_NUMBER)',
    ],
    ['CERT_HAS_EXPIRED', s(''), "the broker's certificate is expired or not yet valid (CERT_HAS_EXPIRED)"],
    ['ECONNREFUSED', s(''), null],
  ])('%s', (code, settings, expected) => {
    expect(tlsCause(code, settings, 'mq.example')).toBe(expected);
  });
});

describe("doctor's broker line once connected (brokerConnectedCheck)", () => {
  test.each<[string, string, number | undefined, CheckResult]>([
    ['plaintext: as before', 'amqp://u:p@h/v', 15, { check: 'broker', status: 'ok', detail: 'connected' }],
    [
      'mutual TLS, EXTERNAL',
      `${TLS}?certfile=/c.pem&keyfile=/c.key&auth_mechanism=external`,
      15,
      {
        check: 'broker',
        status: 'ok',
        detail:
          "connected over TLS: the broker's certificate checked (verify_peer), a client certificate, login EXTERNAL, heartbeat 15 s",
      },
    ],
    [
      'verify_none: a warning',
      `${TLS}?verify=verify_none&heartbeat=30`,
      30,
      {
        check: 'broker',
        status: 'warn',
        detail:
          "connected over TLS: the broker's certificate NOT checked (verify=verify_none), no client certificate, login PLAIN, heartbeat 30 s",
      },
    ],
  ])('%s', (_name, url, heartbeat, expected) => {
    expect(brokerConnectedCheck(url, heartbeat)).toEqual(expected);
  });
});
