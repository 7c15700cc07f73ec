/**
 * `fcctl explain`'s run functions: the sides from the config (a side without a URL is "not
 * configured", never guessed), one library call (run.ts), then the render.
 */
import { configuredDatabases, sectionReader } from '../cli/section.js';
import { ExitCode, FcctlError } from '../cli/exit.js';
import {
  type ExplainAnswerOptions,
  type ExplainDeps,
  explainAnswerAsPasted,
  explainCommand,
  explainEvent,
} from './run.js';
import { type ExplainOutput, renderExplain } from './render.js';
import type { Ctx } from '../cli/context.js';

/** A flow lookup waits at most this long: explain is for a person at a prompt. */
const FLOW_TIMEOUT_MS = 5000;

function depsOf(ctx: Ctx): ExplainDeps {
  return {
    ...configuredDatabases(ctx),
    flow: ctx.config.flowUrl.value ? () => ctx.flow({ timeoutMs: FLOW_TIMEOUT_MS }) : null,
    // one reader for the command: a side that did not answer in 10 s is not waited for again
    section: sectionReader(),
  };
}

/** Prints the document; found nowhere (and nothing unreachable) is one line and exit 1. */
function finish(command: string, doc: ExplainOutput, ctx: Ctx, what: string, hint = ''): number {
  if (doc.exitCode === ExitCode.ITEMS_FAILED)
    throw new FcctlError(`${what}: not found ${NOT_FOUND_WHERE[command]}${hint}`, ExitCode.ITEMS_FAILED);
  renderExplain({ command, ...doc }, ctx.io, ctx.output.json);
  return doc.exitCode;
}

const NOT_FOUND_WHERE: Record<string, string> = {
  'explain answer': 'at FC, in the outbox or at SH',
  'explain event': 'in the outbox',
  'explain command': 'in flow_apply_command or service_apply',
};

export async function runExplainAnswer(options: ExplainAnswerOptions, ctx: Ctx): Promise<number> {
  const doc = await explainAnswerAsPasted(options, depsOf(ctx));
  const lower = options.answerUuid.toLowerCase();
  // found nowhere as given nor in lower case (explainAnswerAsPasted): the line says both were looked up
  const what = lower === options.answerUuid ? '' : ` (nor as ${lower}: uuids are matched exactly)`;
  return finish('explain answer', doc, ctx, `answer ${options.answerUuid}`, what);
}

export async function runExplainEvent(
  options: Omit<ExplainAnswerOptions, 'answerUuid'> & { readonly eventId: string },
  ctx: Ctx,
): Promise<number> {
  const { eventId, ...rest } = options;
  const doc = await explainEvent(eventId, rest, depsOf(ctx));
  return finish('explain event', doc, ctx, `event ${eventId}`);
}

export async function runExplainCommand(
  options: { readonly bizType: string; readonly bizId: string },
  ctx: Ctx,
): Promise<number> {
  const doc = await explainCommand(options, depsOf(ctx));
  return finish('explain command', doc, ctx, `apply command ${options.bizType}/${options.bizId}`);
}
