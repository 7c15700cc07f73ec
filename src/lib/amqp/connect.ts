// amqplib is loaded when a broker is opened, not at start-up: most commands never open one
// (its load is about a tenth of a second of every `deliveries scan`, issue 20).
import type amqp from 'amqplib';
import { EnvironmentError, UsageError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';

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

/** One line, password masked, for anything that went wrong talking to the broker. */
export function brokerError(url: string, what: string, err: unknown): EnvironmentError {
  const e = err as { code?: string | number; message?: string };
  let detail = typeof e?.code === 'string' ? e.code : (e?.message ?? String(err)).split('\n')[0];
  // amqplib reports RabbitMQ's 530 NOT_ALLOWED answer to connection.open (no such vhost, or no
  // permission on it) only as the frame it did not expect.
  if (/^Expected ConnectionOpenOk; got <ConnectionClose\b/.test(detail ?? '')) {
    detail = `vhost "${vhostOf(url)}" not found or not permitted for user "${decodeURIComponent(new URL(url).username) || 'guest'}"`;
  }
  return new EnvironmentError(`${what} at ${maskUrl(url)}: ${detail}`, { cause: err });
}

/**
 * Connects to RabbitMQ. Connection errors become exit 3 with the password masked.
 * @example const broker = await openBroker(process.env.FCCTL_AMQP_URL!)
 */
export async function openBroker(url: string, options: { heartbeatSeconds?: number } = {}): Promise<Broker> {
  checkAmqpUrl(url);
  let connection: amqp.ChannelModel;
  try {
    const { default: client } = await import('amqplib');
    connection = await client.connect(url, { timeout: 5000, heartbeat: options.heartbeatSeconds ?? 15 });
  } catch (err) {
    const e = brokerError(url, 'cannot connect to RabbitMQ', err);
    throw HANDSHAKE_LOST.test((err as Error | undefined)?.message ?? '')
      ? new BrokerUnreachableError(e.message, { cause: err })
      : e;
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
