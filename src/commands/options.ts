import { InvalidArgumentError } from 'commander';

/**
 * A commander argument parser for an integer in [min, max]; anything else is exit 2 with the
 * option named by commander ("option '--size <n>' argument 'x' is invalid. …").
 * @example .option('--batch-size <n>', 'rows per claim', intArg(1, 5000), 500)
 */
export function intArg(min: number, max: number): (value: string) => number {
  return (value: string) => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    return n;
  };
}

/** A positive number of seconds, fractions allowed (e.g. `--confirm-timeout 0.5`). */
export function secondsArg(min: number, max: number): (value: string) => number {
  return (value: string) => {
    if (!/^\d+(\.\d+)?$/.test(value.trim())) throw new InvalidArgumentError(`expected seconds from ${min} to ${max}`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected seconds from ${min} to ${max}`);
    return n;
  };
}
