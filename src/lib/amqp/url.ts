/**
 * The parameters an AMQP URL may carry, with RabbitMQ's own names (its "URI query parameters"
 * page, as its Erlang client, Federation and Shovel read them), turned into what amqplib takes:
 * the URL for the handshake and the TLS socket's options. Pure: reads no file (`connect.ts` does).
 */
import { UsageError } from '../cli/exit.js';
import { hasUnreadPassword, maskUrl } from '../config/mask.js';

/** fcctl's heartbeat when the URL names none: a dead broker or path is noticed within ~30 s. */
export const DEFAULT_HEARTBEAT_SECONDS = 15;
/** How long the TCP and TLS connect plus the AMQP handshake may take when the URL names no `connection_timeout`. */
export const DEFAULT_CONNECTION_TIMEOUT_MS = 5000;

export type AuthMechanism = 'plain' | 'amqplain' | 'external';
export type Verify = 'verify_peer' | 'verify_none';

export interface AmqpUrlSettings {
  /**
   * The URL amqplib gets: the query replaced by `heartbeat=<seconds>` alone, since amqplib reads the
   * heartbeat only from the URL (its socket options' `heartbeat` is ignored) and ignores the rest.
   */
  readonly clientUrl: string;
  readonly tls: boolean;
  readonly heartbeatSeconds: number;
  readonly connectionTimeoutMs: number;
  readonly authMechanism: AuthMechanism;
  /** PEM files; absent: Node's CAs (plus NODE_EXTRA_CA_CERTS), no client certificate */
  readonly cacertfile?: string;
  readonly certfile?: string;
  readonly keyfile?: string;
  /** `verify_peer` (the default with amqps): the broker's certificate and name are checked */
  readonly verify: Verify;
  /** the name sent as SNI and checked against the broker's certificate; absent: the URL's host */
  readonly serverName?: string;
}

const TLS_ONLY = ['cacertfile', 'certfile', 'keyfile', 'verify', 'server_name_indication'] as const;
const KNOWN = [...TLS_ONLY, 'auth_mechanism', 'heartbeat', 'connection_timeout'] as const;
type Known = (typeof KNOWN)[number];

/**
 * Reads an AMQP URL's parameters; anything unknown, repeated or out of range is a usage error
 * (exit 2) naming the parameter, the password masked.
 * @example parseAmqpUrl('amqps://h/v?certfile=/c.pem&keyfile=/k.pem&auth_mechanism=external').authMechanism // 'external'
 */
