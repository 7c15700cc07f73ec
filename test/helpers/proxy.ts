import net from 'node:net';

/** Whether a client→server chunk begins a MySQL statement: a packet of sequence 0 carrying COM_QUERY (0x03) or a prepared statement's (0x16, 0x17). */
function isStatement(chunk: Buffer): boolean {
  return chunk.length >= 5 && chunk[3] === 0 && (chunk[4] === 0x03 || chunk[4] === 0x16 || chunk[4] === 0x17);
}

/**
 * A TCP proxy on loopback between fcctl and a real server, for fault tests: `cut()` destroys every
 * open connection (as a broker or database crash would look from the client), `refuse(true)`
 * refuses new ones, `delayMs` holds each chunk, `freeze()` makes it a server that stops answering
 * without refusing (`kill -STOP`): nothing more is forwarded either way, new connections are
 * accepted and never greeted, and no socket is ended (a client's FIN is never answered).
 * `freezeAtStatement()` freezes at the first statement a client sends: every handshake up to
 * then completed, that statement and all after never answered.
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private refusing = false;
  private frozen = false;
  /** freeze at the first statement (containing this text, when not '') */
  private freezeOnStatement: string | null = null;
  delayMs = 0;
  port = 0;
  /** connections accepted so far */
  accepted = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<number> {
    // half-open allowed: a frozen server does not answer a FIN (the client's socket stays open)
    this.server = net.createServer({ allowHalfOpen: true }, (client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      this.accepted++;
      this.sockets.add(client);
      client.on('error', () => undefined);
      if (this.frozen) return; // accepted (the kernel's backlog) and never greeted
      const upstream = net.connect(this.targetPort, this.targetHost);
      this.sockets.add(upstream);
      const pipe = (from: net.Socket, to: net.Socket) =>
        from.on('data', (chunk: Buffer) => {
          const at = this.freezeOnStatement;
          if (from === client && at !== null && isStatement(chunk) && chunk.toString('latin1').includes(at))
            this.freeze();
          if (this.frozen) return;
          if (this.delayMs > 0) setTimeout(() => !this.frozen && to.writable && to.write(chunk), this.delayMs);
          else if (to.writable) to.write(chunk);
        });
      pipe(client, upstream);
      pipe(upstream, client);
      const close = () => {
        if (this.frozen) return;
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('end', close).on('close', close).on('error', close);
      upstream.on('end', close).on('close', close).on('error', close);
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

  /** From now on a server that stopped answering (see the class). */
  freeze(): void {
    this.frozen = true;
  }

  /** Answering again: new connections are greeted (those frozen lost what was sent meanwhile); a freezeAtStatement() still waiting is forgotten. */
  thaw(): void {
    this.frozen = false;
    this.freezeOnStatement = null;
  }

  /** Whether it stopped answering (freeze(), or the statement freezeAtStatement() waited for). */
  get isFrozen(): boolean {
    return this.frozen;
  }

  /** Freezes at the first statement any client sends (that names `text`, when given): see the class. */
  freezeAtStatement(text = ''): void {
    this.freezeOnStatement = text;
  }

  async stop(): Promise<void> {
    this.frozen = false;
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
