import type { Command } from '@commander-js/extra-typings';
import type { Deps, Resources } from '../context.js';
import { createPauseCommand } from './pause.js';
import { createResumeCommand } from './resume.js';

/** `fcctl pause …` and `fcctl resume …`: the fleet's pause switch (issue 19 §3). */
export function createPauseCommands(program: Command, deps: Deps, resources: Resources): void {
  createPauseCommand(program, deps, resources);
  createResumeCommand(program, deps, resources);
}