export function parseAmqpUrl(url: string): AmqpUrlSettings {
  const bad = (what: string) => new UsageError(`amqpUrl ${what}: ${maskUrl(url)}`);
  if (!/^amqps?:\/\//.test(url)) throw bad('must start with amqp:// or amqps://');
  // Read as written, such a password would be a host, a port and a query: its text in the
  // error below (a parameter name), and a connection to the wrong host.
  if (hasUnreadPassword(url))
    throw bad(
      'has a "?", "#" or "/" before an "@": percent-encode it in the user or password (%3F, %23, %2F), or the "@" (%40)',
    );
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad('is not a valid URL');
  }
  const tls = parsed.protocol === 'amqps:';
  const params = new Map<Known, string>();
  for (const [name, value] of parsed.searchParams) {
    if (!(KNOWN as readonly string[]).includes(name))
      throw bad(`has an unknown parameter "${name}" (known: ${KNOWN.join(', ')})`);
    if (params.has(name as Known)) throw bad(`names "${name}" twice`);
    if (!tls && (TLS_ONLY as readonly string[]).includes(name))
      throw bad(`has "${name}", a TLS parameter: use amqps://`);
    params.set(name as Known, value);
  }
  const authMechanism = oneOf(
    params.get('auth_mechanism') ?? 'plain',
    ['plain', 'amqplain', 'external'],
    'auth_mechanism',
    bad,
  );
  const verify = oneOf(params.get('verify') ?? 'verify_peer', ['verify_peer', 'verify_none'], 'verify', bad);
  const heartbeatSeconds = whole(params.get('heartbeat'), DEFAULT_HEARTBEAT_SECONDS, [1, 65535], 'heartbeat', bad);
  const connectionTimeoutMs = whole(
    params.get('connection_timeout'),
    DEFAULT_CONNECTION_TIMEOUT_MS,
    [1, 600_000],
    'connection_timeout',
    bad,
  );
  const file = (name: 'cacertfile' | 'certfile' | 'keyfile') => {
    const v = params.get(name);
    if (v === '') throw bad(`has an empty "${name}"`);
    return v;
  };
  const [cacertfile, certfile, keyfile] = [file('cacertfile'), file('certfile'), file('keyfile')];
  if ((certfile === undefined) !== (keyfile === undefined))
    throw bad('needs both "certfile" and "keyfile", or neither');
  // EXTERNAL logs in as the client certificate's subject: without one the broker refuses it.
  if (authMechanism === 'external' && certfile === undefined)
    throw bad('has auth_mechanism=external without a client certificate: set amqps://, "certfile" and "keyfile"');
  const serverName = params.get('server_name_indication');
  if (serverName === '') throw bad('has an empty "server_name_indication"');
  // Everything from the first `?` or `#` on is fcctl's to interpret, never amqplib's.
  const cut = url.search(/[?#]/);
  const base = cut < 0 ? url : url.slice(0, cut);
  return {
    clientUrl: `${base}?heartbeat=${heartbeatSeconds}`,
    tls,
    heartbeatSeconds,
    connectionTimeoutMs,
    authMechanism,
    ...(cacertfile !== undefined ? { cacertfile } : {}),
    ...(certfile !== undefined ? { certfile } : {}),
    ...(keyfile !== undefined ? { keyfile } : {}),
    verify,
    ...(serverName !== undefined ? { serverName } : {}),
  };
}

function oneOf<T extends string>(value: string, allowed: readonly T[], name: string, bad: (w: string) => Error): T {
  const v = value.toLowerCase();
  if (!(allowed as readonly string[]).includes(v)) throw bad(`has ${name}=${value} (one of: ${allowed.join(', ')})`);
  return v as T;
}

function whole(
  value: string | undefined,
  fallback: number,
  [min, max]: readonly [number, number],
  name: string,
  bad: (w: string) => Error,
): number {
  if (value === undefined) return fallback;
  // 0 is refused rather than read as "off": amqplib would take the broker's value instead.
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw bad(`has ${name}=${value} (a whole number from ${min} to ${max})`);
  return Number(value);
}

/** The TLS failures a broker connection can end in, each explained by what in the URL to change. */
const TLS_CAUSES: readonly { codes: RegExp; say: (s: AmqpUrlSettings, host: string) => string }[] = [
  {
    codes: /CERTIFICATE_REQUIRED$/,
    say: (s) =>
      s.certfile === undefined
        ? 'the broker requires a client certificate and none was given: set "certfile" and "keyfile"'
        : `the broker did not accept the client certificate ${s.certfile}`,
  },
  {
    codes:
      /^(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?)$/,
    say: (s) =>
      `the broker's certificate is not signed by a trusted CA (${s.cacertfile !== undefined ? `cacertfile ${s.cacertfile}` : 'no "cacertfile": Node\'s default CAs and NODE_EXTRA_CA_CERTS'})`,
  },
  {
    codes: /^ERR_TLS_CERT_ALTNAME_INVALID$/,
    say: (s, host) =>
      `the broker's certificate does not name "${s.serverName ?? host}": connect by a name it holds, or set "server_name_indication"`,
  },
  {
    // TLS 1.2's answer to a missing client certificate, but also to no common version or cipher
    codes: /^ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE$/,
    say: (s) =>
      `the broker refused the TLS handshake${s.certfile === undefined ? ' (does it require a client certificate? set "certfile" and "keyfile")' : ''}`,
  },
  { codes: /^CERT_(HAS_EXPIRED|NOT_YET_VALID)$/, say: () => "the broker's certificate is expired or not yet valid" },
  {
    codes: /ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|DECRYPT_ERROR|ACCESS_DENIED)$/,
    say: (s) => `the broker does not trust the client certificate ${s.certfile ?? '(none)'}`,
  },
  {
    codes: /^ERR_OSSL_X509_KEY_VALUES_MISMATCH$/,
    say: (s) => `keyfile ${s.keyfile} is not the key of certfile ${s.certfile}`,
  },
  {
    codes: /^ERR_SSL_(WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|RECORD_LAYER_FAILURE)$/,
    say: () => 'no TLS on that port (amqps:// to a plain AMQP listener?)',
  },
];

/**
 * What a TLS failure (Node's error code) means for this URL, in words naming the parameter to
 * change and the code; null when the code is not a TLS one.
 * @example tlsCause('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', settings, 'mq') // 'the broker requires a client certificate … (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED)'
 */
export function tlsCause(code: string, settings: AmqpUrlSettings, host: string): string | null {
  const cause = TLS_CAUSES.find((c) => c.codes.test(code));
  return cause ? `${cause.say(settings, host)} (${code})` : null;
}
