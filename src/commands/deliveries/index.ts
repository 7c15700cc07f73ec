import type { Command } from '@commander-js/extra-typings';
import { commandGroup, type Deps, type Resources } from '../context.js';
import { createDeliveriesFailedCommand } from './failed.js';
import { createDeliveriesReplayCommand } from './replay.js';
import { createDeliveriesScanCommand } from './scan.js';
import { createDeliveriesSendCommand } from './send.js';

/** `fcctl deliveries …`: the v2 outbox. Each verb adds one line here. */
export function createDeliveriesGroup(program: Command, deps: Deps, resources: Resources): Command {
  return commandGroup(program, 'deliveries', 'the v2 answer-delivery outbox: report and relay', deps, resources, [
    createDeliveriesScanCommand,
    createDeliveriesSendCommand,
    createDeliveriesReplayCommand,
    createDeliveriesFailedCommand,
  ]);
}
