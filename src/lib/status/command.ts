/**
 * `fcctl status`'s run function: the sides from the config (a side without a URL is "not
 * configured", never guessed), then one snapshot rendered, or the live view under `--watch`.
 */
import { configuredDatabases } from '../cli/section.js';
import { UsageError } from '../cli/exit.js';
import { statusMode, unjudgedLine } from './decide.js';
import { renderStatus } from './render.js';
import { readStatus, type StatusDeps, type StatusOptions } from './run.js';
import { watchStatus } from './watch.js';
import type { Ctx } from '../cli/context.js';
import type { StatusFormat } from './types.js';

/** PENDING apply commands count as due after this, as `apply-command scan`'s default `--pending-grace`. */
const PENDING_GRACE_SECONDS = 600;

function depsOf(ctx: Ctx): StatusDeps {
  return { ...configuredDatabases(ctx), now: ctx.now };
}

export async function runStatus(
  o: Omit<StatusOptions, 'pendingGraceSeconds'> & {
    readonly watch: boolean;
    readonly json: boolean;
    readonly format: StatusFormat;
  },
  ctx: Ctx,
): Promise<number> {
  const mode = statusMode({ watch: o.watch, json: o.json, format: o.format, interactive: ctx.io.interactive });
  if (!mode.ok) throw new UsageError(mode.message);
  const deps = depsOf(ctx);
  const options: StatusOptions = {
    failIf: o.failIf,
    exactCounts: o.exactCounts,
    pendingGraceSeconds: PENDING_GRACE_SECONDS,
  };
  if (mode.mode === 'watch') {
    await watchStatus(() => readStatus(options, deps), ctx.io, ctx.signal);
    return 0;
  }
  const doc = await readStatus(options, deps);
  renderStatus(doc, ctx.io, { json: ctx.output.json, format: o.format });
  // what a script must not miss, on stderr whatever the format: a condition not judged, the schema to fix
  const unjudged = unjudgedLine(doc.unjudged, doc);
  if (unjudged !== null) ctx.io.stderr.write(`fcctl: ${unjudged}\n`);
  for (const [name, q] of [['outbox', doc.outbox] as const, ['apply commands', doc.applyCommands] as const])
    if (q.status === 'ok') for (const w of q.warnings) ctx.io.stderr.write(`fcctl: ${name}: ${w}\n`);
  return doc.exitCode;
}
