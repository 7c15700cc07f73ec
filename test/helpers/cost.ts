import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (Linux). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the fields after the command name, which is in parentheses and may hold spaces: state is field 3
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * A loopback TCP proxy in front of MariaDB that counts the commands its clients send: every client
 * packet with sequence id 0 starts one (a query, a prepare, an execute, a ping). It measures the
 * statements of the one process pointed at it, whatever else the shared server is doing.
 */
export class MysqlCommandCounter {
  commands = 0;
  port = 0;
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<number> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) this.sockets.add(s);
      let pending: Buffer = Buffer.alloc(0);
      client.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        // packets: 3 bytes length (little endian), 1 byte sequence id, the payload
        while (pending.length >= 4) {
          const size = pending.readUIntLE(0, 3);
          if (pending.length < 4 + size) break;
          if (pending[3] === 0) this.commands += 1;
          pending = pending.subarray(4 + size);
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => client.writable && client.write(chunk));
      const close = () => {
        for (const s of [client, upstream]) {
          s.destroy();
          this.sockets.delete(s);
        }
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as net.AddressInfo).port;
    return this.port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** What a process cost over `ms`: CPU as a share of one core, and the commands a counter saw per second. */
export async function costOver(
  pid: number,
  counter: MysqlCommandCounter,
  ms: number,
): Promise<{ cpuPercent: number; commandsPerSecond: number }> {
  const [cpu0, q0, t0] = [cpuSeconds(pid), counter.commands, performance.now()];
  await new Promise((r) => setTimeout(r, ms));
  const seconds = (performance.now() - t0) / 1000;
  return {
    cpuPercent: ((cpuSeconds(pid) - cpu0) / seconds) * 100,
    commandsPerSecond: (counter.commands - q0) / seconds,
  };
}
