import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test as base } from 'vitest';
import { runCli } from './cli.js';
import { freshDatabases, type TestDatabases } from './db.js';
import { type FlowCenter, startFlowCenter } from './flow-center.js';
import { testIo, type TestIo } from './io.js';

export interface ServicesOptions {
  /** names the file's databases (`fcctl_<prefix>_<pid>_<tag>_fc`), to find them in a server's list */
  readonly prefix: string;
  /** `fcctl db init --side …` once the databases exist; none leaves them empty */
  readonly init?: 'fc' | 'sh' | 'all';
  /** the flow-center stand-in's app keys and secrets (fixtures/flow-center/server.mjs) */
  readonly flowApps?: Record<string, string>;
  readonly flowLatencyMs?: number;
}

/**
 * The services a test file runs against, as vitest fixtures (`test.extend`): a fixture is set up
 * the first time a test or a `test.beforeAll` of the file asks for it, once per file, and cleaned
 * up after the file's last test. Replaces the preamble (fresh databases → `db init` → temp dir →
 * flow stand-in → drop) each file repeated.
 *
 * @example
 * const test = servicesTest({ prefix: 'proj', init: 'all' });
 * test('…', async ({ dbs, tmp }) => { … });
 */
export function servicesTest(options: ServicesOptions) {
  return base
    .extend('dbs', { scope: 'file' }, async ({}, { onCleanup }): Promise<TestDatabases> => {
      const dbs = await freshDatabases(options.prefix);
      onCleanup(() => dbs.drop());
      if (options.init) {
        const r = await runCli(['db', 'init', '--side', options.init], { env: dbs.env() });
        if (r.code !== 0) throw new Error(`db init --side ${options.init} failed (${r.code}): ${r.stderr}`);
      }
      return dbs;
    })
    .extend('tmp', { scope: 'file' }, async ({}, { onCleanup }): Promise<string> => {
      const dir = mkdtempSync(join(tmpdir(), `fcctl-${options.prefix}-`));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      return dir;
    })
    .extend('flowCenter', { scope: 'file' }, async ({}, { onCleanup }): Promise<FlowCenter> => {
      const fc = await startFlowCenter({
        apps: options.flowApps ?? {},
        ...(options.flowLatencyMs !== undefined ? { latencyMs: options.flowLatencyMs } : {}),
      });
      onCleanup(() => fc.stop());
      return fc;
    })
    .extend('io', async (): Promise<TestIo> => testIo());
}
