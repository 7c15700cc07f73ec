import net from 'node:net';

/**
 * A TCP proxy on loopback between fcctl and a real server, for fault tests: `cut()` destroys every
 * open connection (as a broker or database crash would look from the client), `refuse(true)`
 * refuses new ones, `delayMs` holds each chunk, `stall(true)` stops forwarding anything while
 * keeping every connection open and accepting new ones (a frozen server: no answer, no refusal, a
 * close never acknowledged).
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private refusing = false;
  private stalled = false;
  delayMs = 0;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<number> {
    // half-open allowed: a stalled server never answers a client's close
    this.server = net.createServer({ allowHalfOpen: true }, (client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = net.connect({ port: this.targetPort, host: this.targetHost, allowHalfOpen: true });
      this.sockets.add(client);
      this.sockets.add(upstream);
      const pipe = (from: net.Socket, to: net.Socket) =>
        from
          .on('data', (chunk) => {
            if (this.stalled) return;
            if (this.delayMs > 0) setTimeout(() => to.writable && to.write(chunk), this.delayMs);
            else if (to.writable) to.write(chunk);
          })
          .on('end', () => {
            if (!this.stalled) to.end();
          });
      pipe(client, upstream);
      pipe(upstream, client);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as net.AddressInfo).port;
    return this.port;
  }

  /** Drops every open connection at once. */
  cut(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  refuse(on: boolean): void {
    this.refusing = on;
  }

  /** While on, nothing is forwarded either way and no close is passed on: a frozen server. */
  stall(on: boolean): void {
    this.stalled = on;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** The same URL pointing at the proxy's port. */
export function viaProxy(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}
