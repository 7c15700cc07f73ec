import type { Command } from 'commander';
import type { Deps, Resources } from '../context.js';
import { createApplyCommandRequeueCommand } from './requeue.js';
import { createApplyCommandResolveCommand } from './resolve-unknown.js';
import { createApplyCommandScanCommand } from './scan.js';

/** `fcctl apply-command …`: flow apply commands on the SH side. Each verb adds one line here. */
export function createApplyCommandGroup(program: Command, deps: Deps, resources: Resources): Command {
  const group = program.command('apply-command').description('flow apply commands (flow_apply_command): settle unknown sends, report, requeue DEAD ones');
  createApplyCommandResolveCommand(group, deps, resources);
  createApplyCommandScanCommand(group, deps, resources);
  createApplyCommandRequeueCommand(group, deps, resources);
  return group;
}
