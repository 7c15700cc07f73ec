import type { Command } from '@commander-js/extra-typings';
import { commandGroup, type Deps, type Resources } from '../context.js';
import { createApplyCommandRequeueCommand } from './requeue.js';
import { createApplyCommandResolveCommand } from './resolve-unknown.js';
import { createApplyCommandScanCommand } from './scan.js';

/** `fcctl apply-command …`: flow apply commands on the SH side. Each verb adds one line here. */
export function createApplyCommandGroup(program: Command, deps: Deps, resources: Resources): Command {
  return commandGroup(
    program,
    'apply-command',
    'flow apply commands (flow_apply_command): settle unknown sends, report, requeue DEAD ones',
    deps,
    resources,
    [createApplyCommandResolveCommand, createApplyCommandScanCommand, createApplyCommandRequeueCommand],
  );
}
