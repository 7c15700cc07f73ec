import { expect } from 'vitest';
import { runCli, type CliResult } from './cli.js';
import { checksumTables, FC_TABLES } from './checksum.js';
import type { TestDatabases } from './db.js';
import { recordTotals } from './faults.js';

/** The SH tables fcctl reads and writes (see sql/sh.sql). */
export const SH_TABLES_FOR_CHECKSUM = [
  'fcctl_schema_version',
  'fc_answer_projection',
  'service_apply',
  'flow_apply_command',
  'fc_reconcile_audit',
  'fcctl_requeue_operation',
] as const;

export interface RefusalCase {
  /** what is wrong, as the test name says it */
  readonly name: string;
  readonly argv: readonly string[];
  /** 2 = bad input (default), 4 = safety refusal, 3 = an output that cannot be written (checked before any work) */
  readonly code?: 2 | 3 | 4;
  /** the one line must match this (names the problem) */
  readonly says?: RegExp;
  readonly env?: Record<string, string | undefined>;
  readonly stdin?: string;
}

/**
 * Runs one bad input and asserts the whole contract of a refusal: the expected exit code, exactly
 * one line on stderr naming the problem (no stack trace), nothing on stdout that looks like
 * results, and every FC and SH table's checksum unchanged. Counts it toward the suite's totals.
 */
export async function expectRefused(
  dbs: TestDatabases,
  c: RefusalCase,
  shTables: readonly string[] = SH_TABLES_FOR_CHECKSUM,
): Promise<CliResult> {
  const before = [
    await checksumTables(dbs.admin, dbs.fcName, FC_TABLES),
    await checksumTables(dbs.admin, dbs.shName, shTables),
  ];
  const r = await runCli(['--json', ...c.argv], { env: c.env ?? dbs.env(), stdin: c.stdin });
  const after = [
    await checksumTables(dbs.admin, dbs.fcName, FC_TABLES),
    await checksumTables(dbs.admin, dbs.shName, shTables),
  ];
  const lines = r.stderr.trim().split('\n');
  const refused =
    r.code === (c.code ?? 2) &&
    lines.length === 1 &&
    !/\n\s+at |Error:.*\n/.test(r.stderr) &&
    before.join() === after.join();
  recordTotals(`bad-input: ${c.name}`, {
    badInputsTried: 1,
    badInputsRefused: refused ? 1 : 0,
    badInputsMishandled: refused ? 0 : 1,
  });
  expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: c.code ?? 2 });
  expect(lines, r.stderr).toHaveLength(1);
  expect(r.stderr).toMatch(/^fcctl: /);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  if (c.says) expect(r.stderr).toMatch(c.says);
  expect(after).toEqual(before);
  return r;
}
