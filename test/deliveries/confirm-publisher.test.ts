import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfirmPublisher } from '../../src/lib/amqp/confirm-publisher.js';
import { testAmqpUrl } from '../helpers/db.js';

describe('ConfirmPublisher on the real broker', () => {
  let conn: amqp.ChannelModel;
  const exchange = `test.publisher.${process.pid}.${Date.now()}`;
  /** A `{}` message with `mandatory` set, to `ex` (the test exchange by default). */
  const message = (routingKey: string, messageId: string, ex = exchange) => ({
    exchange: ex,
    routingKey,
    body: Buffer.from('{}'),
    options: { messageId, mandatory: true },
  });
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
      p.publish(message('routed.a', 'm-routed')),
      p.publish(message('nowhere', 'm-returned')),
    ]);
    expect(routed).toEqual({ kind: 'ack', returned: false });
    expect(unroutable).toEqual({ kind: 'ack', returned: true });
    await p.close();
  });

  it('never has two copies of one messageId unconfirmed: the second copy is not sent', async () => {
    const p = new ConfirmPublisher(await conn.createConfirmChannel(), 16, 5000);
    const [first, second] = await Promise.all([
      p.publish(message('nowhere', 'dup')),
      p.publish(message('nowhere', 'dup')),
    ]);
    expect(first).toEqual({ kind: 'ack', returned: true });
    expect(second).toEqual({ kind: 'unsent' });
    // once settled, the id may be published again, and its return is its own
    expect(await p.publish(message('routed.b', 'dup'))).toEqual({ kind: 'ack', returned: false });
    await p.close();
  });

  it('does not publish what could not be confirmed before the lease ends', async () => {
    const p = new ConfirmPublisher(await conn.createConfirmChannel(), 16, 5000);
    expect(await p.publish(message('routed.c', 'late'), Date.now() + 1000)).toEqual({ kind: 'unsent' });
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
    const before = p.publish(message('full.a', 'nacked'));
    const bad = await p.publish(message('x'.repeat(256), 'bad-key'));
    expect(bad).toMatchObject({ kind: 'error' });
    expect(p.closed).toMatch(/a publish failed before it was sent/);
    expect(['closed', 'nack']).toContain((await before).kind);
    expect(await p.publish(message('routed.e', 'after'))).toEqual({ kind: 'unsent' });
    await ch.deleteQueue(full);
    await ch.close();
  });

  it('a window slot wait ends as unsent when the channel closes; outstanding confirms as closed', async () => {
    const ch = await conn.createConfirmChannel();
    const p = new ConfirmPublisher(ch, 1, 5000);
    const first = p.publish(message('routed.d', 'w1'));
    const waiting = p.publish(message('routed.d', 'w2'));
    // Closing the channel under the publisher (as a broker restart would)
    ch.emit('close');
    expect(['closed', 'ack']).toContain((await first).kind);
    expect(await waiting).toEqual({ kind: 'unsent' });
    expect(p.lost).toBe('channel closed');
  });

  describe('with recovery: a refused message is not an outage', () => {
    const recovery = (probeExchange = exchange) => ({
      reopen: () => conn.createConfirmChannel(),
      probe: () => message('nowhere.probe', `probe-${Math.random()}`, probeExchange),
    });

    it('a message to a missing exchange (404) is found and refused alone; every message before and after it is acked', async () => {
      const p = new ConfirmPublisher(await conn.createConfirmChannel(), 64, 5000, recovery());
      const out = await Promise.all([
        ...Array.from({ length: 20 }, (_, i) => p.publish(message('routed.r', `before-${i}`))),
        p.publish(message('x', 'culprit', `${exchange}.missing`)),
        ...Array.from({ length: 20 }, (_, i) => p.publish(message('routed.r', `after-${i}`))),
      ]);
      expect(out[20]).toMatchObject({
        kind: 'refused',
        code: 404,
        text: expect.stringMatching(/NOT_FOUND - no exchange/),
      });
      expect(out.filter((o) => o.kind === 'ack')).toHaveLength(40);
      expect(p.refusals).toBe(1);
      expect(p.closed).toBeNull();
      // the publisher goes on on its new channel
      expect(await p.publish(message('routed.r', 'later'))).toEqual({ kind: 'ack', returned: false });
      await p.close();
      const ch = await conn.createChannel();
      await ch.purgeQueue(`${exchange}.q`);
      await ch.close();
    });

    it('when the return probe is refused too, nothing can be published: the publisher is gone and the suspects are unknown (resent later, not charged)', async () => {
      const p = new ConfirmPublisher(await conn.createConfirmChannel(), 64, 5000, recovery(`${exchange}.missing`));
      const out = await Promise.all([
        p.publish(message('routed.r', 'u1')),
        p.publish(message('x', 'u2', `${exchange}.missing`)),
        p.publish(message('routed.r', 'u3')),
      ]);
      expect(out[1]).toEqual({ kind: 'unknown' });
      expect(out.filter((o) => o.kind === 'refused')).toHaveLength(0);
      expect(p.lost).toMatch(
        /^after the broker refused a message \(404 .*\), the return probe was refused too \(404 .*\): the exchange takes no message on this channel$/,
      );
      expect(await p.publish(message('routed.r', 'u4'))).toEqual({ kind: 'unsent' });
      const ch = await conn.createChannel();
      await ch.purgeQueue(`${exchange}.q`);
      await ch.close();
    });

    it('a publish that throws before it is sent fails alone; the others are resent on a fresh channel and acked', async () => {
      const p = new ConfirmPublisher(await conn.createConfirmChannel(), 64, 5000, recovery());
      const first = Array.from({ length: 10 }, (_, i) => p.publish(message('routed.s', `s-${i}`)));
      const bad = p.publish(message('x'.repeat(256), 'bad-key'));
      const later = Array.from({ length: 10 }, (_, i) => p.publish(message('routed.s', `t-${i}`)));
      expect(await bad).toMatchObject({ kind: 'error' });
      const rest = await Promise.all([...first, ...later]);
      expect(rest.map((o) => o.kind)).toEqual(Array(20).fill('ack'));
      expect(p.closed).toBeNull();
      await p.close();
      const ch = await conn.createChannel();
      await ch.purgeQueue(`${exchange}.q`);
      await ch.close();
    });
  });
});
