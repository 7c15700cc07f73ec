import { CANON_ALGORITHM, type NumberMode } from '../index.js';
import { canonSummary } from '../summary.js';
import { readVectorFiles, vectorRow, verifyVectors } from './run.js';
import type { Column, Row } from '../../cli/table.js';
import type { Ctx } from '../../cli/context.js';

export interface CanonVerifyOptions {
  readonly files: readonly string[];
  readonly numberMode: NumberMode;
}

const COMMAND = 'canon verify';

const COLUMNS: readonly Column[] = [
  { key: 'result' },
  { key: 'file' },
  { key: 'vector' },
  { key: 'detail', flex: true },
];

/**
 * `fcctl canon verify FILE…`: runs every vector of each file (canonical text, hash, or expected
 * error) and reports pass/fail per vector and a summary stating the algorithm and number mode.
 * Every file is read and checked for shape before any vector runs: a malformed file is exit 2
 * with one line naming it. Exit 1 when any vector fails.
 */
export async function runCanonVerify(options: CanonVerifyOptions, ctx: Ctx): Promise<number> {
  const files = await readVectorFiles(options.files, ctx.io);
  const rows: Row[] = [];
  const { passed, failed, exitCode } = verifyVectors(files, options.numberMode, (file, vector, outcome) => {
    ctx.output.event('vector', {
      file: file.label,
      name: vector.name,
      result: outcome.kind,
      detail: outcome.detail,
      ...outcome.got,
    });
    rows.push(vectorRow(file.label, vector.name, outcome));
  });
  // JSON mode already has one `vector` event per vector; the table is for people.
  if (!ctx.output.json)
    ctx.output.rows(rows, COLUMNS, 'table', `${COMMAND}: ${CANON_ALGORITHM}, numbers ${options.numberMode}`);
  ctx.output.summary(
    canonSummary(COMMAND, exitCode, options.numberMode, {
      files: files.length,
      vectors: passed + failed,
      passed,
      failed,
    }),
  );
  return exitCode;
}
