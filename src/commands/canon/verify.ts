import type { Command } from '@commander-js/extra-typings';
import { commandAction, type Deps, type Resources } from '../context.js';
import { numberModeOption } from '../options.js';
import { runCanonVerify } from '../../lib/canon/verify/command.js';

export function createCanonVerifyCommand(parent: Command, deps: Deps, resources: Resources, runF = runCanonVerify) {
  return parent
    .command('verify')
    .description('check fc.canon.v1 vector files (canonical text, hash or expected error); exit 1 on any failure')
    .argument('<files...>', 'vector files of the shape of ../shared/canon-vectors/fc-canon-v1.json')
    .addOption(numberModeOption())
    .action(commandAction(deps, resources, ({ numberMode }, [files]) => ({ files, numberMode }), runF));
}
