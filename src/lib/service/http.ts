/**
 * The `--listen` endpoint of a `--follow` service (issue 27 §3): `GET /metrics` (prom-client's
 * exposition), `GET /healthz` (200 while the loop progresses or idles normally, 503 when stuck),
 * `GET /readyz` (200 when connected, checked and not paused; else 503 and a one-line reason).
 * Anything else is 404, a method other than GET or HEAD 405. Nothing served changes state or
 * shows a setting: the reasons are the loop's own one-line messages, URLs in them already masked.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { EnvironmentError } from '../cli/exit.js';
import type { Health } from './decide.js';

/**
 * What a client may hold of the endpoint (issue 34 §10): its requests are small GETs answered at
 * once, so anything slower is a stuck or hostile client. Headers within 10 s, the whole request
 * (a body trickled a byte at a time included) within 30 s, else 408 and closed; a connection that
 * sends nothing for 10 s is closed, one kept alive after its answer for 5 s; at most 100 at once
 * (at the cap a new one takes the place of the oldest with no request being answered:
 * {@link capConnections}). Node checks the first two every `checkEveryMs`, so a bound
 * is kept to within a second (its default, 30 s, let a trickle live 330 s).
 */
export const HTTP_LIMITS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5000,
  maxConnections: 100,
  checkEveryMs: 1000,
} as const;

export interface ServiceEndpoints {
  /** the exposition text and its content type */
  readonly metrics: () => Promise<{ contentType: string; body: string }>;
  readonly health: () => Health;
}

function reply(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = 'text/plain; charset=utf-8',
  head = false,
): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Cache-Control': 'no-store',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(head ? undefined : body);
}

async function route(req: IncomingMessage, res: ServerResponse, endpoints: ServiceEndpoints): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  const known = path === '/metrics' || path === '/healthz' || path === '/readyz';
  if (!known) return reply(res, 404, 'not found\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return reply(res, 405, 'method not allowed\n');
  }
  const head = req.method === 'HEAD';
  if (path === '/metrics') {
    const m = await endpoints.metrics();
    return reply(res, 200, m.body, m.contentType, head);
  }
  const h = endpoints.health();
  const ok = path === '/healthz' ? h.healthy : h.ready;
  // /healthz says only whether to restart; /readyz why it takes no traffic
  const body = ok ? 'ok\n' : `${path === '/healthz' ? h.reason : h.reason.split('\n')[0]}\n`;
  return reply(res, ok ? 200 : 503, body, undefined, head);
}

/**
 * Listens on `host:port`; a port already taken (or an address not on this host) is exit 3, one
 * line naming the address.
 * @example const server = await listen({ host: '127.0.0.1', port: 9464 }, endpoints); … await close(server)
 */
export async function listen(address: { host: string; port: number }, endpoints: ServiceEndpoints): Promise<Server> {
  const server = createServer({ connectionsCheckingInterval: HTTP_LIMITS.checkEveryMs }, (req, res) => {
    route(req, res, endpoints).catch((err: unknown) => reply(res, 500, `${(err as Error).message.split('\n')[0]}\n`));
  });
  server.headersTimeout = HTTP_LIMITS.headersTimeoutMs;
  server.requestTimeout = HTTP_LIMITS.requestTimeoutMs;
  // a connection that never sends a byte is not a request yet: only the socket's idle timeout ends it
  server.timeout = HTTP_LIMITS.idleTimeoutMs;
  // a slow or idle scraper never holds the process at its stop
  server.keepAliveTimeout = HTTP_LIMITS.keepAliveTimeoutMs;
  capConnections(server, HTTP_LIMITS.maxConnections);
  const shown = address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new EnvironmentError(
          `--listen ${shown}: ${err.code === 'EADDRINUSE' ? 'the address is already in use' : (err.code ?? err.message)}`,
        ),
      ),
    );
    server.listen(address.port, address.host, () => resolve());
  });
  return server;
}

/**
 * At most `max` connections open. Not Node's `maxConnections`, which closes each new one at the
 * cap: a client holding the cap (headers trickled, each connection opened again once its timeout
 * closes it) then shuts out the kubelet's probes, and a healthy pod is restarted (9 probes in a
 * row refused). Here the new connection takes the place of the oldest one that has no request
 * being answered (trickling, idle, or kept alive): a probe answered in a millisecond gets in
 * whatever a slow client holds; the new one is closed only when all `max` are being answered.
 */
function capConnections(server: Server, max: number): void {
  // open connections, oldest first, each with its requests being answered
  const open = new Map<Socket, { answering: number }>();
  server.on('connection', (socket: Socket) => {
    if (open.size >= max) {
      const oldest = [...open].find(([, c]) => c.answering === 0)?.[0];
      if (oldest === undefined) return void socket.destroy();
      open.delete(oldest);
      oldest.destroy();
    }
    open.set(socket, { answering: 0 });
    socket.once('close', () => open.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const c = open.get(req.socket);
    if (c === undefined) return;
    c.answering++;
    res.once('close', () => c.answering--);
  });
}

/** Stops listening and drops the connections still open (a scraper's keep-alive). */
export async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
