import type { Command } from '@commander-js/extra-typings';
import { commandGroup, type Deps, type Resources } from '../context.js';
import { createReconcileDiffCommand } from './diff.js';
import { createReconcileHistoryCommand } from './history.js';
import { createReconcileReportCommand } from './report.js';
import { createReconcileRunCommand } from './run.js';

/** `fcctl reconcile …`: compare FC with the local projection (SPEC §7). */
export function createReconcileGroup(program: Command, deps: Deps, resources: Resources): Command {
  return commandGroup(
    program,
    'reconcile',
    'compare FC answers with the SH projection: repair plan, local-ahead rows, retire candidates',
    deps,
    resources,
    [
      createReconcileDiffCommand,
      createReconcileRunCommand,
      createReconcileHistoryCommand,
      createReconcileReportCommand,
    ],
  );
}
