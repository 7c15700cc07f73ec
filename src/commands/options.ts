import { type Command, InvalidArgumentError, Option } from 'commander';

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

/**
 * The FAILED → DEAD budget options every retrying cron command takes (`--backoff-base`,
 * `--backoff-cap`, `--max-retries`), read back with {@link retryPolicyOf}.
 * @example addRetryOptions(cmd, { baseSeconds: 20, capSeconds: 3600, maxRetries: 8 })
 */
export function addRetryOptions(cmd: Command, defaults: { baseSeconds: number; capSeconds: number; maxRetries: number }): Command {
  return cmd
    .option('--backoff-base <s>', 'FAILED backoff base (base × 2^retry_count)', intArg(1, 86400), defaults.baseSeconds)
    .option('--backoff-cap <s>', 'FAILED backoff cap', intArg(1, 7 * 86400), defaults.capSeconds)
    .option('--max-retries <n>', 'DEAD once retry_count reaches this', intArg(1, 100), defaults.maxRetries);
}

/** The retry policy of parsed options that {@link addRetryOptions} declared. */
export function retryPolicyOf(o: Record<string, unknown>): { baseSeconds: number; capSeconds: number; maxRetries: number } {
  return { baseSeconds: o['backoffBase'] as number, capSeconds: o['backoffCap'] as number, maxRetries: o['maxRetries'] as number };
}

/**
 * `--max-rows` of a batch command: unlimited by default, and `--help` says "no limit" rather than
 * showing Number.MAX_SAFE_INTEGER.
 * @example cmd.addOption(maxRowsOption('stop after claiming this many rows'))
 */
export function maxRowsOption(description: string): Option {
  return new Option('--max-rows <n>', description).argParser(intArg(1, Number.MAX_SAFE_INTEGER)).default(Number.MAX_SAFE_INTEGER, 'no limit');
}

/** `--metrics-file`, the same wording and path check on every cron command. */
export function metricsFileOption(): Option {
  return new Option('--metrics-file <path>', 'write Prometheus gauges to this file (atomically, for the node_exporter textfile collector)').argParser(pathArg);
}

export function addMetricsFileOption(cmd: Command): Command {
  return cmd.addOption(metricsFileOption());
}

/**
 * A file or directory option: not empty (which would silently mean the current directory) and
 * without NUL (no path can hold one); anything else is exit 2 naming the option.
 * @example .requiredOption('--out <file.jsonl>', 'the manifest file', pathArg)
 */
export function pathArg(value: string): string {
  if (value.length === 0) throw new InvalidArgumentError('expected a path, got an empty value');
  if (value.includes('\u0000')) throw new InvalidArgumentError('expected a path without NUL characters');
  return value;
}

/** {@link pathArg} for a repeatable option: collects the checked values. */
export function pathsArg(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), pathArg(value)];
}
