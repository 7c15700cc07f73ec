import { randomBytes } from 'node:crypto';
import type { Broker } from './connect.js';

/**
 * Proves on this broker what the relay relies on (seed 004: "no return observation → no
 * sending"): a mandatory publish to an unroutable key on a temporary exchange is returned, and
 * the return arrives before its ack.
 */
export async function probeReturnBeforeAck(broker: Broker, timeoutMs = 5000): Promise<{ ok: boolean; detail: string }> {
  const ch = await broker.confirmChannel();
  const exchange = `fcctl.doctor.probe.${randomBytes(4).toString('hex')}`;
  const messageId = `probe-${randomBytes(6).toString('hex')}`;
  try {
    await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: false });
    const events: string[] = [];
    ch.on('return', (msg) => {
      if (msg.properties.messageId === messageId) events.push('return');
    });
    const acked = new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), timeoutMs);
      ch.publish(exchange, 'fcctl.nowhere', Buffer.from('{}'), { mandatory: true, messageId }, (err: unknown) => {
        clearTimeout(timer);
        resolve(err ? 'nack' : 'ack');
      });
    });
    const confirm = await acked;
    events.push(confirm);
    const ok = events.join(',') === 'return,ack';
    return { ok, detail: ok ? 'mandatory return arrived before its ack' : `observed ${events.join(' then ')}` };
  } finally {
    await ch.deleteExchange(exchange).catch(() => undefined);
    await ch.close().catch(() => undefined);
  }
}
