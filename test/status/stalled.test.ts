/**
 * A database that stops answering (not one that refuses): `fcctl status` must still end — the
 * sections of that side say why, the others are shown, exit 3, and the process exits as soon as it
 * has printed — and `status --watch` must leave on q within a second, before its first frame too.
 * The SH database is reached through a TCP proxy (test/helpers/proxy.ts) that freezes as a
 * `kill -STOP`ped server does: nothing more forwarded, new connections never greeted, a client's
 * FIN never answered.
 */
import { afterEach, describe, expect } from 'vitest';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { servicesTest } from '../helpers/services.js';
import { spawnTimed } from '../helpers/timed.js';
import { TmuxSession } from '../helpers/tmux.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'statusstall', init: 'all' });

let proxy: TcpProxy | undefined;
afterEach(async () => {
  await proxy?.stop();
  proxy = undefined;
});

/** A proxy to the SH database of `shUrl`, started. */
async function shProxy(shUrl: string): Promise<TcpProxy> {
  const u = new URL(shUrl);
  proxy = new TcpProxy(u.hostname, Number(u.port));
  await proxy.start();
  return proxy;
}

/** The SH sections' errors of a status document. */
const shErrors = (doc: Record<string, { status: string; error?: string; sh?: { status: string; error?: string } }>) => [
  doc['applyCommands']!,
  doc['reconcile']!,
  doc['fleet']!.sh!,
  doc['claims']!.sh!,
  doc['pauses']!.sh!,
];

/** What a process that printed must do next: end, at once (a grace of 0.5 s for the pools' close, 1.5 s on a busy machine). */
const PRINT_TO_EXIT_MS = 1500;

describe('status when a database stops answering', () => {
  test('frozen at a statement of the apply commands: those sections say no answer in 10 s, FC is shown, exit 3, the process ends once printed', async ({
    dbs,
  }) => {
    const p = await shProxy(dbs.shUrl);
    p.freezeAtStatement('flow_apply_command');
    const r = await spawnTimed(['--json', 'status'], dbs.env({ FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, p.port) }));
    expect(r.code, r.stderr).toBe(3);
    const doc = JSON.parse(r.stdout) as Record<string, { status: string; error?: string }>;
    // its statement froze: no answer in 10 s; or a connection of its pool was still being made: the connect timed out
    expect(doc['applyCommands']!.status).toBe('unreachable');
    expect(doc['applyCommands']!.error).toMatch(
      /^(no answer in 10 s|cannot connect to SH database at mysql:\/\/[^:]+:\*\*\*@.*: ETIMEDOUT)$/,
    );
    expect(doc['outbox']!.status).toBe('ok');
    expect(r.printedMs!).toBeLessThan(12_000);
    expect(r.exitedMs - r.printedMs!).toBeLessThan(PRINT_TO_EXIT_MS);
  }, 60_000);

  test('the first handshake completes, then nothing is answered: every SH section is unreadable, exit 3, the process ends once printed', async ({
    dbs,
  }) => {
    const p = await shProxy(dbs.shUrl);
    p.freezeAtStatement();
    const r = await spawnTimed(
      ['--json', 'status', '--fail-if', 'dead'],
      dbs.env({ FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, p.port) }),
    );
    expect(r.code, r.stderr).toBe(3);
    const doc = JSON.parse(r.stdout) as Parameters<typeof shErrors>[0];
    for (const s of shErrors(doc)) expect(s).toEqual({ status: 'unreachable', error: 'no answer in 10 s' });
    expect(doc['outbox']!.status).toBe('ok');
    expect(r.printedMs!).toBeLessThan(12_000);
    expect(r.exitedMs - r.printedMs!).toBeLessThan(PRINT_TO_EXIT_MS);
  }, 60_000);

  test('frozen before the first connection (accepted, never greeted): the connect times out, exit 3, the process ends once printed', async ({
    dbs,
  }) => {
    const p = await shProxy(dbs.shUrl);
    p.freeze();
    const r = await spawnTimed(['--json', 'status'], dbs.env({ FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, p.port) }));
    expect(r.code, r.stderr).toBe(3);
    const doc = JSON.parse(r.stdout) as Parameters<typeof shErrors>[0];
    for (const s of shErrors(doc)) {
      expect(s.status).toBe('unreachable');
      expect(s.error).toMatch(
        /^(no answer in 10 s|cannot connect to SH database at mysql:\/\/[^:]+:\*\*\*@.*: ETIMEDOUT)$/,
      );
    }
    expect(r.printedMs!).toBeLessThan(12_000);
    expect(r.exitedMs - r.printedMs!).toBeLessThan(PRINT_TO_EXIT_MS);
  }, 60_000);

  test('--watch: the view keeps its keys while a snapshot hangs; q leaves within a second, exit 0', async ({ dbs }) => {
    const p = await shProxy(dbs.shUrl);
    const t = new TmuxSession(
      `node ${process.cwd()}/bin/fcctl status --watch`,
      dbs.env({ FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, p.port) }),
    );
    try {
      await waitFor('the view', async () => t.screen().includes('every 2 s, q to leave'), 20_000, 200);
      p.freeze();
      // a refresh is now waiting on SH; q must not wait for it
      await new Promise((r) => setTimeout(r, 3000));
      const quitAt = Date.now();
      t.sendKeys('q');
      await waitFor('exit 0 after q', async () => t.screen().includes('[exit 0]'), 15_000, 50);
      expect(Date.now() - quitAt).toBeLessThan(1500);
    } finally {
      t.kill();
    }
  }, 60_000);

  test('--watch: q before the first frame leaves within a second, exit 0 (5 tries)', async ({ dbs }) => {
    const p = await shProxy(dbs.shUrl);
    // each chunk held 150 ms: the first frame comes after a second or more of handshakes and reads
    p.delayMs = 150;
    // both databases are on the one server the proxy forwards to
    const env = dbs.env({
      FCCTL_SH_DATABASE_URL: viaProxy(dbs.shUrl, p.port),
      FCCTL_FC_DATABASE_URL: viaProxy(dbs.fcUrl, p.port),
    });
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const connected = p.accepted;
      const t = new TmuxSession(`node ${process.cwd()}/bin/fcctl status --watch`, env);
      try {
        // the view reads raw keys before it connects: a connection at the proxy means q is read as a key
        await waitFor('a connection', async () => p.accepted > connected, 20_000, 20);
        expect(t.screen()).not.toContain('q to leave');
        const quitAt = Date.now();
        t.sendKeys('q');
        await waitFor(`exit 0 after q (try ${i + 1})`, async () => t.screen().includes('[exit 0]'), 15_000, 50);
        waits.push(Date.now() - quitAt);
      } finally {
        t.kill();
      }
    }
    expect(
      waits.every((ms) => ms < 1500),
      `ms from q to exit: ${waits.join(', ')}`,
    ).toBe(true);
  }, 120_000);
});
