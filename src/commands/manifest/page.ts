import type { Command } from 'commander';
import { ExitCode } from '../../lib/cli/exit.js';
import type { Column } from '../../lib/cli/table.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, readManifestPage } from '../../lib/manifest/page.js';
import type { ManifestSide } from '../../lib/manifest/row.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { addSchoolFormOptions, pageSizeOption, schoolFormOf, sideOption, uuidArg } from '../options.js';

export interface ManifestPageOptions {
  readonly side: ManifestSide;
  readonly schId: string;
  readonly formUuid: string;
  readonly cursor: string | null;
  readonly size: number;
}

// key → header; `retired` is an SH column only (the last, cut for FC)
const COLUMNS: readonly Column[] = Object.entries({
  answerUuid: 'answer',
  revision: 'rev',
  contentHash: 'hash',
  isDeleted: 'deleted',
  schId: 'school',
  createTime: 'created',
  retiredAt: 'retired',
}).map(([key, header]) => ({ key, header }));

/**
 * `fcctl manifest page` (seed 000 §8.1 `manifestPage`): one keyset page of a side, as
 * `{rows, nextCursor, completed}`. JSON mode prints it as one `page` line, then the summary.
 */
export async function runManifestPage(options: ManifestPageOptions, ctx: Ctx): Promise<number> {
  const db = options.side === 'sh' ? await ctx.shDb() : await ctx.fcDb();
  const page = await readManifestPage(db, options.side, {
    schId: options.schId,
    formUuid: options.formUuid,
    cursor: options.cursor,
    size: options.size,
  });
  if (ctx.output.json) {
    ctx.output.event('page', {
      side: options.side,
      schId: options.schId,
      formUuid: options.formUuid,
      rows: page.rows,
      nextCursor: page.nextCursor,
      completed: page.completed,
    });
  } else {
    ctx.output.rows(
      page.rows.map((r) => ({ ...r, contentHash: `${r.contentHash.slice(0, 12)}…` })),
      options.side === 'sh' ? COLUMNS : COLUMNS.slice(0, -1),
      'table',
      `${options.side.toUpperCase()} manifest, school ${options.schId}, form ${options.formUuid}${options.cursor ? `, after ${options.cursor}` : ''}`,
    );
  }
  ctx.output.summary({
    command: 'manifest page',
    exitCode: ExitCode.OK,
    side: options.side,
    rows: page.rows.length,
    completed: page.completed,
    nextCursor: page.nextCursor,
  });
  return ExitCode.OK;
}

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
