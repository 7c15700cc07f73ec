/**
 * The real node_exporter (Debian's `prometheus-node-exporter`, installed by `scripts/services.sh
 * up` and kept from starting there), run by a test with only the textfile collector on a free
 * loopback port. Missing, the test fails with one clear line, as the promtool tests do: a check
 * that silently skipped would let duplicate series through CI.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';

/** The node_exporter to run: `FCCTL_NODE_EXPORTER`, else the first on PATH, else Debian's path. */
export function nodeExporterPath(): string {
  const given = process.env['FCCTL_NODE_EXPORTER'];
  if (given) return given;
  const found = spawnSync('sh', ['-c', 'command -v prometheus-node-exporter || command -v node_exporter'], {
    encoding: 'utf8',
  }).stdout.trim();
  if (found) return found.split('\n')[0]!;
  if (existsSync('/usr/bin/prometheus-node-exporter')) return '/usr/bin/prometheus-node-exporter';
  throw new Error(
    "node_exporter is not installed: run `bash scripts/services.sh up` (installs Debian's prometheus-node-exporter package), or set FCCTL_NODE_EXPORTER",
  );
}

/** A port free on 127.0.0.1 right now (the kernel's pick). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port from listen(0)');
  return address.port;
}

export interface NodeExporter {
  /** host:port it listens on (loopback), for a Prometheus scrape target */
  readonly address: string;
  /** GET /metrics: the exposition text (a status other than 200 throws) */
  scrape(): Promise<string>;
  /** everything it wrote to stdout and stderr so far (its log: gather errors are logged there) */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts node_exporter with the textfile collector only, reading `dir`, and waits until it
 * answers. Stop it in the test's cleanup.
 * @example const ne = await startNodeExporter(dir); onTestFinished(() => ne.stop());
 */
export async function startNodeExporter(dir: string): Promise<NodeExporter> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    nodeExporterPath(),
    [
      '--collector.disable-defaults',
      '--collector.textfile',
      `--collector.textfile.directory=${dir}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  let exited = false;
  const closed = new Promise<void>((resolve) => child.once('close', () => ((exited = true), resolve())));
  child.once('error', (err) => (output += `spawn error: ${err.message}\n`));
  const url = `http://127.0.0.1:${port}/metrics`;
  const scrape = async () => {
    const res = await fetch(url);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`node_exporter answered ${res.status}: ${text.slice(0, 500)}`);
    return text;
  };
  const stop = async () => {
    if (!exited) child.kill('SIGTERM');
    await closed;
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (exited) throw new Error(`node_exporter exited before answering: ${output}`);
    try {
      await scrape();
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`node_exporter did not answer on ${url}: ${(err as Error).message}; its log: ${output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { address: `127.0.0.1:${port}`, scrape, log: () => output, stop };
}
