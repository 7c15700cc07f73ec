/**
 * `db init` and `db check` over one or both sides: the runners, with the databases opened lazily
 * by the caller. The summaries are {@link summarizeInit}, pure.
 */
import { EnvironmentError, SafetyError } from '../cli/exit.js';
import type { Db } from './connect.js';
import {
  checkSchema,
  devMarkRefusal,
  initSchema,
  type InitResult,
  newerSchemaProblem,
  type SchemaProblem,
  type Side,
} from './schema.js';

/** The database of one side, opened on first use. */
export type SideDb = (side: Side) => Promise<Db>;

/** `--side all` is both sides, FC first. */
export function sidesOf(side: string): Side[] {
  return side === 'all' ? ['fc', 'sh'] : [side as Side];
}

/**
 * Creates the reference schema on each side, idempotently; with `dev`, marks them development
 * databases. Every side is checked before any is written: a refusal (exit 4) changes nothing anywhere.
 */
export async function initSides(
  options: { sides: readonly Side[]; dev: boolean; now: string },
  dbOf: SideDb,
  onSide: (result: InitResult) => void = () => undefined,
): Promise<InitResult[]> {
  // A database a newer fcctl set up is never taken back to this version's schema number.
  for (const side of options.sides) {
    const newer = await newerSchemaProblem(await dbOf(side), side);
    if (newer !== null) throw new EnvironmentError(`${newer}; nothing was changed`);
  }
  if (options.dev) {
    const refusals: string[] = [];
    for (const side of options.sides) {
      const refusal = await devMarkRefusal(await dbOf(side), side);
      if (refusal !== null) refusals.push(refusal);
    }
    if (refusals.length > 0) {
      throw new SafetyError(
        `refusing to mark a development database: ${refusals.join('; ')}; --dev is only for a new, empty database (dev seed --replace deletes what one holds)`,
      );
    }
  }
  const results: InitResult[] = [];
  for (const side of options.sides) {
    const result = await initSchema(await dbOf(side), side, { dev: options.dev, now: options.now });
    results.push(result);
    onSide(result);
  }
  return results;
}

/**
 * The summary counts of an init: tables created, and whether anything changed.
 * @example summarizeInit([{ side: 'fc', created: ['answer'], existing: [], indexesAdded: [], columnsAdded: [], versionRecorded: true, markedDev: false }]) // { created: 1, changed: true }
 */
export function summarizeInit(results: readonly InitResult[]): { created: number; changed: boolean } {
  const created = results.reduce((n, r) => n + r.created.length, 0);
  return {
    created,
    changed:
      created > 0 ||
      results.some((r) => r.indexesAdded.length > 0 || r.columnsAdded.length > 0 || r.versionRecorded || r.markedDev),
  };
}

/** Every missing table, column or index of each side, with its side; `onProblem` hears each as it is found. */
export async function checkSides(
  sides: readonly Side[],
  dbOf: SideDb,
  onProblem: (side: Side, problem: SchemaProblem) => void = () => undefined,
): Promise<Array<{ side: Side; problem: SchemaProblem }>> {
  const found: Array<{ side: Side; problem: SchemaProblem }> = [];
  for (const side of sides) {
    for (const problem of await checkSchema(await dbOf(side), side)) {
      found.push({ side, problem });
      onProblem(side, problem);
    }
  }
  return found;
}
