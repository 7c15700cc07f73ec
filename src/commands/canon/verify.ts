import { isUtf8 } from 'node:buffer';
import { basename } from 'node:path';
import { type Command, Option } from 'commander';
import { CANON_ALGORITHM, MAX_INPUT_BYTES, type NumberMode } from '../../lib/canon/index.js';
import { type CanonVectorFile, checkVector, parseVectorFile, VectorFileError } from '../../lib/canon/vectors.js';
import { exitCodeForCounts, UsageError } from '../../lib/cli/exit.js';
import { readInput } from '../../lib/cli/input.js';
import type { Column, Row } from '../../lib/cli/table.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';

export interface CanonVerifyOptions {
  readonly files: readonly string[];
  readonly numberMode: NumberMode;
}

const COMMAND = 'canon verify';

const COLUMNS: readonly Column[] = [{ key: 'result' }, { key: 'file' }, { key: 'vector' }, { key: 'detail' }];

/**
 * `fcctl canon verify FILE…`: runs every vector of each file (canonical text, hash, or expected
 * error) and reports pass/fail per vector and a summary stating the algorithm and number mode.
 * Every file is read and checked for shape before any vector runs: a malformed file is exit 2
 * with one line naming it. Exit 1 when any vector fails.
 */
export async function runCanonVerify(options: CanonVerifyOptions, ctx: Ctx): Promise<number> {
  const files: CanonVectorFile[] = [];
  for (const path of options.files) {
    const bytes = await readInput(path, ctx.io, MAX_INPUT_BYTES);
    if (!isUtf8(bytes)) throw new UsageError(`not a vector file: ${path}: not UTF-8`);
    try {
      files.push(parseVectorFile(bytes.toString('utf8'), path));
    } catch (e) {
      if (e instanceof VectorFileError) throw new UsageError(`not a vector file: ${e.message}`);
      throw e;
    }
  }

  const rows: Row[] = [];
  let passed = 0;
  let failed = 0;
  for (const file of files) {
    for (const vector of file.vectors) {
      const outcome = checkVector(vector, options.numberMode);
      if (outcome.kind === 'pass') passed++;
      else failed++;
      ctx.output.event('vector', { file: file.label, name: vector.name, result: outcome.kind, detail: outcome.detail, ...outcome.got });
      // On a terminal a pass shows a short hash so the table fits; a failure shows everything.
      const detail = outcome.kind === 'pass' ? outcome.detail.replace(/^(hash [0-9a-f]{12})[0-9a-f]{52}$/, '$1…') : outcome.detail;
      rows.push({ result: outcome.kind === 'pass' ? 'pass' : 'FAIL', file: basename(file.label), vector: vector.name, detail });
    }
  }
  const exitCode = exitCodeForCounts(failed);
  // JSON mode already has one `vector` event per vector; the table is for people.
  if (!ctx.output.json) ctx.output.rows(rows, COLUMNS, 'table', `${COMMAND}: ${CANON_ALGORITHM}, numbers ${options.numberMode}`);
  ctx.output.summary({
    command: COMMAND,
    exitCode,
    algorithm: CANON_ALGORITHM,
    numberMode: options.numberMode,
    files: files.length,
    vectors: passed + failed,
    passed,
    failed,
  });
  return exitCode;
}

export function createCanonVerifyCommand(parent: Command, deps: Deps, resources: Resources, runF = runCanonVerify): Command {
  return parent
    .command('verify')
    .description('check fc.canon.v1 vector files (canonical text, hash or expected error); exit 1 on any failure')
    .argument('<files...>', 'vector files of the shape of ../shared/canon-vectors/fc-canon-v1.json')
    .addOption(new Option('--number-mode <mode>', 'exact: numbers as exact decimals; double: fractions read as doubles first').choices(['exact', 'double']).default('exact'))
    .action(async (files: string[], opts: { numberMode: NumberMode }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF({ files, numberMode: opts.numberMode }, ctx);
    });
}
