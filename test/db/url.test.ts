import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/lib/cli/exit.js';
import { tlsCauseOf } from '../../src/lib/db/tls.js';
import { databaseAddressOf, poolSizeOf, tlsChoiceOf } from '../../src/lib/db/url.js';

const choice = (query: string) => tlsChoiceOf('FC database', new URLSearchParams(query));

describe('tlsChoiceOf: the TLS a MySQL URL asks for (pure)', () => {
  it.each([
    { query: '', want: { mode: 'PREFERRED' } },
    { query: 'ssl-mode=disabled', want: { mode: 'DISABLED' } },
    { query: 'ssl-mode=Required', want: { mode: 'REQUIRED' } },
    { query: 'ssl-ca=/ca.pem', want: { mode: 'VERIFY_CA', ca: '/ca.pem' } },
    { query: 'ssl-mode=VERIFY_IDENTITY', want: { mode: 'VERIFY_IDENTITY' } },
    {
      query: 'ssl-mode=VERIFY_IDENTITY&ssl-ca=/ca.pem&ssl-cert=/c.pem&ssl-key=/k.pem',
      want: { mode: 'VERIFY_IDENTITY', ca: '/ca.pem', cert: '/c.pem', key: '/k.pem' },
    },
    {
      query: 'ssl-mode=REQUIRED&ssl-cert=/c.pem&ssl-key=/k.pem',
      want: { mode: 'REQUIRED', cert: '/c.pem', key: '/k.pem' },
    },
  ])('$query → $want.mode', ({ query, want }) => {
    expect(choice(query)).toEqual(want);
  });

  it.each([
    { query: 'ssl=true', want: /unknown parameter "ssl" \(known: ssl-mode, ssl-ca, ssl-cert, ssl-key\)/ },
    { query: 'ssl-mode=REQUIRED&ssl-mode=DISABLED', want: /"ssl-mode" given twice/ },
    { query: 'ssl-mode=', want: /"ssl-mode" is empty/ },
    { query: 'ssl-mode=VERIFY_FULL', want: /ssl-mode=VERIFY_FULL is not one of/ },
    { query: 'ssl-mode=PREFERRED&ssl-ca=/ca.pem', want: /ssl-ca is checked only by .* not PREFERRED/ },
    { query: 'ssl-mode=DISABLED&ssl-ca=/ca.pem', want: /ssl-ca is checked only by/ },
    { query: 'ssl-key=/k.pem', want: /ssl-cert and ssl-key go together/ },
    { query: 'ssl-mode=DISABLED&ssl-cert=/c.pem&ssl-key=/k.pem', want: /ssl-cert needs TLS/ },
  ])('$query: exit 2', ({ query, want }) => {
    expect(() => choice(query)).toThrow(UsageError);
    expect(() => choice(query)).toThrow(want);
  });
});

describe('databaseAddressOf (pure)', () => {
  it('decodes a percent-encoded password and reads the TLS parameters', () => {
    expect(
      databaseAddressOf('FC database', 'mysql://u:p%25a%23b%40c%3Ad@db.example:3307/fc?ssl-mode=REQUIRED'),
    ).toEqual({
      host: 'db.example',
      port: 3307,
      user: 'u',
      password: 'p%a#b@c:d',
      database: 'fc',
      tls: { mode: 'REQUIRED' },
    });
  });
  it('an IPv6 host without its brackets (as the driver wants it)', () => {
    expect(databaseAddressOf('FC database', 'mysql://u@[::1]/fc').host).toBe('::1');
  });
  it.each([
    { url: 'mysql://u:50%off@db/fc', want: /stray % in it: mysql:\/\/u:\*\*\*@db\/fc \(percent-encode % # \/ \? @ :/ },
    { url: 'mysql://u:a#b@db/fc', want: /is not a valid URL: \*\*\* \(percent-encode/ },
    { url: 'postgres://u@db/fc', want: /must start with mysql:\/\// },
  ])('$url: exit 2, one line, the password not shown', ({ url, want }) => {
    expect(() => databaseAddressOf('FC database', url)).toThrow(want);
    try {
      databaseAddressOf('FC database', url);
    } catch (err) {
      expect((err as Error).message).not.toMatch(/50%off|a#b/);
      expect((err as Error).message).not.toContain('\n');
    }
  });
});

describe('poolSizeOf (pure)', () => {
  it.each([
    { value: undefined, want: 10 },
    { value: '1', want: 1 },
    { value: '40', want: 40 },
  ])('$value → $want', ({ value, want }) => expect(poolSizeOf(value)).toBe(want));
  it.each(['0', '-1', '2.5', 'ten', '1001', ''])('%j: exit 2', (value) => {
    expect(() => poolSizeOf(value)).toThrow(/dbPoolSize must be a whole number from 1 to 1000/);
  });
});

describe('tlsCauseOf: the TLS cause of a connection error (pure)', () => {
  it.each([
    {
      err: { code: 'HANDSHAKE_SSL_ERROR', message: 'self-signed certificate in certificate chain' },
      mode: 'VERIFY_CA',
      want: "TLS: the server's certificate was refused (ssl-mode=VERIFY_CA): self-signed certificate in certificate chain",
    },
    {
      err: { code: 'TLS_IDENTITY', message: "IP: 127.0.0.1 is not in the cert's list: " },
      mode: 'VERIFY_IDENTITY',
      want: "TLS: the server's certificate does not name the URL's host (ssl-mode=VERIFY_IDENTITY): IP: 127.0.0.1 is not in the cert's list",
    },
    {
      err: { code: 'HANDSHAKE_NO_SSL_SUPPORT', message: 'Server does not support secure connection' },
      mode: 'REQUIRED',
      want: 'TLS: the server does not offer TLS, which ssl-mode=REQUIRED requires',
    },
    {
      err: { errno: 3159, code: 'ER_SECURE_TRANSPORT_REQUIRED' },
      mode: 'DISABLED',
      want: /requires TLS.*ssl-mode=DISABLED/,
    },
    { err: { code: 'TLS_REQUIRED' }, mode: 'DISABLED', want: /requires TLS \(require_secure_transport\)/ },
    { err: { code: 'ER_ACCESS_DENIED_ERROR', errno: 1045 }, mode: 'REQUIRED', want: null },
    { err: { code: 'ECONNREFUSED' }, mode: 'PREFERRED', want: null },
  ] as const)('$err.code under $mode', ({ err, mode, want }) => {
    const got = tlsCauseOf(err, mode);
    if (want === null || typeof want === 'string') expect(got).toBe(want);
    else expect(got).toMatch(want);
  });
});
