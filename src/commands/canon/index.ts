import type { Command } from 'commander';
import type { Deps, Resources } from '../context.js';
import { createCanonCheckEnvelopeCommand } from './check-envelope.js';
import { createCanonHashCommand } from './hash.js';
import { createCanonVerifyCommand } from './verify.js';

/** `fcctl canon …`: fc.canon.v1 hashes, vector checks and envelope checks. No connection needed. */
export function createCanonGroup(program: Command, deps: Deps, resources: Resources): Command {
  const canon = program.command('canon').description('fc.canon.v1: content hashes, vector files, envelope checks');
  createCanonHashCommand(canon, deps, resources);
  createCanonVerifyCommand(canon, deps, resources);
  createCanonCheckEnvelopeCommand(canon, deps, resources);
  return canon;
}
