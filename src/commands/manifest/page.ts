import type { Command } from '@commander-js/extra-typings';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { addSchoolFormOptions, pageSizeOption, schoolFormOf, sideOption, uuidArg } from '../options.js';
import { type ManifestPageOptions, runManifestPage } from '../../lib/manifest/page-command.js';

/** `fcctl manifest page` and its flags. */
function pageFlags(parent: Command) {
  const cmd = parent
    .command('page')
    .description(
      'one manifest page of a side: answers of a school and form by answer uuid, {rows, nextCursor, completed}',
    )
    .addOption(sideOption());
  return addSchoolFormOptions(cmd)
    .option('--cursor <answer-uuid>', "continue after this answer uuid (the previous page's nextCursor)", uuidArg)
    .addOption(pageSizeOption(`rows per page (at most ${MAX_PAGE_SIZE})`, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE));
}

export const createManifestPageCommand = verbCommand(pageFlags, pageOptionsOf, runManifestPage);

function pageOptionsOf(o: FlagsOf<typeof pageFlags>): ManifestPageOptions {
  return { side: o.side, ...schoolFormOf(o), cursor: o.cursor ?? null, size: o.size };
}
