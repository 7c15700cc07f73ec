import type { Command } from 'commander';
import type { ListFormat } from '../../lib/cli/output.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { failIfDeadOption, listFormatOption, listLimitOption, metricsFileOption } from '../options.js';
import { runDeliveriesScan } from '../../lib/deliveries/scan/command.js';

export function createDeliveriesScanCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runDeliveriesScan,
): Command {
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
        (o) => ({
          limit: o['limit'] as number,
          format: o['format'] as ListFormat,
          metricsFile: o['metricsFile'] as string | undefined,
          failIfDead: o['failIfDead'] as boolean,
        }),
        runF,
      ),
    );
}
