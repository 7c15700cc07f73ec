import type { Command } from '@commander-js/extra-typings';
import type { Deps, Resources } from '../context.js';
import { createReconcileDiffCommand } from './diff.js';
import { createReconcileRunCommand } from './run.js';

/** `fcctl reconcile …`: compare FC with the local projection (SPEC §7). */
export function createReconcileGroup(program: Command, deps: Deps, resources: Resources): Command {
  const reconcile = program
    .command('reconcile')
    .description('compare FC answers with the SH projection: repair plan, local-ahead rows, retire candidates');
  createReconcileDiffCommand(reconcile, deps, resources);
  createReconcileRunCommand(reconcile, deps, resources);
  return reconcile;
}
