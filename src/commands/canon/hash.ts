import { type Command, Option } from '@commander-js/extra-typings';
import { DEFAULT_MAX_LINE_BYTES } from '../../lib/canon/hash/decide.js';
import type { CanonHashOptions } from '../../lib/canon/hash/run.js';
import { MAX_INPUT_BYTES } from '../../lib/canon/index.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { intArg, numberModeOption } from '../options.js';
import { runCanonHash } from '../../lib/canon/hash/command.js';

/** `fcctl canon hash` and its flags. */
function hashFlags(parent: Command) {
  return parent
    .command('hash')
    .description('fc.canon.v1 content hash of a JSON document (or of each line with --lines)')
    .argument('[file]', 'the JSON file; - or nothing reads standard input')
    .option(
      '--canonical',
      'print the canonical bytes instead of the hash (a newline is added only on a terminal)',
      false,
    )
    .option(
      '--lines',
      'JSON Lines: one output line per input line, the hash or error<TAB>CODE<TAB>message; exit 1 if any line failed',
      false,
    )
    .addOption(numberModeOption())
    .addOption(
      new Option(
        '--max-line-bytes <n>',
        'with --lines: a longer line is an error line (LINE_TOO_LONG), never held in memory',
      )
        .argParser(intArg(1, MAX_INPUT_BYTES))
        .default(DEFAULT_MAX_LINE_BYTES, '64 MiB'),
    );
}

export const createCanonHashCommand = verbCommand(hashFlags, hashOptionsOf, runCanonHash);

function hashOptionsOf(o: FlagsOf<typeof hashFlags>, [file]: [string | undefined]): CanonHashOptions {
  const { canonical, lines, numberMode, maxLineBytes } = o;
  return { file, canonical, lines, numberMode, maxLineBytes };
}
