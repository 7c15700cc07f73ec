/**
 * Issue 34 §10, reviewed: the endpoint's cap of 100 connections must not let one client that holds
 * 100 (trickling their headers, each opened again as soon as it is closed) shut out the kubelet's
 * probes: refused, they restart a healthy pod. At the cap a new connection takes the place of the
 * oldest one that has no request being answered.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { expect } from 'vitest';
import { testAmqpUrl } from '../helpers/db.js';
import { insertRegistry, PUBLISHER } from '../helpers/deliveries.js';
import { freePort, httpGet, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'httpflood', init: 'fc' });

/** A client that keeps `n` connections open, each trickling a header line, opened again when closed. */
function holder(port: number, n: number): { stop(): void; opened(): number } {
  let stopped = false;
  let opened = 0;
  const sockets = new Set<Socket>();
  const one = () => {
    if (stopped) return;
    opened++;
    const s = connect(port, '127.0.0.1');
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('connect', () => s.write('GET /readyz HTTP/1.1\r\nHost: fcctl\r\n'));
    const timer = setInterval(() => s.writable && s.write('X-Slow: 1\r\n'), 2000);
    s.on('close', () => {
      clearInterval(timer);
      sockets.delete(s);
      setTimeout(one, 20);
    });
  };
  for (let i = 0; i < n; i++) one();
  return {
    stop: () => {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
    opened: () => opened,
  };
}

/** One probe as the kubelet sends it: a new connection (no keep-alive), 1 s to answer; its status or why none. */
function probe(port: number, path: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      agent: false,
      timeout: 1000,
      headers: { Connection: 'close' },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(String(res.statusCode));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

test('a client holding 100 connections: every probe of /healthz and /readyz is still answered', async ({ dbs }) => {
  await insertRegistry(dbs.admin, dbs.fcName);
  const env = dbs.env({
    FCCTL_AMQP_URL: testAmqpUrl(),
    FCCTL_APP_KEY: PUBLISHER.appKey,
    FCCTL_APP_CODE: PUBLISHER.appCode,
  });
  const port = await freePort();
  const relay = startService(['--json', 'deliveries', 'send', '--follow', '--listen', `:${port}`], { env });
  const hold = holder(port, 100);
  try {
    await waitFor('the endpoint', async () => (await httpGet(port, '/healthz').catch(() => null))?.status === 200);
    await waitFor('100 held', async () => hold.opened() >= 100, 10_000, 50);
    await new Promise((r) => setTimeout(r, 1000));
    // a kubelet's probes: one a second, 1 s timeout each, through the trickles' 10 s header timeouts
    const answers: string[] = [];
    for (let i = 0; i < 14; i++) {
      const path = i % 2 === 0 ? '/healthz' : '/readyz';
      const r = await probe(port, path);
      answers.push(r);
      await new Promise((r) => setTimeout(r, 1000));
    }
    console.log(`probes under 100 held connections: ${answers.join(' ')} (${hold.opened()} opened by the holder)`);
    expect(answers.every((a) => a === '200' || a === '503')).toBe(true);
    expect(relay.child.exitCode).toBeNull();
  } finally {
    hold.stop();
    await relay.stop('SIGKILL');
  }
}, 90_000);
