import { listPauses, setPause } from './store.js';
import { ExitCode, UsageError } from '../cli/exit.js';
import type { ListFormat } from '../cli/output.js';
import type { Column } from '../cli/table.js';
import { listRow, parseUntil, type PauseSide } from './decide.js';
import { whoAmI } from './run.js';
import type { Ctx } from '../cli/context.js';

export type PauseOptions =
  | {
      readonly kind: 'pause';
      readonly command: string;
      readonly side: PauseSide;
      readonly reason: string;
      readonly until?: string;
    }
  | { readonly kind: 'list'; readonly format: ListFormat };

const COLUMNS: readonly Column[] = [
  { key: 'command' },
  { key: 'database' },
  { key: 'state' },
  { key: 'reason', flex: true },
  { key: 'pausedBy', header: 'paused by' },
  { key: 'pausedAt', header: 'paused at (UTC)' },
  { key: 'until', header: 'until (UTC)' },
];

/**
 * `fcctl pause COMMAND --reason TEXT [--until TIME]` (issue 19 §3): sets the fleet's pause switch of
 * a cron command in the database it writes; every run of it stops cleanly at its next check. A
 * safety brake, not a repair: it writes at once, no --execute (README). `--list` shows the switches.
 */
export async function runPause(options: PauseOptions, ctx: Ctx): Promise<number> {
  if (options.kind === 'list') return listing(options.format, ctx);
  const until =
    options.until === undefined
      ? ({ ok: true, until: { kind: 'never' } } as const)
      : parseUntil(options.until, ctx.clock());
  if (!until.ok) throw new UsageError(until.message);
  const db = options.side === 'fc' ? await ctx.fcDb() : await ctx.shDb();
  const { previous, pause } = await setPause(db, options.side, {
    command: options.command,
    reason: options.reason,
    until: until.until,
    ...whoAmI(),
  });
  ctx.output.summary({
    command: 'pause',
    exitCode: ExitCode.OK,
    paused: options.command,
    database: options.side.toUpperCase(),
    reason: pause.reason,
    pausedBy: pause.pausedBy,
    pausedAt: pause.pausedAt,
    until: pause.until,
    replaced:
      previous === null
        ? null
        : { reason: previous.reason, pausedBy: previous.pausedBy, pausedAt: previous.pausedAt, until: previous.until },
  });
  return ExitCode.OK;
}

/** The switches of every database configured (FC, SH), expired ones marked. */
async function listing(format: ListFormat, ctx: Ctx): Promise<number> {
  const sides = (['fc', 'sh'] as const).filter(
    (s) => ctx.config[s === 'fc' ? 'fcDatabaseUrl' : 'shDatabaseUrl'].value !== undefined,
  );
  if (sides.length === 0)
    throw new UsageError(
      'pause --list reads the FC and SH databases: set FCCTL_FC_DATABASE_URL or FCCTL_SH_DATABASE_URL (or both)',
    );
  const rows: Array<Record<string, unknown>> = [];
  for (const side of sides)
    for (const r of await listPauses(side === 'fc' ? await ctx.fcDb() : await ctx.shDb())) rows.push(listRow(r, side));
  if (format === 'csv') {
    ctx.output.rows(rows, COLUMNS, 'csv');
    return ExitCode.OK;
  }
  const out = format === 'json' ? ctx.output.asJson() : ctx.output;
  out.rows(rows, COLUMNS, out.json ? 'json' : 'table', 'paused commands');
  const paused = rows.filter((r) => r['state'] === 'paused').length;
  out.summary({
    command: 'pause --list',
    exitCode: ExitCode.OK,
    databases: sides.map((s) => s.toUpperCase()),
    paused,
    expired: rows.length - paused,
  });
  return ExitCode.OK;
}
