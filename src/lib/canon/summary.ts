import type { Summary } from '../cli/output.js';
import { CANON_ALGORITHM, type NumberMode } from './index.js';

/**
 * The summary line of a `canon` command: it always states the algorithm and the number mode the
 * result holds for, then the command's own counts.
 * @example canonSummary('canon verify', 0, 'exact', { files: 1, vectors: 40, passed: 40, failed: 0 })
 */
export function canonSummary(
  command: string,
  exitCode: number,
  numberMode: NumberMode,
  fields: Record<string, unknown>,
): Summary {
  return { command, exitCode, algorithm: CANON_ALGORITHM, numberMode, ...fields };
}
