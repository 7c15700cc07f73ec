import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { checkServerIdentity, type PeerCertificate, type TLSSocket } from 'node:tls';
import type mysql from 'mysql2/promise';
import { UsageError } from '../cli/exit.js';
import { type DatabaseAddress, databaseAddressOf, type SslMode, type TlsChoice } from './url.js';

/** A PEM file named by a URL parameter; exit 2 naming it when it cannot be read. */
function pem(label: string, parameter: string, path: string, read: (p: string) => Buffer): Buffer {
  try {
    return read(path);
  } catch (err) {
    throw new UsageError(
      `${label} URL: ${parameter}=${path}: cannot read it: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

/**
 * mysql2's `ssl` option for a TLS choice; undefined for DISABLED. One object per pool: mysql2
 * builds one secure context per object. Under VERIFY_IDENTITY mysql2 checks the name itself only
 * for a DNS host: for an IP it checks the name "localhost" (mysql2 3.24.6), so {@link identityCheck}
 * checks every connection against the URL's host.
 */
export function sslOptionsOf(
  label: string,
  address: DatabaseAddress,
  read: (p: string) => Buffer = readFileSync,
): mysql.SslOptions | undefined {
  const tls = address.tls;
  if (tls.mode === 'DISABLED') return undefined;
  const verify = tls.mode === 'VERIFY_CA' || tls.mode === 'VERIFY_IDENTITY';
  return {
    ...(tls.ca ? { ca: pem(label, 'ssl-ca', tls.ca, read) } : {}),
    ...(tls.cert ? { cert: pem(label, 'ssl-cert', tls.cert, read) } : {}),
    ...(tls.key ? { key: pem(label, 'ssl-key', tls.key, read) } : {}),
    rejectUnauthorized: verify,
    verifyIdentity: tls.mode === 'VERIFY_IDENTITY' && isIP(address.host) === 0,
  } as mysql.SslOptions;
}

/** The server's certificate does not name the host of the URL (VERIFY_IDENTITY). */
export class TlsIdentityError extends Error {
  readonly code = 'TLS_IDENTITY';
}

/**
 * Under VERIFY_IDENTITY, a check of each new connection of one pool (its sockets): why its
 * certificate does not name `host`, or null. Run before the connection's first statement; for a
 * DNS host mysql2 has also checked it before the login. A resumed TLS session shows no
 * certificate: it is trusted only while no connection sharing the pool's TLS settings (and so
 * mysql2's session cache) was refused, since the refused server may have handed out that session.
 */
export function identityCheck(tls: TlsChoice, host: string): (socket: unknown) => TlsIdentityError | null {
  if (tls.mode !== 'VERIFY_IDENTITY') return () => null;
  let refused: TlsIdentityError | null = null;
  return (socket) => {
    const s = socket as Partial<TLSSocket> | undefined;
    if (typeof s?.getPeerCertificate !== 'function') return new TlsIdentityError('the connection is not TLS');
    if (s.isSessionReused?.()) return refused;
    const err = checkServerIdentity(host, s.getPeerCertificate(true) as PeerCertificate);
    if (err) refused = new TlsIdentityError(err.message, { cause: err });
    return err ? refused : null;
  };
}

/** The ssl option's key for a pool's {@link identityCheck}, read by the handshake hook below. */
const IDENTITY = Symbol('fcctl identity check');

/** mysql2's `ssl` option for one pool, carrying its identity check into the TLS handshake. */
export function withIdentityCheck(
  ssl: mysql.SslOptions,
  check: (socket: unknown) => TlsIdentityError | null,
): mysql.SslOptions {
  checkIdentityInHandshake();
  return { ...ssl, [IDENTITY]: check } as mysql.SslOptions;
}

let hooked = false;

/**
 * Runs an ssl option's identity check as soon as its TLS handshake ends, before the login: for an
 * IP host mysql2 checks no name (see {@link sslOptionsOf}), and checked only once the pool hands
 * the connection out, the server the certificate does not name had the login already (over TLS
 * caching_sha2_password's full authentication sends the password itself). mysql2 (3.24.6) has no
 * hook between its handshake and its login: its startTLS is wrapped, once, for options that carry
 * a check; any other connection goes through it unchanged.
 */
function checkIdentityInHandshake(): void {
  if (hooked) return;
  hooked = true;
  const core = createRequire(import.meta.url)('mysql2') as { Connection: { prototype: object } };
  let proto: object | null = core.Connection.prototype;
  while (proto && !Object.hasOwn(proto, 'startTLS')) proto = Object.getPrototypeOf(proto) as object | null;
  if (!proto) throw new Error('mysql2: no startTLS to check the server identity in (a changed mysql2?)');
  type Conn = { config: { ssl?: Record<symbol, unknown> }; stream: unknown };
  const target = proto as { startTLS(this: Conn, onSecure: (err?: Error) => void): void };
  const startTLS = target.startTLS;
  target.startTLS = function (this: Conn, onSecure) {
    const check = this.config.ssl?.[IDENTITY] as ((socket: unknown) => Error | null) | undefined;
    startTLS.call(this, (err) => {
      if (err || !check) return onSecure(err);
      onSecure(check(this.stream) ?? undefined);
    });
  };
}

/** What to do about a server that refused plaintext. */
const USE_TLS = 'set ssl-mode=VERIFY_IDENTITY (with ssl-ca) or REQUIRED in the URL';

/**
 * The one-line TLS cause of a connection error, or null when it is not about TLS.
 * @example tlsCauseOf({ code: 'HANDSHAKE_SSL_ERROR', message: 'self-signed certificate in certificate chain' }, 'VERIFY_CA')
 * // 'TLS: the server\'s certificate was refused (ssl-mode=VERIFY_CA): self-signed certificate in certificate chain'
 */
export function tlsCauseOf(err: unknown, mode: SslMode): string | null {
  const e = err as { code?: string; errno?: number; message?: string };
  // Node's name mismatch ends with the certificate's (here empty) list of names: ": "
  const reason = String(e.message ?? '')
    .split('\n')[0]!
    .replace(/[:\s]+$/, '');
  // refused in the handshake, its code is mysql2's HANDSHAKE_SSL_ERROR
  const code = err instanceof TlsIdentityError ? 'TLS_IDENTITY' : e.code;
  switch (code) {
    case 'HANDSHAKE_SSL_ERROR':
      return `TLS: the server's certificate was refused (ssl-mode=${mode}): ${reason}`;
    case 'TLS_IDENTITY':
      return `TLS: the server's certificate does not name the URL's host (ssl-mode=${mode}): ${reason}`;
    case 'HANDSHAKE_NO_SSL_SUPPORT':
      return `TLS: the server does not offer TLS, which ssl-mode=${mode} requires`;
    case 'TLS_REQUIRED':
      return `TLS: the server requires TLS (require_secure_transport) and ssl-mode=${mode} does not use it: ${USE_TLS}`;
  }
  // MySQL's own answer to plaintext under require_secure_transport (MariaDB answers 1045: see requiresTls)
  if (e.errno === 3159)
    return `TLS: the server requires TLS (require_secure_transport) and ssl-mode=${mode}: ${USE_TLS}`;
  return null;
}

/** The `ssl-mode` a URL (already opened) asks for, for error messages. */
export function sslModeOf(url: string): SslMode {
  try {
    return databaseAddressOf('database', url).tls.mode;
  } catch {
    return 'DISABLED';
  }
}

/**
 * Opens a database with the TLS its address asks for (`open` gets the driver's options with
 * `ssl`). PREFERRED, as the mysql client: a server whose handshake offers no TLS is opened again
 * in plaintext. DISABLED: an access denied from a server that takes the same login over TLS is
 * reported as the server requiring TLS ({@link requiresTls}).
 */
export async function openWithTls<T>(
  label: string,
  address: DatabaseAddress,
  driver: typeof mysql,
  poolOptions: mysql.PoolOptions,
  how: { open(options: mysql.PoolOptions): Promise<T>; fail(err: unknown): Error },
): Promise<T> {
  const ssl = sslOptionsOf(label, address);
  try {
    return await how.open(ssl ? { ...poolOptions, ssl } : poolOptions);
  } catch (err) {
    const code = (((err as { cause?: unknown }).cause ?? err) as { code?: string }).code;
    if (address.tls.mode === 'PREFERRED' && code === 'HANDSHAKE_NO_SSL_SUPPORT') return how.open(poolOptions);
    if (
      address.tls.mode === 'DISABLED' &&
      code === 'ER_ACCESS_DENIED_ERROR' &&
      (await requiresTls(driver, poolOptions))
    )
      throw how.fail(Object.assign(new Error('plaintext refused'), { code: 'TLS_REQUIRED' }));
    throw err;
  }
}

/**
 * Whether a server that denied a plaintext login takes the same login over TLS: MariaDB answers
 * a plaintext client under `require_secure_transport` with a plain 1045 "Access denied", the
 * answer to a wrong password. Asked only after that 1045 under DISABLED, where the operator
 * already accepted a connection no one checks (the probe checks no certificate either).
 */
export async function requiresTls(driver: typeof mysql, options: mysql.PoolOptions): Promise<boolean> {
  const { connectionLimit: _, ...connection } = options;
  try {
    const conn = await driver.createConnection({ ...connection, ssl: { rejectUnauthorized: false } });
    await conn.end().catch(() => undefined);
    return true;
  } catch {
    return false;
  }
}
