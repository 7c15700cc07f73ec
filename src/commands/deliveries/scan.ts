import type { Command } from '@commander-js/extra-typings';
import { commandAction, type Deps, type Resources } from '../context.js';
import { failIfDeadOption, listFormatOption, listLimitOption, metricsFileOption } from '../options.js';
import { runDeliveriesScan } from '../../lib/deliveries/scan/command.js';

export function createDeliveriesScanCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runDeliveriesScan,
) {
  return parent
    .command('scan')
    .description('read-only outbox report: states, due, held, oldest pending, stuck claims, FAILED/DEAD reasons')
    .addOption(listLimitOption('newest FAILED/DEAD rows to list'))
    .addOption(listFormatOption())
    .addOption(metricsFileOption())
    .addOption(failIfDeadOption())
    .action(
      commandAction(
        deps,
        resources,
        ({ limit, format, metricsFile, failIfDead }) => ({ limit, format, metricsFile, failIfDead }),
        runF,
      ),
    );
}
