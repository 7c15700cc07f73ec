import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const STAND_IN = fileURLToPath(new URL('../../fixtures/flow-center/server.mjs', import.meta.url));

/** One request as the stand-in logged it. */
export interface LogEntry {
  readonly seq: number;
  readonly at: number;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly query: Record<string, string>;
  readonly appKey: string | null;
  readonly bizType: string | null;
  readonly bizId: string | null;
  readonly requestToken: string | null;
  readonly attempt: number | null;
  readonly auth: string | null;
  readonly fault: string | null;
  readonly status: number | 'no-answer' | 'dropped' | null;
  readonly branch: string | null;
}

export interface StandInInstance {
  bizType: string;
  bizId: string;
  status: 10 | 20 | 30 | 40;
  applyAppKey: string;
  submitterId: string | number;
  flowGuid: string;
  instanceId?: string;
  round?: number | null;
  requestToken?: string | null;
}

export interface Fault {
  path?: '/oapi/flow/instance' | '/oapi/flow/apply' | '*';
  kind: 'latency' | 'timeout' | 'drop' | 'status' | 'malformed' | 'not-found' | 'branch' | 'concurrent';
  count?: number;
  rate?: number;
  bizId?: string;
  after?: boolean;
  ms?: number;
  status?: number;
  variant?: string;
  /** kind status: the answer body (default an INJECTED error) */
  body?: unknown;
  branch?: string;
  owner?: Record<string, unknown>;
}

/** A running stand-in flow center (fixtures/flow-center/server.mjs) and its admin endpoints. */
export interface FlowCenter {
  readonly url: string;
  addInstances(list: readonly StandInInstance[]): Promise<void>;
  instances(): Promise<
    Array<StandInInstance & { instanceId: string; requestToken: string | null; round: number | null }>
  >;
  faults(list: readonly Fault[]): Promise<void>;
  clearFaults(): Promise<void>;
  log(): Promise<LogEntry[]>;
  clearLog(): Promise<void>;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the stand-in on a free loopback port with these app keys and secrets (passed by environment). */
export async function startFlowCenter(options: {
  apps: Record<string, string>;
  latencyMs?: number;
}): Promise<FlowCenter> {
  const child: ChildProcess = spawn(
    process.execPath,
    [STAND_IN, '--port', '0', '--latency-ms', String(options.latencyMs ?? 0)],
    {
      env: { PATH: process.env['PATH'], FLOW_STANDIN_APPS: JSON.stringify(options.apps) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`stand-in did not start: ${stderr}`)), 10_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(out.slice(0, nl).trim());
      }
    });
    child.on('exit', (code) => reject(new Error(`stand-in exited ${code}: ${stderr}`)));
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    if (!res.ok) throw new Error(`stand-in ${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as unknown;
  };
  return {
    url,
    addInstances: async (list) => {
      for (let i = 0; i < list.length; i += 2000) await call('POST', '/__admin/instances', list.slice(i, i + 2000));
    },
    instances: async () => (await call('GET', '/__admin/instances')) as never,
    faults: async (list) => void (await call('POST', '/__admin/faults', list)),
    clearFaults: async () => void (await call('DELETE', '/__admin/faults')),
    log: async () => (await call('GET', '/__admin/log')) as LogEntry[],
    clearLog: async () => void (await call('DELETE', '/__admin/log')),
    reset: async () => void (await call('POST', '/__admin/reset')),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
