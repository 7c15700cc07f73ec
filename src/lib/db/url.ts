import { UsageError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';
import { ENCODE_HINT } from '../config/password.js';

/**
 * TLS modes of a MySQL URL's `ssl-mode`, the mysql client's own names:
 * - DISABLED: plaintext.
 * - PREFERRED: TLS when the server offers it (its handshake's SSL flag), else plaintext; the
 *   certificate is not checked. The default, as the mysql client's: servers that require TLS
 *   (RDS with `require_secure_transport`, Cloud SQL) work without a setting, and a plain server
 *   (a local MariaDB) still does.
 * - REQUIRED: TLS or no connection; the certificate is not checked.
 * - VERIFY_CA: REQUIRED, and the certificate must chain to `ssl-ca` (or Node's trusted CAs).
 * - VERIFY_IDENTITY: VERIFY_CA, and the certificate must name the URL's host (DNS or IP).
 */
export const SSL_MODES = ['DISABLED', 'PREFERRED', 'REQUIRED', 'VERIFY_CA', 'VERIFY_IDENTITY'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** The mode when the URL names none (and no `ssl-ca`). */
export const DEFAULT_SSL_MODE: SslMode = 'PREFERRED';

/** What a MySQL URL asks of TLS: its mode and PEM file paths. */
export interface TlsChoice {
  readonly mode: SslMode;
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

/** Where and as whom a MySQL URL connects. */
export interface DatabaseAddress {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string | undefined;
  readonly tls: TlsChoice;
}

/** The query parameters a MySQL URL may carry. */
const PARAMETERS = ['ssl-mode', 'ssl-ca', 'ssl-cert', 'ssl-key'] as const;

/**
 * The URL of a database setting, or bad input (exit 2) naming it with the password masked.
 * @example parseDatabaseUrl('FC database', 'mysql://u:p@db:3306/fc').hostname // 'db'
 */
export function parseDatabaseUrl(label: string, url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new UsageError(`${label} URL is not a valid URL: ${maskUrl(url)} (${ENCODE_HINT})`);
  }
}

/** A URL part, percent-decoded; a stray `%` (an unencoded password) is exit 2. */
function decoded(label: string, url: string, part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new UsageError(`${label} URL has a stray % in it: ${maskUrl(url)} (${ENCODE_HINT})`);
  }
}

/**
 * The TLS a URL's query asks for; exit 2 on an unknown or repeated parameter, an unknown mode,
 * a CA that its mode would not check, or half a client certificate.
 * @example tlsChoiceOf('FC database', new URLSearchParams('ssl-mode=verify_ca&ssl-ca=/ca.pem')) // { mode: 'VERIFY_CA', ca: '/ca.pem' }
 */
export function tlsChoiceOf(label: string, query: URLSearchParams): TlsChoice {
  const seen: Record<string, string> = {};
  for (const [name, value] of query) {
    if (!(PARAMETERS as readonly string[]).includes(name))
      throw new UsageError(`${label} URL: unknown parameter "${name}" (known: ${PARAMETERS.join(', ')})`);
    if (name in seen) throw new UsageError(`${label} URL: parameter "${name}" given twice`);
    if (value === '') throw new UsageError(`${label} URL: parameter "${name}" is empty`);
    seen[name] = value;
  }
  const { 'ssl-mode': given, 'ssl-ca': ca, 'ssl-cert': cert, 'ssl-key': key } = seen;
  const mode = given === undefined ? (ca ? 'VERIFY_CA' : DEFAULT_SSL_MODE) : (given.toUpperCase() as SslMode);
  if (!SSL_MODES.includes(mode))
    throw new UsageError(`${label} URL: ssl-mode=${given} is not one of ${SSL_MODES.join(', ')}`);
  // A CA that is not checked would read as protection it is not.
  if (ca && mode !== 'VERIFY_CA' && mode !== 'VERIFY_IDENTITY')
    throw new UsageError(`${label} URL: ssl-ca is checked only by ssl-mode=VERIFY_CA or VERIFY_IDENTITY, not ${mode}`);
  if ((cert === undefined) !== (key === undefined))
    throw new UsageError(`${label} URL: ssl-cert and ssl-key go together (a client certificate and its key)`);
  if (cert && mode === 'DISABLED') throw new UsageError(`${label} URL: ssl-cert needs TLS, not ssl-mode=DISABLED`);
  return { mode, ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
}

/**
 * Host, port, user, password, database and TLS of a MySQL URL; bad input (exit 2) when it is not
 * a mysql:// URL or its parts do not decode.
 * @example databaseAddressOf('FC database', 'mysql://u:p%23w@db/fc?ssl-mode=REQUIRED').password // 'p#w'
 */
export function databaseAddressOf(label: string, url: string): DatabaseAddress {
  const parsed = parseDatabaseUrl(label, url);
  if (parsed.protocol !== 'mysql:' && parsed.protocol !== 'mariadb:') {
    throw new UsageError(`${label} URL must start with mysql://: ${maskUrl(url)}`);
  }
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port ? Number(parsed.port) : 3306,
    user: decoded(label, url, parsed.username),
    password: decoded(label, url, parsed.password),
    database: decoded(label, url, parsed.pathname.replace(/^\//, '')) || undefined,
    tls: tlsChoiceOf(label, parsed.searchParams),
  };
}

/** The main pool's size when `dbPoolSize` is unset: what fcctl always used. */
export const DEFAULT_POOL_SIZE = 10;

/**
 * The main pool's size from the `dbPoolSize` setting (1–1000); exit 2 otherwise.
 * @example poolSizeOf('4') // 4
 */
export function poolSizeOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_POOL_SIZE;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 1000)
    throw new UsageError(`dbPoolSize must be a whole number from 1 to 1000, not "${value}"`);
  return n;
}
