import { InvalidArgumentError } from 'commander';
import { idProblem, MAX_ID_LENGTH } from '../../lib/retire/proof.js';

/** Longest run id (`fc_reconcile_audit.run_id` is VARCHAR(64)). */
export const MAX_RUN_ID_LENGTH = 64;

function idArg(max: number): (value: string) => string {
  return (value: string) => {
    const p = idProblem(value, max);
    if (p) throw new InvalidArgumentError(`expected 1–${max} characters without control characters or surrounding spaces (the value ${p})`);
    return value;
  };
}

/**
 * `--proof-id` and `--task-id`: 1–128 characters, no control characters, no surrounding spaces.
 * @example .option('--proof-id <id>', 'proof id', proofIdArg)
 */
export const proofIdArg = idArg(MAX_ID_LENGTH);

/** `--run-id`: 1–64 characters (the audit's `run_id`). */
export const runIdArg = idArg(MAX_RUN_ID_LENGTH);
