// amqplib is loaded when a broker is opened, not at start-up: most commands never open one
// (its load is about a tenth of a second of every `deliveries scan`, issue 20).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type amqp from 'amqplib';
import { EnvironmentError, UsageError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';
import { type AmqpUrlSettings, parseAmqpUrl, tlsCause } from './url.js';

/** The v2 delivery exchange (SPEC §4). */
export const DELIVERY_EXCHANGE = 'fc.answer.delivery.v2';

/**
 * The routing key of the return probe (`amqp/probe.ts`): a consumer key no registry holds and
 * school 0, which no delivery ever has (school ids are positive), so no consumer's own binding
 * (`fc.snapshot.v2.<key>.*` or `.<school>`) can match it. Only a binding that catches every key
 * (`#`, `fc.snapshot.v2.#`, `*.…`) or an alternate exchange takes it. The publisher's topic
 * permission must allow it (README, "Running on a production broker").
 */
export const RETURN_PROBE_ROUTING_KEY = 'fc.snapshot.v2.fcctl-return-probe.0';

export interface Broker {
  readonly connection: amqp.ChannelModel;
  readonly url: string;
  /** a fresh confirm channel; the caller closes it */
  confirmChannel(): Promise<amqp.ConfirmChannel>;
  /** a throwaway channel for passive checks (a failed check closes the channel it ran on) */
  channel(): Promise<amqp.Channel>;
  /**
   * Why the broker is blocking this connection's publishes (a memory or disk alarm), or null.
   * While blocked it reads nothing from the connection, so a publish is never confirmed.
   */
  readonly blocked: string | null;
  /** the connection has ended (closed by either side, or lost) */
  readonly closed: boolean;
  /**
   * Hears each change of {@link blocked} as the broker says it (`connection.blocked` comes the moment
   * a publish meets an alarm, `connection.unblocked` when it clears), and null when the connection ends.
   */
  onBlocked(listener: (reason: string | null) => void): void;
  /** Closes the connection; bounded, since a broker that blocks it never answers the close. */
  close(): Promise<void>;
}

/**
 * The vhost an AMQP URL names: its path, URL-decoded; `/` (the default vhost) when empty.
 * @example vhostOf('amqp://u:p@h:5672/fcctl') // 'fcctl'
 */
export function vhostOf(url: string): string {
  checkAmqpUrl(url);
  try {
    const path = new URL(url).pathname;
    return path === '' || path === '/' ? '/' : decodeURIComponent(path.slice(1));
  } catch {
    throw new UsageError(`amqpUrl is not a URL with a valid vhost: ${maskUrl(url)}`);
  }
}

function checkAmqpUrl(url: string): void {
  if (!/^amqps?:\/\//.test(url)) throw new UsageError(`amqpUrl must start with amqp:// or amqps://: ${maskUrl(url)}`);
}

/** How long a close may wait for the broker's answer before the socket is simply dropped. */
export const CLOSE_TIMEOUT_MS = 3000;

/**
 * Resolves when `closing` settles or after `ms`, whichever comes first; `true` when it settled.
 * @example if (!(await within(channel.close(), 3000))) socket.destroy()
 */
export async function within(closing: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    closing.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return settled;
}

/** The broker is blocking this connection's publishes (a memory or disk alarm): an outage to wait out, not a setting to fix. */
export class BrokerBlockedError extends EnvironmentError {}

/**
 * The broker took the TCP connection but not the handshake (restarting, or a proxy or load
 * balancer with no broker behind it): an outage to wait out, as a refused connection is.
 */
export class BrokerUnreachableError extends EnvironmentError {}

/** amqplib's words (no error code) for a handshake cut short or timed out. */
const HANDSHAKE_LOST = /^(connect ETIMEDOUT|Socket closed abruptly during opening handshake)/;

/** Who the broker logged in: the URL's user, or with EXTERNAL the client certificate's (not in the URL). */
function loginOf(url: string): string {
  const u = new URL(url);
  if (u.searchParams.get('auth_mechanism')?.toLowerCase() === 'external') return "the client certificate's user";
  return `user "${decodeURIComponent(u.username) || 'guest'}"`;
}

/** One line, password masked, for anything that went wrong talking to the broker. */
export function brokerError(url: string, what: string, err: unknown): EnvironmentError {
  const e = err as { code?: string | number; message?: string };
  let detail = typeof e?.code === 'string' ? e.code : (e?.message ?? String(err)).split('\n')[0];
  // amqplib reports RabbitMQ's 530 NOT_ALLOWED answer to connection.open (no such vhost, or no
  // permission on it) only as the frame it did not expect.
  if (/^Expected ConnectionOpenOk; got <ConnectionClose\b/.test(detail ?? '')) {
    detail = `vhost "${vhostOf(url)}" not found or not permitted for ${loginOf(url)}`;
  }
  return new EnvironmentError(`${what} at ${maskUrl(url)}: ${detail}`, { cause: err });
}

/**
 * Connects to RabbitMQ, with the TLS material, login mechanism and heartbeat the URL's parameters
 * name (`url.ts`). Connection errors become exit 3 with the password masked, a TLS failure named.
 * @example const broker = await openBroker(process.env.FCCTL_AMQP_URL!)
 */
export async function openBroker(url: string): Promise<Broker> {
  const settings = parseAmqpUrl(url);
  let connection: amqp.ChannelModel;
  try {
    const { default: client } = await import('amqplib');
    const socket = await socketOptions(url, settings, client.credentials);
    connection = await quietIpServername(() => client.connect(settings.clientUrl, socket));
  } catch (err) {
    throw connectError(url, settings, err);
  }
  // A lost connection surfaces through the channels' close events; keep it from crashing the process.
  connection.on('error', () => undefined);
  let closed = false;
  let blocked: string | null = null;
  const listeners: Array<(reason: string | null) => void> = [];
  const setBlocked = (reason: string | null) => {
    blocked = reason;
    for (const listener of listeners) listener(reason);
  };
  connection.on('close', () => {
    closed = true;
    if (blocked !== null) setBlocked(null);
  });
  connection.on('blocked', (reason: string) => setBlocked(reason || 'blocked by the broker'));
  connection.on('unblocked', () => setBlocked(null));
  return {
    connection,
    url,
    get blocked() {
      return blocked;
    },
    get closed() {
      return closed;
    },
    onBlocked: (listener) => {
      listeners.push(listener);
    },
    confirmChannel: async () => {
      const ch = await connection.createConfirmChannel();
      ch.on('error', () => undefined);
      return ch;
    },
    channel: async () => {
      const ch = await connection.createChannel();
      ch.on('error', () => undefined);
      return ch;
    },
    close: async () => {
      if (closed) return;
      // A blocked connection is never read by the broker, so its close-ok never comes: drop the
      // socket rather than hang (cron would pile up runs).
      if (!(await within(connection.close(), CLOSE_TIMEOUT_MS))) {
        // With an error: amqplib tidies up (heartbeat timers included) on the socket's 'error'.
        const socket = (connection as unknown as { connection?: { stream?: { destroy(err: Error): void } } }).connection
          ?.stream;
        socket?.destroy(new Error('the broker did not answer the close'));
      }
    },
  };
}

/** amqplib's socket options: the TLS material read from its files, and the login mechanism. */
async function socketOptions(
  url: string,
  s: AmqpUrlSettings,
  credentials: typeof amqp.credentials,
): Promise<Record<string, unknown>> {
  const [ca, cert, key] = [
    await readPem('cacertfile', s.cacertfile),
    await readPem('certfile', s.certfile),
    await readPem('keyfile', s.keyfile),
  ];
  // PLAIN too from the URL decoded here: amqplib's own reading (`unescape`) takes a percent-encoded
  // UTF-8 password byte by byte, so a correct password beyond ASCII was refused.
  const login =
    s.authMechanism === 'external'
      ? credentials.external()
      : (s.authMechanism === 'amqplain' ? credentials.amqplain : credentials.plain)(...userOf(url));
  return {
    timeout: s.connectionTimeoutMs,
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(s.serverName !== undefined ? { servername: s.serverName } : {}),
    ...(s.tls && s.verify === 'verify_none' ? { rejectUnauthorized: false } : {}),
    credentials: login,
  };
}

/**
 * A TLS file of the URL, read and checked for what its parameter needs: OpenSSL's own answer to a
 * file it cannot use names neither the file nor the cause (`ERR_OSSL_UNSUPPORTED` for an encrypted
 * or a garbled key, `ERR_OSSL_PEM_NO_START_LINE` for a certificate and key given the wrong way round).
 */
async function readPem(name: 'cacertfile' | 'certfile' | 'keyfile', path: string | undefined) {
  if (path === undefined) return undefined;
  let pem: Buffer;
  try {
    pem = await readFile(path);
  } catch (err) {
    throw new EnvironmentError(`cannot read ${name} ${path} (amqpUrl): ${(err as { code?: string }).code ?? err}`);
  }
  const unusable = (why: string) => new EnvironmentError(`${name} ${path} (amqpUrl) ${why}`);
  if (name === 'keyfile') {
    // Node never asks for a passphrase, and RabbitMQ's `password` parameter is not supported.
    if (/^-----BEGIN ENCRYPTED PRIVATE KEY-----|^Proc-Type: 4,ENCRYPTED/m.test(pem.toString('latin1')))
      throw unusable('is an encrypted key: give the key unencrypted (openssl pkey -in KEY -out KEY.pem)');
    try {
      createPrivateKey(pem);
    } catch {
      throw unusable('holds no PEM private key');
    }
  } else {
    try {
      new X509Certificate(pem);
    } catch {
      throw unusable('holds no PEM certificate');
    }
  }
  return pem;
}

/** The URL's user and password as amqplib reads them for PLAIN (guest/guest when both are absent). */
function userOf(url: string): [string, string] {
  const u = new URL(url);
  if (u.username === '' && u.password === '') return ['guest', 'guest'];
  try {
    return [decodeURIComponent(u.username), decodeURIComponent(u.password)];
  } catch {
    throw new UsageError(`amqpUrl's user or password is not percent-encoded: ${maskUrl(url)}`);
  }
}

/**
 * amqplib sends the URL's host as SNI even when it is an IP address, and Node warns about that
 * on stderr (DEP0123), a second line under a one-line error. The certificate is still checked
 * against the IP; only that warning is silenced, during the synchronous start of the connect.
 */
function quietIpServername<T>(connect: () => T): T {
  const was = process.noDeprecation;
  process.noDeprecation = true;
  try {
    return connect();
  } finally {
    process.noDeprecation = was;
  }
}

/** The exit-3 error of a failed connect: a TLS failure in words naming the parameter to change. */
function connectError(url: string, settings: AmqpUrlSettings, err: unknown): Error {
  if (err instanceof EnvironmentError || err instanceof UsageError) return err;
  const code = (err as { code?: unknown } | undefined)?.code;
  const cause = settings.tls && typeof code === 'string' ? tlsCause(code, settings, new URL(url).hostname) : null;
  if (cause) return new EnvironmentError(`cannot connect to RabbitMQ at ${maskUrl(url)}: ${cause}`, { cause: err });
  const e = brokerError(url, 'cannot connect to RabbitMQ', err);
  // a reset instead of a close: the same TLS alert, raced by the peer's close on a busy machine
  const reset = code === 'ECONNRESET';
  if (!HANDSHAKE_LOST.test((err as Error | undefined)?.message ?? '') && !reset) return e;
  // A TLS-only listener answers amqp://'s protocol header with a TLS alert and closes: to amqplib,
  // the same as a broker restarting (an outage still), so the line names both.
  const tlsPort = !settings.tls && (reset || /closed abruptly/.test((err as Error).message));
  return new BrokerUnreachableError(
    `${e.message}${tlsPort ? ' (the broker restarting, or a TLS port: amqps://)' : ''}`,
    {
      cause: err,
    },
  );
}

/** The heartbeat the connection runs with, in seconds, as negotiated with the broker (amqplib's own field). */
export function negotiatedHeartbeat(broker: Broker): number | undefined {
  return (broker.connection as unknown as { connection?: { heartbeat?: number } }).connection?.heartbeat;
}

/**
 * Checks that an exchange exists (passively: declares nothing). Returns false when the broker
 * answers 404; other failures throw.
 */
export async function exchangeExists(broker: Broker, name: string): Promise<boolean> {
  const ch = await broker.channel();
  try {
    await ch.checkExchange(name);
    await ch.close().catch(() => undefined);
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return false;
    throw brokerError(broker.url, `checking exchange ${name}`, err);
  }
}
