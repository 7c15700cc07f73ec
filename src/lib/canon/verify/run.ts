import { isUtf8 } from 'node:buffer';
import { basename } from 'node:path';
import { exitCodeForCounts, UsageError } from '../../cli/exit.js';
import { readInput } from '../../files/input.js';
import type { Io } from '../../cli/io.js';
import { MAX_INPUT_BYTES, type NumberMode } from '../index.js';
import {
  type CanonVector,
  type CanonVectorFile,
  checkVector,
  parseVectorFile,
  VectorFileError,
  type VectorOutcome,
} from '../vectors.js';

/**
 * Every file read and checked for shape before any vector runs: a malformed file is bad input
 * (exit 2) with one line naming it.
 */
export async function readVectorFiles(paths: readonly string[], io: Io): Promise<CanonVectorFile[]> {
  const files: CanonVectorFile[] = [];
  for (const path of paths) {
    const bytes = await readInput(path, io, MAX_INPUT_BYTES);
    if (!isUtf8(bytes)) throw new UsageError(`not a vector file: ${path}: not UTF-8`);
    try {
      files.push(parseVectorFile(bytes.toString('utf8'), path));
    } catch (e) {
      if (e instanceof VectorFileError) throw new UsageError(`not a vector file: ${e.message}`);
      throw e;
    }
  }
  return files;
}

/** How a verify run went: passed and failed vectors, and the exit code (1 when any failed). */
export interface VerifyTally {
  readonly passed: number;
  readonly failed: number;
  readonly exitCode: number;
}

/** Runs every vector of every file, in order; `onVector` hears each outcome. */
export function verifyVectors(
  files: readonly CanonVectorFile[],
  numberMode: NumberMode,
  onVector: (file: CanonVectorFile, vector: CanonVector, outcome: VectorOutcome) => void,
): VerifyTally {
  let passed = 0;
  let failed = 0;
  for (const file of files) {
    for (const vector of file.vectors) {
      const outcome = checkVector(vector, numberMode);
      if (outcome.kind === 'pass') passed++;
      else failed++;
      onVector(file, vector, outcome);
    }
  }
  return { passed, failed, exitCode: exitCodeForCounts(failed) };
}

/**
 * The terminal's row of one vector: a pass shows a short hash so the table fits; a failure shows everything.
 * @example vectorRow('v/fc.json', 'int', { kind: 'pass', detail: `hash ${'a'.repeat(64)}` }).detail // 'hash aaaaaaaaaaaa…'
 */
export function vectorRow(
  fileLabel: string,
  vectorName: string,
  outcome: Pick<VectorOutcome, 'kind' | 'detail'>,
): { result: string; file: string; vector: string; detail: string } {
  const detail =
    outcome.kind === 'pass' ? outcome.detail.replace(/^(hash [0-9a-f]{12})[0-9a-f]{52}$/, '$1…') : outcome.detail;
  return { result: outcome.kind === 'pass' ? 'pass' : 'FAIL', file: basename(fileLabel), vector: vectorName, detail };
}
