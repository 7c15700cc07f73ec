import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfirmPublisher } from '../../src/lib/amqp/confirm-publisher.js';
import { testAmqpUrl } from '../helpers/db.js';

describe('ConfirmPublisher on the real broker', () => {
  let conn: amqp.ChannelModel;
  const exchange = `test.publisher.${process.pid}.${Date.now()}`;
  beforeAll(async () => {
    conn = await amqp.connect(testAmqpUrl());
    const ch = await conn.createChannel();
    await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: false });
    await ch.assertQueue(`${exchange}.q`, { durable: false });
    await ch.bindQueue(`${exchange}.q`, exchange, 'routed.#');
    await ch.close();
  });
  afterAll(async () => {
    const ch = await conn.createChannel();
    await ch.deleteQueue(`${exchange}.q`);
    await ch.deleteExchange(exchange);
    await conn.close();
  });

  it('acks a routed message, reports a returned one as returned even though the broker acks it', async () => {
    const p = new ConfirmPublisher(await conn.createConfirmChannel(), 16, 5000);
    const [routed, unroutable] = await Promise.all([
      p.publish(exchange, 'routed.a', Buffer.from('{}'), { messageId: 'm-routed', mandatory: true }),
      p.publish(exchange, 'nowhere', Buffer.from('{}'), { messageId: 'm-returned', mandatory: true }),
    ]);
    expect(routed).toEqual({ kind: 'ack', returned: false });
    expect(unroutable).toEqual({ kind: 'ack', returned: true });
    await p.close();
  });

  it('never has two copies of one messageId unconfirmed: the second copy is not sent', async () => {
    const p = new ConfirmPublisher(await conn.createConfirmChannel(), 16, 5000);
    const [first, second] = await Promise.all([
      p.publish(exchange, 'nowhere', Buffer.from('{}'), { messageId: 'dup', mandatory: true }),
      p.publish(exchange, 'nowhere', Buffer.from('{}'), { messageId: 'dup', mandatory: true }),
    ]);
    expect(first).toEqual({ kind: 'ack', returned: true });
    expect(second).toEqual({ kind: 'unsent' });
    // once settled, the id may be published again, and its return is its own
    expect(await p.publish(exchange, 'routed.b', Buffer.from('{}'), { messageId: 'dup', mandatory: true })).toEqual({ kind: 'ack', returned: false });
    await p.close();
  });

  it('does not publish what could not be confirmed before the lease ends', async () => {
    const p = new ConfirmPublisher(await conn.createConfirmChannel(), 16, 5000);
    expect(await p.publish(exchange, 'routed.c', Buffer.from('{}'), { messageId: 'late', mandatory: true }, Date.now() + 1000)).toEqual({ kind: 'unsent' });
    await p.close();
  });

  it('a publish that throws before it is sent gives up the channel: no later confirm is credited to another message', async () => {
    // A queue that refuses every message: the broker nacks what is routed to it.
    const ch = await conn.createChannel();
    const full = `${exchange}.full`;
    await ch.assertQueue(full, { durable: false, arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
    await ch.bindQueue(full, exchange, 'full.#');
    const p = new ConfirmPublisher(await conn.createConfirmChannel(), 16, 5000);
    // Outstanding before the bad publish: must not come back as an ack of someone else's.
    const before = p.publish(exchange, 'full.a', Buffer.from('{}'), { messageId: 'nacked', mandatory: true });
    const bad = await p.publish(exchange, 'x'.repeat(256), Buffer.from('{}'), { messageId: 'bad-key', mandatory: true });
    expect(bad).toMatchObject({ kind: 'error' });
    expect(p.closed).toMatch(/a publish failed before it was sent/);
    expect(['closed', 'nack']).toContain((await before).kind);
    expect(await p.publish(exchange, 'routed.e', Buffer.from('{}'), { messageId: 'after', mandatory: true })).toEqual({ kind: 'unsent' });
    await ch.deleteQueue(full);
    await ch.close();
  });

  it('a window slot wait ends as unsent when the channel closes; outstanding confirms as closed', async () => {
    const ch = await conn.createConfirmChannel();
    const p = new ConfirmPublisher(ch, 1, 5000);
    const first = p.publish(exchange, 'routed.d', Buffer.from('{}'), { messageId: 'w1', mandatory: true });
    const waiting = p.publish(exchange, 'routed.d', Buffer.from('{}'), { messageId: 'w2', mandatory: true });
    // Closing the channel under the publisher (as a broker restart would)
    ch.emit('close');
    expect(['closed', 'ack']).toContain((await first).kind);
    expect(await waiting).toEqual({ kind: 'unsent' });
    expect(p.lost).toBe('channel closed');
  });
});
