import type { Command } from '@commander-js/extra-typings';
import { commandGroup, type Deps, type Resources } from '../context.js';
import { createCanonCheckEnvelopeCommand } from './check-envelope.js';
import { createCanonHashCommand } from './hash.js';
import { createCanonVerifyCommand } from './verify.js';

/** `fcctl canon …`: fc.canon.v1 hashes, vector checks and envelope checks. No connection needed. */
export function createCanonGroup(program: Command, deps: Deps, resources: Resources): Command {
  return commandGroup(program, 'canon', 'fc.canon.v1: content hashes, vector files, envelope checks', deps, resources, [
    createCanonHashCommand,
    createCanonVerifyCommand,
    createCanonCheckEnvelopeCommand,
  ]);
}
