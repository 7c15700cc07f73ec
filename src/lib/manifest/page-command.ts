import { ExitCode } from '../cli/exit.js';
import type { Column } from '../cli/table.js';
import { readManifestPage } from './page.js';
import type { ManifestSide } from './row.js';
import type { Ctx } from '../cli/context.js';

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
