/**
 * Issue 34 §10: the `--listen` endpoint of a real `deliveries send --follow` process keeps what a
 * slow or hostile client can hold bounded: a request that trickles its body (`Content-Length: 1e9`,
 * a byte every 5 s) or its headers is closed within its timeout, at most 100 connections stay open
 * (a new one past the cap takes the oldest's place), idle ones close after 10 s, and `/metrics`
 * answers through a flood and the trickles.
 */
import { connect, type Socket } from 'node:net';
import { expect } from 'vitest';
import { testAmqpUrl } from '../helpers/db.js';
import { insertRegistry, PUBLISHER } from '../helpers/deliveries.js';
import { freePort, httpGet, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'httplim', init: 'fc' });

/** A raw client socket: when it was opened, when the server ended it (null while open), what it answered. */
interface Held {
  readonly socket: Socket;
  readonly openedAt: number;
  closedAt: number | null;
  answer: string;
}
async function open(port: number): Promise<Held> {
  const socket = connect(port, '127.0.0.1');
  const held: Held = { socket, openedAt: Date.now(), closedAt: null, answer: '' };
  socket.on('data', (c: Buffer) => (held.answer += c.toString('latin1')));
  socket.on('error', () => undefined);
  socket.on('close', () => (held.closedAt ??= Date.now()));
  await new Promise<void>((resolve) => {
    socket.once('connect', () => resolve());
    socket.once('close', () => resolve());
  });
  return held;
}
/** Writes `text` one byte every `everyMs`, as long as the socket is open. */
function trickle(held: Held, text: string, everyMs: number): NodeJS.Timeout {
  let i = 0;
  const timer = setInterval(() => {
    if (held.closedAt !== null || held.socket.destroyed) return clearInterval(timer);
    held.socket.write(text[i % text.length]!);
    i++;
  }, everyMs);
  return timer;
}
const seconds = (h: Held) => ((h.closedAt ?? Date.now()) - h.openedAt) / 1000;

test('trickled requests are closed within their timeouts, at most 100 connections open, /metrics answers', async ({
  dbs,
}) => {
  await insertRegistry(dbs.admin, dbs.fcName);
  const env = dbs.env({
    FCCTL_AMQP_URL: testAmqpUrl(),
    FCCTL_APP_KEY: PUBLISHER.appKey,
    FCCTL_APP_CODE: PUBLISHER.appCode,
  });
  const port = await freePort();
  const relay = startService(['--json', 'deliveries', 'send', '--follow', '--listen', `:${port}`], { env });
  const timers: NodeJS.Timeout[] = [];
  const all: Held[] = [];
  try {
    await waitFor('the endpoint', async () => (await httpGet(port, '/metrics').catch(() => null))?.status === 200);
    // a flood of idle connections (nothing sent): past the cap of 100 each new one takes the place of
    // the oldest (none is being answered), so 100 stay open and a scrape still gets in at once
    const idle = await Promise.all(Array.from({ length: 250 }, () => open(port)));
    all.push(...idle);
    await waitFor(
      'the flood down to the cap',
      async () => idle.filter((h) => h.closedAt === null).length <= 100,
      5000,
      50,
    );
    expect(idle.slice(-100).every((h) => h.closedAt === null)).toBe(true);
    const scrape = await httpGet(port, '/metrics');
    expect(scrape.status).toBe(200);
    expect(scrape.body).toMatch(/^fcctl_service_ready\{/m);
    // the idle ones go after 10 s (and Node's 1 s check)
    await waitFor('the idle connections closed', async () => idle.every((h) => h.closedAt !== null), 15_000, 100);
    const idleLongest = Math.max(...idle.map(seconds));
    // 20 bodies trickled a byte every 5 s after complete headers, 5 header sections trickled likewise
    const bodies = await Promise.all(Array.from({ length: 20 }, () => open(port)));
    for (const b of bodies) {
      b.socket.write('GET /metrics HTTP/1.1\r\nHost: fcctl\r\nContent-Length: 1000000000\r\n\r\n');
      timers.push(trickle(b, 'x', 5000));
    }
    const headers = await Promise.all(Array.from({ length: 5 }, () => open(port)));
    for (const h of headers) {
      h.socket.write('GET /metrics HTTP/1.1\r\nHost: fcctl\r\n');
      timers.push(trickle(h, 'X-Slow: 1\r\n', 5000));
    }
    all.push(...bodies, ...headers);
    await new Promise((r) => setTimeout(r, 1000));
    expect(bodies.every((b) => b.closedAt === null)).toBe(true);
    await waitFor('the trickled headers closed', async () => headers.every((h) => h.closedAt !== null), 15_000, 100);
    const headersLongest = Math.max(...headers.map(seconds));
    await waitFor('the trickled bodies closed', async () => bodies.every((b) => b.closedAt !== null), 40_000, 100);
    const bodiesLongest = Math.max(...bodies.map(seconds));
    console.log(
      `endpoint limits: idle closed by ${idleLongest} s, trickled headers by ${headersLongest} s, trickled bodies by ${bodiesLongest} s`,
    );
    expect(idleLongest).toBeLessThanOrEqual(13);
    expect(headersLongest).toBeLessThanOrEqual(13);
    // the body's request timeout (30 s) ends them with 408, not the idle one: each sent a byte every 5 s
    expect(bodiesLongest).toBeGreaterThan(25);
    expect(bodiesLongest).toBeLessThanOrEqual(33);
    expect(bodies.every((b) => /^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 408 /.test(b.answer))).toBe(true);
    expect((await httpGet(port, '/readyz')).status).toBeGreaterThan(0);
    expect(relay.child.exitCode).toBeNull();
    const stopped = await relay.stop('SIGTERM');
    expect(stopped.code).toBe(0);
  } finally {
    for (const t of timers) clearInterval(t);
    for (const h of all) h.socket.destroy();
    await relay.stop('SIGKILL');
  }
}, 90_000);
