import type { Command } from '@commander-js/extra-typings';
import { verbCommand, type FlagsOf } from '../context.js';
import {
  failIfDeadOption,
  listFormatOption,
  listLimitOption,
  metricsFileOption,
  pendingGraceOption,
} from '../options.js';
import { type ApplyCommandScanOptions, runApplyCommandScan } from '../../lib/apply-command/scan/command.js';

/** `fcctl apply-command scan` and its flags. */
function scanFlags(parent: Command) {
  return parent
    .command('scan')
    .description('read-only report: rows by state, due, oldest UNKNOWN, stuck claims, DEAD rows with reasons')
    .addOption(listLimitOption('newest DEAD rows to list'))
    .addOption(listFormatOption())
    .addOption(pendingGraceOption('PENDING rows count as due after this (as resolve-unknown)'))
    .addOption(metricsFileOption())
    .addOption(failIfDeadOption());
}

export const createApplyCommandScanCommand = verbCommand(scanFlags, scanOptionsOf, runApplyCommandScan);

function scanOptionsOf(o: FlagsOf<typeof scanFlags>): ApplyCommandScanOptions {
  const { limit, format, metricsFile, failIfDead } = o;
  return { limit, format, pendingGraceSeconds: o.pendingGrace, metricsFile, failIfDead };
}
