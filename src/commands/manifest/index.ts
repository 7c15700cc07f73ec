import type { Command } from '@commander-js/extra-typings';
import { commandGroup, type Deps, type Resources } from '../context.js';
import { createManifestPageCommand } from './page.js';
import { createManifestScanCommand } from './scan.js';

/** `fcctl manifest …`: answer manifests of one school and form, per side (SPEC §7). */
export function createManifestGroup(program: Command, deps: Deps, resources: Resources): Command {
  return commandGroup(
    program,
    'manifest',
    'answer manifests (answer uuid, revision, hash, deleted, school, create time) of FC or SH',
    deps,
    resources,
    [createManifestPageCommand, createManifestScanCommand],
  );
}
