/**
 * A database that stops answering mid-connection (not one that refuses): `fcctl status` must still
 * end — the section says "no answer in 10 s", the others are shown, exit 3 — and `status --watch`
 * must still leave on q. The SH database is reached through a TCP proxy that, once it sees a
 * statement naming `flow_apply_command` (status's apply-command reads), forwards nothing more in
 * either direction and keeps the sockets open: a server hung, or a network that drops silently.
 */
import { createServer, type Server, type Socket, connect } from 'node:net';
import { afterEach, describe, expect } from 'vitest';
import { spawnCli } from '../helpers/cli.js';
import { servicesTest } from '../helpers/services.js';
import { TmuxSession } from '../helpers/tmux.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'statusstall', init: 'all' });

/** A proxy to `port` that stops forwarding (for good) once a client sends `marker`, or when `stall()` is called. */
async function stallingProxy(port: number, marker: string | null) {
  let stalled = false;
  const sockets: Socket[] = [];
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.push(client, upstream);
    client.on('data', (d) => {
      if (marker !== null && d.toString('latin1').includes(marker)) stalled = true;
      if (!stalled) upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (!stalled) client.write(d);
    });
    for (const s of [client, upstream]) s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    stall: () => {
      stalled = true;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

let proxy: Awaited<ReturnType<typeof stallingProxy>> | undefined;
afterEach(() => proxy?.close());

/** The SH URL of `dbs`, through the proxy. */
const throughProxy = (shUrl: string, port: number) => shUrl.replace(/@127\.0\.0\.1:\d+\//, `@127.0.0.1:${port}/`);

describe('status when a database stops answering', () => {
  test('one snapshot: the SH sections say no answer in 10 s, FC is shown, exit 3, and the process ends', async ({
    dbs,
  }) => {
    const port = Number(/@127\.0\.0\.1:(\d+)\//.exec(dbs.shUrl)![1]);
    proxy = await stallingProxy(port, 'flow_apply_command');
    const started = Date.now();
    const r = await spawnCli(['--json', 'status'], {
      env: dbs.env({ FCCTL_SH_DATABASE_URL: throughProxy(dbs.shUrl, proxy.port) }),
      timeoutMs: 40_000,
    });
    const seconds = (Date.now() - started) / 1000;
    expect(r.code, r.stderr).toBe(3);
    const doc = JSON.parse(r.stdout) as Record<string, { status: string; error?: string }>;
    // its statement stalled: no answer in 10 s; or its connection was still being made: the connect timed out
    expect(doc['applyCommands']!.status).toBe('unreachable');
    expect(doc['applyCommands']!.error).toMatch(
      /^(no answer in 10 s|cannot connect to SH database at mysql:\/\/[^:]+:\*\*\*@.*: ETIMEDOUT)$/,
    );
    expect(doc['outbox']!.status).toBe('ok');
    // the deadline (10 s) and the pool's close grace (5 s), not for ever
    expect(seconds).toBeLessThan(25);
  }, 60_000);

  test('--watch: the view keeps its keys while a snapshot hangs; q leaves with exit 0', async ({ dbs }) => {
    const port = Number(/@127\.0\.0\.1:(\d+)\//.exec(dbs.shUrl)![1]);
    proxy = await stallingProxy(port, null);
    const t = new TmuxSession(
      `node ${process.cwd()}/bin/fcctl status --watch`,
      dbs.env({ FCCTL_SH_DATABASE_URL: throughProxy(dbs.shUrl, proxy.port) }),
    );
    try {
      await waitFor('the view', async () => t.screen().includes('every 2 s, q to leave'), 20_000, 200);
      proxy.stall();
      // a refresh is now waiting on SH; q must not wait for it
      await new Promise((r) => setTimeout(r, 3000));
      const quitAt = Date.now();
      t.sendKeys('q');
      await waitFor('exit 0 after q', async () => t.screen().includes('[exit 0]'), 15_000, 100);
      expect(Date.now() - quitAt).toBeLessThan(10_000);
    } finally {
      t.kill();
    }
  }, 60_000);
});
