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

const DURATION_UNITS: Readonly<Record<string, number>> = { '': 1, s: 1, m: 60, h: 3600, d: 86400 };

/**
 * A duration in whole seconds: `90`, `90s`, `10m`, `2h`, `1d` (a bare number is seconds), in
 * [min, max] seconds; anything else is exit 2 naming the option.
 * @example .option('--pending-grace <duration>', 'PENDING rows older than this', durationArg(60, 30 * 86400), 600)
 */
export function durationArg(minSeconds: number, maxSeconds: number): (value: string) => number {
  return (value: string) => {
    const m = /^(\d{1,9})(s|m|h|d)?$/.exec(value.trim());
    if (!m) throw new InvalidArgumentError(`expected a duration such as 90s, 10m or 2h, from ${minSeconds} to ${maxSeconds} seconds`);
    const n = Number(m[1]) * DURATION_UNITS[m[2] ?? '']!;
    if (n < minSeconds || n > maxSeconds) throw new InvalidArgumentError(`expected a duration from ${minSeconds} to ${maxSeconds} seconds`);
    return n;
  };
}
