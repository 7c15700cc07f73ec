import type { Command } from 'commander';
import { CANON_ALGORITHM, type NumberMode } from '../../lib/canon/index.js';
import { canonSummary } from '../../lib/canon/summary.js';
import { readVectorFiles, vectorRow, verifyVectors } from '../../lib/canon/verify/run.js';
import type { Column, Row } from '../../lib/cli/table.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { numberModeOption } from '../options.js';

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

export function createCanonVerifyCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runCanonVerify,
): Command {
  return parent
    .command('verify')
    .description('check fc.canon.v1 vector files (canonical text, hash or expected error); exit 1 on any failure')
    .argument('<files...>', 'vector files of the shape of ../shared/canon-vectors/fc-canon-v1.json')
    .addOption(numberModeOption())
    .action(
      commandAction(
        deps,
        resources,
        (o, args) => ({ files: args[0] as unknown as string[], numberMode: o['numberMode'] as NumberMode }),
        runF,
      ),
    );
}
