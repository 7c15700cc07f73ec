import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import { testAmqpUrl } from './db.js';
import { drainQueue } from './deliveries.js';

const SERVICES = fileURLToPath(new URL('../../scripts/services.sh', import.meta.url));
export const EXCHANGE = 'fc.answer.delivery.v2';

/** rabbitmqctl against the local node (`scripts/services.sh mq-ctl …`). */
export async function mqCtl(...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [SERVICES, 'mq-ctl', ...args], { timeout: 60_000 });
  return stdout;
}

/** An AMQP URL for `user` on `vhost` of the local broker. */
export function amqpUrlFor(vhost: string, user?: { name: string; password: string }): string {
  const url = new URL(testAmqpUrl());
  url.pathname = `/${encodeURIComponent(vhost)}`;
  if (user) {
    url.username = encodeURIComponent(user.name);
    url.password = encodeURIComponent(user.password);
  }
  return url.toString();
}

export interface HardenedBroker {
  readonly vhost: string;
  /** the least-privilege publisher of seed 000 §6: write on the exchange only, a topic permission */
  readonly publisher: { name: string; password: string };
  /** its AMQP URL, for FCCTL_AMQP_URL */
  readonly publisherUrl: string;
  /** the administrator's URL on the vhost, for arranging and reading back */
  readonly adminUrl: string;
  /** a queue bound to `fc.snapshot.v2.<key>.*`, as a consumer would (declared by the administrator) */
  bindConsumer(key: string, pattern?: string): Promise<{ queue: string; drain: () => Promise<amqp.GetMessage[]> }>;
  drop(): Promise<void>;
}

/**
 * A vhost set up the way seed 000 §6 / seed 004 B-03 ask for production: its own vhost, the
 * delivery exchange declared by an administrator, and a publisher that may only write to that
 * exchange (configure and read: nothing) with a topic permission of `topicWrite`.
 */
export async function hardenedBroker(topicWrite: string): Promise<HardenedBroker> {
  const tag = randomBytes(4).toString('hex');
  const vhost = `fcctl-hard-${tag}`;
  const publisher = { name: `pub-${tag}`, password: `pw-${randomBytes(6).toString('hex')}` };
  await promisify(execFile)('bash', [SERVICES, 'add-vhost', vhost], { timeout: 60_000 });
  await mqCtl('add_user', publisher.name, publisher.password);
  await mqCtl('set_permissions', '-p', vhost, publisher.name, '^$', `^${EXCHANGE.replace(/\./g, '\\.')}$`, '^$');
  await mqCtl('set_topic_permissions', '-p', vhost, publisher.name, EXCHANGE, topicWrite, '^$');
  const adminUrl = amqpUrlFor(vhost);
  const conn = await amqp.connect(adminUrl);
  conn.on('error', () => undefined);
  const ch = await conn.createChannel();
  await ch.assertExchange(EXCHANGE, 'topic', { durable: true });
  return {
    vhost,
    publisher,
    publisherUrl: amqpUrlFor(vhost, publisher),
    adminUrl,
    bindConsumer: async (key, pattern = `fc.snapshot.v2.${key}.*`) => {
      const queue = `test.${key}.${randomBytes(2).toString('hex')}`;
      await ch.assertQueue(queue, { durable: false });
      await ch.bindQueue(queue, EXCHANGE, pattern);
      return { queue, drain: () => drainQueue(ch, queue) };
    },
    drop: async () => {
      await conn.close().catch(() => undefined);
      await mqCtl('delete_user', publisher.name).catch(() => undefined);
      await promisify(execFile)('bash', [SERVICES, 'delete-vhost', vhost], { timeout: 60_000 }).catch(() => undefined);
    },
  };
}
