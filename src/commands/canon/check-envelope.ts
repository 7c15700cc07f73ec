import type { Command } from '@commander-js/extra-typings';
import { commandAction, type Deps, type Resources } from '../context.js';
import { type CanonCheckEnvelopeOptions, runCanonCheckEnvelope } from '../../lib/canon/check-envelope/command.js';

export function createCanonCheckEnvelopeCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runCanonCheckEnvelope,
) {
  return parent
    .command('check-envelope')
    .description(
      'check a v2 envelope: closed member set, types, snapshot members and hash, routing key; exit 1 on any problem',
    )
    .argument('[file]', 'the envelope body; - or nothing reads standard input')
    .action(commandAction(deps, resources, (_o, args): CanonCheckEnvelopeOptions => ({ file: args[0] }), runF));
}
