#!/usr/bin/env node
import { randomBytes } from 'node:crypto';
// Baseline for bench/apply-command.mjs: how many signed lookups per second this machine's Node can
// make against the stand-in at a given latency and concurrency, with nothing else (no database):
// through FlowClient (node:http with a keep-alive agent: what fcctl uses) and, for comparison, the
// same signed request through the global fetch (second round of each is the warm figure).
//
//   npm run build && node bench/flow-transport.mjs [--requests 2000] [--latency 20] [--concurrency 16]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pLimit from 'p-limit';
import { FlowClient, LOOKUP_PATH, parseLookupBody } from '../dist/lib/flow/client.js';
import { canonicalQuery, newNonce, signedHeaders } from '../dist/lib/flow/sign.js';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    latency: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '16' },
    json: { type: 'boolean', default: false },
  },
});
const measured = {};
// A throwaway secret for this run only, shared with the stand-in.
const BENCH_SECRET = randomBytes(16).toString('hex');
const n = Number(args.requests);
const concurrency = Number(args.concurrency);
const latency = Number(args.latency);
const server = fileURLToPath(new URL('../fixtures/flow-center/server.mjs', import.meta.url));
const child = spawn(process.execPath, [server, '--port', '0', '--latency-ms', String(latency)], {
  env: { PATH: process.env.PATH, FLOW_STANDIN_APPS: JSON.stringify({ 100021: BENCH_SECRET }) },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise((r) => child.stdout.once('data', (d) => r(String(d).split('\n')[0])));

async function measure(name, lookup) {
  const limit = pLimit(concurrency);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const results = await Promise.all(Array.from({ length: n }, (_, i) => limit(() => lookup(`b${i}`))));
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  const bad = results.filter((r) => r.kind !== 'not-found').length;
  measured[name] = Math.round(n / s);
  if (args.json) return;
  console.log(
    `${name.padEnd(10)} ${Math.round(n / s)} lookups/s (bound ${Math.round(concurrency / (latency / 1000))}), client CPU ${((cpu.user + cpu.system) / 1000 / n).toFixed(2)} ms per lookup${bad ? `, ${bad} errors` : ''}`,
  );
}

// FlowClient (node:http, keep-alive: what fcctl uses) against the same signed request through the
// global fetch, the transport fcctl used before (its body parsed the same way).
const client = new FlowClient({
  baseUrl: url,
  appKey: '100021',
  secret: BENCH_SECRET,
  timeoutMs: 10_000,
  maxSockets: concurrency,
});
const viaClient = (bizId) => client.lookup('t', bizId);
const viaFetch = async (bizId) => {
  const query = canonicalQuery([
    ['bizType', 't'],
    ['bizId', bizId],
  ]);
  const headers = signedHeaders({
    method: 'GET',
    path: LOOKUP_PATH,
    query,
    appKey: '100021',
    body: Buffer.alloc(0),
    secret: BENCH_SECRET,
    nowSeconds: Date.now() / 1000,
    nonce: newNonce(),
  });
  const res = await fetch(`${url}${LOOKUP_PATH}?${query}`, { headers: { accept: 'application/json', ...headers } });
  return parseLookupBody(new Uint8Array(await res.arrayBuffer()), { bizType: 't', bizId });
};

await measure('fetch', viaFetch);
await measure('node:http', viaClient);
await measure('fetch', viaFetch);
await measure('node:http', viaClient);
client.close();
child.kill();
if (args.json)
  console.log(
    JSON.stringify({
      bench: 'flow-transport',
      requests: n,
      latencyMs: latency,
      concurrency,
      boundPerSecond: Math.round(concurrency / (latency / 1000)),
      lookupsPerSecond: measured,
    }),
  );
