import type { Command } from 'commander';
import { ExitCode } from '../../lib/cli/exit.js';
import type { Column } from '../../lib/cli/table.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, readManifestPage } from '../../lib/manifest/page.js';
import type { ManifestSide } from '../../lib/manifest/row.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { intArg, schoolArg, sideArg, uuidArg } from '../options.js';

export interface ManifestPageOptions {
  readonly side: ManifestSide;
  readonly schId: string;
  readonly formUuid: string;
  readonly cursor: string | null;
  readonly size: number;
}

const COLUMNS: readonly Column[] = [
  { key: 'answerUuid', header: 'answer' },
  { key: 'revision', header: 'rev' },
  { key: 'contentHash', header: 'hash' },
  { key: 'isDeleted', header: 'deleted' },
  { key: 'schId', header: 'school' },
  { key: 'createTime', header: 'created' },
  { key: 'retiredAt', header: 'retired' },
];

/**
 * `fcctl manifest page` (seed 000 §8.1 `manifestPage`): one keyset page of a side, as
 * `{rows, nextCursor, completed}`. JSON mode prints it as one `page` line, then the summary.
 */
export async function runManifestPage(options: ManifestPageOptions, ctx: Ctx): Promise<number> {
  const db = options.side === 'sh' ? await ctx.shDb() : await ctx.fcDb();
  const page = await readManifestPage(db, options.side, { schId: options.schId, formUuid: options.formUuid, cursor: options.cursor, size: options.size });
  if (ctx.output.json) {
    ctx.output.event('page', { side: options.side, schId: options.schId, formUuid: options.formUuid, rows: page.rows, nextCursor: page.nextCursor, completed: page.completed });
  } else {
    ctx.output.rows(
      page.rows.map((r) => ({ ...r, contentHash: `${r.contentHash.slice(0, 12)}…` })),
      options.side === 'sh' ? COLUMNS : COLUMNS.slice(0, -1),
      'table',
      `${options.side.toUpperCase()} manifest, school ${options.schId}, form ${options.formUuid}${options.cursor ? `, after ${options.cursor}` : ''}`,
    );
  }
  ctx.output.summary({ command: 'manifest page', exitCode: ExitCode.OK, side: options.side, rows: page.rows.length, completed: page.completed, nextCursor: page.nextCursor });
  return ExitCode.OK;
}

export function createManifestPageCommand(parent: Command, deps: Deps, resources: Resources, runF = runManifestPage): Command {
  return parent
    .command('page')
    .description('one manifest page of a side: answers of a school and form by answer uuid, {rows, nextCursor, completed}')
    .requiredOption('--side <side>', 'sh (fc_answer_projection) or fc (answer, hashed with fc.canon.v1)', sideArg)
    .requiredOption('--school <id>', 'school id', schoolArg)
    .requiredOption('--form <uuid>', 'form uuid', uuidArg)
    .option('--cursor <answer-uuid>', 'continue after this answer uuid (the previous page\'s nextCursor)', uuidArg)
    .option('--size <n>', `rows per page (at most ${MAX_PAGE_SIZE})`, intArg(1, MAX_PAGE_SIZE), DEFAULT_PAGE_SIZE)
    .action(async (opts: { side: ManifestSide; school: string; form: string; cursor?: string; size: number }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF({ side: opts.side, schId: opts.school, formUuid: opts.form, cursor: opts.cursor ?? null, size: opts.size }, ctx);
    });
}
