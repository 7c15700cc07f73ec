import type { Command } from 'commander';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import type { ManifestSide } from '../../lib/manifest/row.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { addSchoolFormOptions, pageSizeOption, schoolFormOf, sideOption, uuidArg } from '../options.js';
import { type ManifestPageOptions, runManifestPage } from '../../lib/manifest/page-command.js';

export function createManifestPageCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runManifestPage,
): Command {
  const cmd = parent
    .command('page')
    .description(
      'one manifest page of a side: answers of a school and form by answer uuid, {rows, nextCursor, completed}',
    )
    .addOption(sideOption());
  return addSchoolFormOptions(cmd)
    .option('--cursor <answer-uuid>', "continue after this answer uuid (the previous page's nextCursor)", uuidArg)
    .addOption(pageSizeOption(`rows per page (at most ${MAX_PAGE_SIZE})`, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE))
    .action(commandAction(deps, resources, pageOptionsOf, runF));
}

function pageOptionsOf(o: Record<string, unknown>): ManifestPageOptions {
  return {
    side: o['side'] as ManifestSide,
    ...schoolFormOf(o),
    cursor: (o['cursor'] as string | undefined) ?? null,
    size: o['size'] as number,
  };
}
