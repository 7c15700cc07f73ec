#!/usr/bin/env node
import { randomBytes } from 'node:crypto';
// Baseline for bench/apply-command.mjs: how many signed lookups per second this machine's Node can
// make against the stand-in at a given latency and concurrency, with nothing else (no database):
// through the global fetch (what fcctl uses) and, for comparison, node:http with a keep-alive agent.
//
//   npm run build && node bench/flow-transport.mjs [--requests 2000] [--latency 20] [--concurrency 16]
import { spawn } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pLimit from 'p-limit';
import { FlowClient } from '../dist/lib/flow/client.js';

const { values: args } = parseArgs({ options: { requests: { type: 'string', default: '2000' }, latency: { type: 'string', default: '20' }, concurrency: { type: 'string', default: '16' }, json: { type: 'boolean', default: false } } });
const measured = {};
// A throwaway secret for this run only, shared with the stand-in.
const BENCH_SECRET = randomBytes(16).toString('hex');
const n = Number(args.requests);
const concurrency = Number(args.concurrency);
const latency = Number(args.latency);
const server = fileURLToPath(new URL('../fixtures/flow-center/server.mjs', import.meta.url));
const child = spawn(process.execPath, [server, '--port', '0', '--latency-ms', String(latency)], { env: { PATH: process.env.PATH, FLOW_STANDIN_APPS: JSON.stringify({ 100021: BENCH_SECRET }) }, stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((r) => child.stdout.once('data', (d) => r(String(d).split('\n')[0])));

async function measure(name, fetchImpl) {
  const client = new FlowClient({ baseUrl: url, appKey: '100021', secret: BENCH_SECRET, timeoutMs: 10_000, ...(fetchImpl ? { fetch: fetchImpl } : {}) });
  const limit = pLimit(concurrency);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const results = await Promise.all(Array.from({ length: n }, (_, i) => limit(() => client.lookup('t', `b${i}`))));
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  const bad = results.filter((r) => r.kind !== 'not-found').length;
  measured[name] = Math.round(n / s);
  if (args.json) return;
  console.log(
    `${name.padEnd(10)} ${Math.round(n / s)} lookups/s (bound ${Math.round(concurrency / (latency / 1000))}), client CPU ${((cpu.user + cpu.system) / 1000 / n).toFixed(2)} ms per lookup${bad ? `, ${bad} errors` : ''}`,
  );
}

// A minimal fetch over node:http, enough for FlowClient (GET/POST, headers, body, signal, status, body bytes).
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const httpFetch = (u, init) =>
  new Promise((resolve, reject) => {
    const req = http.request(u, { method: init.method, headers: init.headers, agent, signal: init.signal }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(new Response(Buffer.concat(chunks), { status: res.statusCode, headers: res.headers })));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });

await measure('fetch', undefined);
await measure('node:http', httpFetch);
await measure('fetch', undefined);
child.kill();
if (args.json) console.log(JSON.stringify({ bench: 'flow-transport', requests: n, latencyMs: latency, concurrency, boundPerSecond: Math.round(concurrency / (latency / 1000)), lookupsPerSecond: measured }));
