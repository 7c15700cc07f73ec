#!/usr/bin/env node
// The demo's stand-in for the consumer side: `bind KEY…` declares one durable queue per consumer
// app key bound to `fc.snapshot.v2.<key>.*` (as svc-hall's RabbitAdmin would); `verify KEY…`
// reads every message back and checks it as a consumer must: 15 envelope members, messageId =
// eventId, persistent, routing key = consumer key + school, and the snapshot's fc.canon.v1 hash.
import amqp from 'amqplib';
import { canonicalize } from '../dist/lib/canon/index.js';

const [mode, ...keys] = process.argv.slice(2);
const url = process.env.FCCTL_AMQP_URL;
if (!url || !['bind', 'verify'].includes(mode) || keys.length === 0) {
  console.error('usage: FCCTL_AMQP_URL=… node scripts/demo-consumer.mjs bind|verify KEY…');
  process.exit(2);
}
const EXCHANGE = 'fc.answer.delivery.v2';
const conn = await amqp.connect(url);
const ch = await conn.createChannel();
await ch.assertExchange(EXCHANGE, 'topic', { durable: true });
let bad = 0;
let tag;
for (const key of keys) {
  const queue = `demo.consumer.${key}`;
  await ch.assertQueue(queue, { durable: true });
  await ch.bindQueue(queue, EXCHANGE, `fc.snapshot.v2.${key}.*`);
  if (mode === 'bind') {
    await ch.purgeQueue(queue);
    console.log(`bound ${queue} to fc.snapshot.v2.${key}.*`);
    continue;
  }
  // One consumer with a prefetch window, not basic.get per message (a round trip each: 1 500
  // messages took a minute). Every message was confirmed before this runs, so the queue's count
  // at the start is what there is to read.
  const { messageCount } = await ch.checkQueue(queue);
  await ch.prefetch(500);
  let n = 0;
  const ids = new Set();
  await new Promise((resolve, reject) => {
    if (messageCount === 0) return resolve();
    ch.consume(queue, (m) => {
      if (m === null) return reject(new Error(`${queue} was cancelled`));
      n += 1;
      const problems = check(m, key, ids);
      if (problems.length) {
        bad += 1;
        console.log(`  ${JSON.parse(m.content.toString('utf8')).eventId}: ${problems.join(', ')}`);
      }
      ch.ack(m);
      if (n === messageCount) resolve();
    }).then(({ consumerTag }) => (tag = consumerTag), reject);
  });
  if (tag) await ch.cancel(tag);
  tag = undefined;
  console.log(
    `consumer ${key}: ${n} messages read, ${ids.size} distinct event ids, every hash ${bad ? 'NOT ' : ''}verified`,
  );
}
await conn.close();
process.exit(bad ? 1 : 0);

/** What a consumer must check on each message; ids collects the event ids seen (duplicates). */
function check(m, key, ids) {
  const raw = m.content.toString('utf8');
  const body = JSON.parse(raw);
  const snapshotText = raw.slice(raw.indexOf('"snapshot":') + 11, -1);
  const hash = canonicalize(snapshotText);
  const problems = [];
  if (Object.keys(body).length !== 15) problems.push('not 15 members');
  if (m.properties.messageId !== body.eventId) problems.push('messageId ≠ eventId');
  if (m.properties.deliveryMode !== 2) problems.push('not persistent');
  if (m.fields.routingKey !== `fc.snapshot.v2.${key}.${body.consumerSchoolId}`) problems.push('routing key');
  if (!hash.ok || hash.hash !== body.contentHash) problems.push('hash does not verify');
  if (ids.has(body.eventId)) problems.push('duplicate eventId (at-least-once)');
  ids.add(body.eventId);
  return problems;
}
