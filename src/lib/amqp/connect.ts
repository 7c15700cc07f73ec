import amqp from 'amqplib';
import { EnvironmentError, UsageError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';

/** The v2 delivery exchange (SPEC §4). */
export const DELIVERY_EXCHANGE = 'fc.answer.delivery.v2';

export interface Broker {
  readonly connection: amqp.ChannelModel;
  readonly url: string;
  /** a fresh confirm channel; the caller closes it */
  confirmChannel(): Promise<amqp.ConfirmChannel>;
  /** a throwaway channel for passive checks (a failed check closes the channel it ran on) */
  channel(): Promise<amqp.Channel>;
  close(): Promise<void>;
}

/** One line, password masked, for anything that went wrong talking to the broker. */
export function brokerError(url: string, what: string, err: unknown): EnvironmentError {
  const e = err as { code?: string | number; message?: string };
  const detail = typeof e?.code === 'string' ? e.code : (e?.message ?? String(err)).split('\n')[0];
  return new EnvironmentError(`${what} at ${maskUrl(url)}: ${detail}`, { cause: err });
}

/**
 * Connects to RabbitMQ. Connection errors become exit 3 with the password masked.
 * @example const broker = await openBroker(process.env.FCCTL_AMQP_URL!)
 */
export async function openBroker(url: string, options: { heartbeatSeconds?: number } = {}): Promise<Broker> {
  if (!/^amqps?:\/\//.test(url)) throw new UsageError(`amqpUrl must start with amqp:// or amqps://: ${maskUrl(url)}`);
  let connection: amqp.ChannelModel;
  try {
    connection = await amqp.connect(url, { timeout: 5000, heartbeat: options.heartbeatSeconds ?? 15 });
  } catch (err) {
    throw brokerError(url, 'cannot connect to RabbitMQ', err);
  }
  // A lost connection surfaces through the channels' close events; keep it from crashing the process.
  connection.on('error', () => undefined);
  let closed = false;
  connection.on('close', () => {
    closed = true;
  });
  return {
    connection,
    url,
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
      if (!closed) await connection.close().catch(() => undefined);
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
