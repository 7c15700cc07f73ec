import type { Command } from 'commander';
import type { ListFormat } from '../../lib/cli/output.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import {
  failIfDeadOption,
  listFormatOption,
  listLimitOption,
  metricsFileOption,
  pendingGraceOption,
} from '../options.js';
import { type ApplyCommandScanOptions, runApplyCommandScan } from '../../lib/apply-command/scan/command.js';

export function createApplyCommandScanCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runApplyCommandScan,
): Command {
  return parent
    .command('scan')
    .description('read-only report: rows by state, due, oldest UNKNOWN, stuck claims, DEAD rows with reasons')
    .addOption(listLimitOption('newest DEAD rows to list'))
    .addOption(listFormatOption())
    .addOption(pendingGraceOption('PENDING rows count as due after this (as resolve-unknown)'))
    .addOption(metricsFileOption())
    .addOption(failIfDeadOption())
    .action(commandAction(deps, resources, scanOptionsOf, runF));
}

function scanOptionsOf(o: Record<string, unknown>): ApplyCommandScanOptions {
  return {
    limit: o['limit'] as number,
    format: o['format'] as ListFormat,
    pendingGraceSeconds: o['pendingGrace'] as number,
    metricsFile: o['metricsFile'] as string | undefined,
    failIfDead: o['failIfDead'] as boolean,
  };
}
