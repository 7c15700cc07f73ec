import type { Command } from '@commander-js/extra-typings';
import { UsageError } from '../../lib/cli/exit.js';
import { commandAction, type Deps, type FlagsOf, type Resources } from '../context.js';
import { idArg, pathArg, pathsArg } from '../options.js';
import { MAX_ID_LENGTH } from '../../lib/ids.js';
import { type RetireProveOptions, runRetireProve } from '../../lib/retire-absent/prove/command.js';

/**
 * `--proof-id` and `--task-id` of `retire-absent prove`: 1–128 characters, no control characters,
 * no surrounding spaces.
 * @example .option('--proof-id <id>', 'proof id', proofIdArg)
 */
const proofIdArg = idArg(MAX_ID_LENGTH);

/** `fcctl retire-absent prove` and its flags. */
function proveFlags(parent: Command) {
  return parent
    .command('prove')
    .description(
      'write a retire proof: candidates absent from a complete FC manifest and, checked now, at FC; with the local values to expect and a digest',
    )
    .requiredOption('--candidates <file>', 'retire-candidates.jsonl of reconcile diff / run', pathArg)
    .requiredOption('--fc-manifest <file>', 'the complete FC manifest the candidates came from', pathArg)
    .option(
      '--fc-checkpoint <file>',
      'its checkpoint (default beside it); repeat once per shard, in shard order, when the shards cover the whole key space',
      pathsArg,
    )
    .requiredOption('--out <file>', 'the proof file to write (never overwritten)', pathArg)
    .option(
      '--proof-id <id>',
      'proof id, 1–128 characters, recorded as retire_proof_id; never one another proof used (checked in the SH audit; default: rp- and a new UUID)',
      proofIdArg,
    )
    .option(
      '--task-id <id>',
      'the reconcile task id (default: the run id in run.json beside the candidates)',
      proofIdArg,
    );
}

export function createRetireProveCommand(parent: Command, deps: Deps, resources: Resources, runF = runRetireProve) {
  const cmd = proveFlags(parent);
  return cmd.action(commandAction(deps, resources, (o) => proveOptionsOf(o, cmd.parent?.opts() ?? {}), runF));
}

function proveOptionsOf(o: FlagsOf<typeof proveFlags>, parentFlags: Record<string, unknown>): RetireProveOptions {
  // The parent's options are parsed wherever they stand: refuse them here instead of ignoring them.
  const stray = (['proof', 'execute', 'evidence', 'runId'] as const).filter(
    (k) => parentFlags[k] !== undefined && parentFlags[k] !== false,
  );
  if (stray.length > 0)
    throw new UsageError(
      `${stray.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')} ${stray.length === 1 ? 'belongs' : 'belong'} to \`retire-absent\`, not \`retire-absent prove\``,
    );
  const { candidates, fcManifest, out, proofId, taskId } = o;
  return {
    ...{ candidates, fcManifest, fcCheckpoints: o.fcCheckpoint, out },
    ...(proofId !== undefined ? { proofId } : {}),
    ...(taskId !== undefined ? { taskId } : {}),
  };
}
