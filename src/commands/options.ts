import { type Command, InvalidArgumentError, Option, type OptionValues } from '@commander-js/extra-typings';
import { idProblem, isAppKey, isSchoolId, isUuid, MAX_APP_KEY_LENGTH, MAX_RUN_ID_LENGTH } from '../lib/ids.js';
import type { ManifestSide } from '../lib/manifest/row.js';
import { UsageError } from '../lib/cli/exit.js';
import { type LoadLimit, mergeMaxLoad, parseMaxLoad, type ThrottleLimits } from '../lib/db/throttle.js';
import { listenAddress, type ServiceFlags } from '../lib/service/decide.js';

/**
 * A commander argument parser for an integer in [min, max]; anything else is exit 2 with the
 * option named by commander ("option '--size <n>' argument 'x' is invalid. …").
 * @example .option('--batch-size <n>', 'rows per claim', intArg(1, 5000), 500)
 */
export function intArg(min: number, max: number): (value: string) => number {
  return (value: string) => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
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
    if (!m)
      throw new InvalidArgumentError(
        `expected a duration such as 90s, 10m or 2h, from ${minSeconds} to ${maxSeconds} seconds`,
      );
    const n = Number(m[1]) * DURATION_UNITS[m[2] ?? '']!;
    if (n < minSeconds || n > maxSeconds)
      throw new InvalidArgumentError(`expected a duration from ${minSeconds} to ${maxSeconds} seconds`);
    return n;
  };
}

/**
 * The FAILED → DEAD budget options every retrying cron command takes (`--backoff-base`,
 * `--backoff-cap`, `--max-retries`), read back with {@link retryPolicyOf}.
 * @example addRetryOptions(cmd, { baseSeconds: 20, capSeconds: 3600, maxRetries: 8 })
 */
export function addRetryOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  defaults: { baseSeconds: number; capSeconds: number; maxRetries: number },
) {
  return cmd
    .option('--backoff-base <s>', 'FAILED backoff base (base × 2^retry_count)', intArg(1, 86400), defaults.baseSeconds)
    .option('--backoff-cap <s>', 'FAILED backoff cap', intArg(1, 7 * 86400), defaults.capSeconds)
    .option('--max-retries <n>', 'DEAD once retry_count reaches this', intArg(1, 100), defaults.maxRetries);
}

/** The retry policy of parsed options that {@link addRetryOptions} declared. */
export function retryPolicyOf(o: {
  readonly backoffBase: number;
  readonly backoffCap: number;
  readonly maxRetries: number;
}): {
  baseSeconds: number;
  capSeconds: number;
  maxRetries: number;
} {
  return {
    baseSeconds: o.backoffBase,
    capSeconds: o.backoffCap,
    maxRetries: o.maxRetries,
  };
}

/**
 * `--max-rows` of a batch command: unlimited by default, and `--help` says "no limit" rather than
 * showing Number.MAX_SAFE_INTEGER.
 * @example cmd.addOption(maxRowsOption('stop after claiming this many rows'))
 */
export function maxRowsOption(description: string) {
  return new Option('--max-rows <n>', description)
    .argParser(intArg(1, Number.MAX_SAFE_INTEGER))
    .default(Number.MAX_SAFE_INTEGER, 'no limit');
}

/** `--metrics-file`, the same wording and path check on every cron command. */
export function metricsFileOption() {
  return new Option(
    '--metrics-file <path>',
    'write Prometheus gauges to this file (atomically, for the node_exporter textfile collector)',
  ).argParser(pathArg);
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

/**
 * A repeatable option's parser: each value checked by `parse`, collected in order.
 * @example new Option('--school <id>', 'school id; repeatable').argParser(listArg(schoolArg))
 */
export function listArg<T>(parse: (value: string) => T): (value: string, previous: T[] | undefined) => T[] {
  return (value, previous) => [...(previous ?? []), parse(value)];
}

/** {@link pathArg} for a repeatable option: collects the checked values. */
export const pathsArg = listArg(pathArg);

/**
 * `--consumer KEY`: a consumer credential key as stored (1–64 characters, no whitespace or
 * control characters). Not checked as a routing key here: a row with a bad key is still listable.
 * @example .requiredOption('--consumer <key>', 'consumer app key', consumerArg)
 */
export function consumerArg(value: string): string {
  if (!isAppKey(value))
    throw new InvalidArgumentError(`expected a consumer app key of 1–${MAX_APP_KEY_LENGTH} characters without spaces`);
  return value;
}

/**
 * `--school ID`: a positive integer that fits a BIGINT, kept as decimal text.
 * @example schoolArg('5') // '5'
 */
export function schoolArg(value: string): string {
  if (!isSchoolId(value)) throw new InvalidArgumentError('expected a positive whole number');
  return value;
}

/**
 * `--side sh|fc`.
 * @example .requiredOption('--side <side>', 'sh or fc', sideArg)
 */
function sideArg(value: string): ManifestSide {
  if (value !== 'sh' && value !== 'fc') throw new InvalidArgumentError('expected sh or fc');
  return value;
}

/**
 * A UUID option (`--form`, `--cursor`): the 8-4-4-4-12 hex form, kept as given (lookups are exact).
 * @example .requiredOption('--form <uuid>', 'form uuid', uuidArg)
 */
export function uuidArg(value: string): string {
  if (!isUuid(value)) throw new InvalidArgumentError('expected a UUID (8-4-4-4-12 hex digits)');
  return value;
}

export function idArg(max: number): (value: string) => string {
  return (value: string) => {
    const p = idProblem(value, max);
    if (p)
      throw new InvalidArgumentError(
        `expected 1–${max} characters without control characters or surrounding spaces (the value ${p})`,
      );
    return value;
  };
}

/**
 * `--run-id` of `retire-absent`: 1–64 characters (the audit's `run_id`), no control characters,
 * no surrounding spaces (`projection repair-authoritative --run-id` is stricter: see `checkRunId`).
 * @example .option('--run-id <id>', 'run id', runIdArg)
 */
export const runIdArg = idArg(MAX_RUN_ID_LENGTH);

/**
 * `--number-mode` of the `canon` commands: how numbers are read before hashing.
 * @example cmd.addOption(numberModeOption())
 */
export function numberModeOption() {
  return new Option('--number-mode <mode>', 'exact: numbers as exact decimals; double: fractions read as doubles first')
    .choices(['exact', 'double'])
    .default('exact');
}

/**
 * `--side` of the `db` commands: which database (`all`: both).
 * @example cmd.addOption(dbSideOption().default('all'))
 */
export function dbSideOption() {
  return new Option('--side <side>', 'which database').choices(['fc', 'sh', 'all']);
}

/**
 * The `--side`, `--school` and `--form` every manifest and reconcile command requires: one
 * wording and one check for all of them.
 * @example cmd.addOption(sideOption()).addOption(schoolOption()).addOption(formOption())
 */
export function sideOption() {
  return new Option('--side <side>', 'sh (fc_answer_projection) or fc (answer, hashed with fc.canon.v1)')
    .argParser(sideArg)
    .makeOptionMandatory();
}

function schoolOption() {
  return new Option('--school <id>', 'school id').argParser(schoolArg).makeOptionMandatory();
}

function formOption() {
  return new Option('--form <uuid>', 'form uuid').argParser(uuidArg).makeOptionMandatory();
}

/**
 * `--size`, rows per manifest page, 1 to `max`.
 * @example cmd.addOption(pageSizeOption(`rows per page (at most ${MAX_PAGE_SIZE})`, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE))
 */
export function pageSizeOption(description: string, max: number, defaultSize: number) {
  return new Option('--size <n>', description).argParser(intArg(1, max)).default(defaultSize);
}

/** `--school` and `--form` ({@link schoolOption}, {@link formOption}) on a command, in that order. */
export function addSchoolFormOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd.addOption(schoolOption()).addOption(formOption());
}

/** The school and form {@link addSchoolFormOptions} parsed, as the runners name them. */
export function schoolFormOf(o: { readonly school: string; readonly form: string }): {
  readonly schId: string;
  readonly formUuid: string;
} {
  return { schId: o.school, formUuid: o.form };
}

/** `--format table|json|csv` of a command that lists rows; a table by default. */
export function listFormatOption() {
  return new Option('--format <format>', 'row listing format').choices(['table', 'json', 'csv']).default('table');
}

/**
 * `--consumer KEY` and `--school ID` of a command about one consumer and school (`deliveries
 * failed`, `deliveries replay`), read back with {@link consumerSchoolOf}; `parse` checks the key
 * ({@link consumerArg}, or {@link routableConsumerArg} when it must make a routing key).
 * @example addConsumerSchoolOptions(cmd, 'consumer app key', consumerArg)
 */
export function addConsumerSchoolOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  consumerDescription: string,
  parse: (value: string) => string,
) {
  return cmd
    .requiredOption('--consumer <key>', consumerDescription, parse)
    .requiredOption('--school <id>', 'consumer school id', schoolArg);
}

/** The consumer and school {@link addConsumerSchoolOptions} parsed, as the runners name them. */
export function consumerSchoolOf(o: { readonly consumer: string; readonly school: string }): {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
} {
  return { consumerAppKey: o.consumer, consumerSchoolId: o.school };
}

/** `--batch-size <n>` of a claiming batch command: rows claimed per batch, 1 to `max`. */
export function batchSizeOption(max: number, defaultSize: number) {
  return new Option('--batch-size <n>', 'rows claimed per batch').argParser(intArg(1, max)).default(defaultSize);
}

/** `--max-seconds <s>` of a batch command (1 s to a day): when it stops claiming or starting items. */
export function maxSecondsOption(description: string, defaultSeconds: number) {
  return new Option('--max-seconds <s>', description).argParser(secondsArg(1, 86400)).default(defaultSeconds);
}

/** `--lease-seconds <s>` of a claiming batch command, from `minSeconds` to a day. */
export function leaseSecondsOption(description: string, minSeconds: number, defaultSeconds: number) {
  return new Option('--lease-seconds <s>', description).argParser(intArg(minSeconds, 86400)).default(defaultSeconds);
}

/** `--dry-run` (off by default), with what it leaves out. */
export function dryRunOption(description: string) {
  return new Option('--dry-run', description).default(false);
}

/** `--limit <n>` of a scan report: the newest rows to list, 1 to 10,000, 20 by default. */
export function listLimitOption(description: string) {
  return new Option('--limit <n>', description).argParser(intArg(1, 10_000)).default(20);
}

/** `--fail-if-dead` of a scan report: exit 1 when any row is DEAD. */
export function failIfDeadOption() {
  return new Option('--fail-if-dead', 'exit 1 when any row is DEAD').default(false);
}

/**
 * `--pending-grace <duration>` of `apply-command resolve-unknown` and `scan`: how long a PENDING
 * command is left to its own sender (60 s to 30 days, 10 minutes by default).
 * @example cmd.addOption(pendingGraceOption('PENDING rows count as due after this (as resolve-unknown)'))
 */
export function pendingGraceOption(description: string) {
  return new Option('--pending-grace <duration>', description).argParser(durationArg(60, 30 * 86400)).default(600);
}

/** `--execute` (off by default) of a command that decides row by row: without it, a dry run that says what it would write. */
export function executeOption(description: string) {
  return new Option('--execute', description).default(false);
}

/** The default of the global `--progress-interval`, in seconds. */
const DEFAULT_PROGRESS_INTERVAL_SECONDS = 30;

/**
 * The global `--progress-interval <s>`: off a terminal, a `progress` line on stderr this often while
 * a batch runs; 0 turns the lines off, otherwise 0.1 s to a day (docs/output.md).
 * @example program.addOption(progressIntervalOption())
 */
export function progressIntervalOption() {
  const seconds = secondsArg(0.1, 86400);
  return new Option(
    '--progress-interval <s>',
    'off a terminal, a progress line on stderr every this many seconds while a batch runs; 0: none',
  )
    .argParser((value) => {
      if (/^0+(\.0+)?$/.test(value.trim())) return 0;
      try {
        return seconds(value);
      } catch {
        throw new InvalidArgumentError('expected 0 (no progress lines) or seconds from 0.1 to 86400');
      }
    })
    .default(DEFAULT_PROGRESS_INTERVAL_SECONDS);
}

/**
 * `--state FAILED|DEAD` and `--reason CODE` of `deliveries failed` and `deliveries replay
 * --failed`: which FAILED/DEAD rows (checked by `failedFilterOf`, lib/deliveries/failed/decide.ts).
 * @example failedFilterOptions(cmd)
 */
export function failedFilterOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd
    .option('--state <state>', 'only FAILED or only DEAD rows')
    .option(
      '--reason <code>',
      "only rows whose last_error code (before ':') is this one: NO_ROUTE, NACK, CONFIRM_TIMEOUT, …",
    );
}

/**
 * `--pause-file <path>` of a pausable cron command (issue 19 §3; gh-ost's throttle flag file): while
 * the file exists the command behaves as paused, its first line the reason.
 * @example cmd.addOption(pauseFileOption())
 */
export function pauseFileOption() {
  return new Option(
    '--pause-file <path>',
    'behave as paused while this file exists (its first line is the reason); the local alternative to fcctl pause',
  ).argParser(pathArg);
}

/**
 * `--max-load VAR=N[,VAR=N…]`, `--max-lag <s>` and `--replica-url <url>` of a command that reads a
 * database page by page or batch by batch (issue 19 §2, pt-table-checksum's names): wait while a
 * status variable is above N, or the replica's lag above s (lib/db/throttle.ts). Read back with
 * {@link throttleLimitsOf}; `--replica-url` is the `replicaUrl` setting (FCCTL_REPLICA_URL).
 * @example addThrottleOptions(cmd, 'the FC database')
 */
export function addThrottleOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  readDatabase: string,
) {
  return cmd
    .addOption(
      new Option(
        '--max-load <VAR=N,…>',
        `wait while a SHOW GLOBAL STATUS value of ${readDatabase} is above N (e.g. Threads_running=25), checked before each page or batch; repeatable`,
      ).argParser((value, previous: LoadLimit[] | undefined) => {
        try {
          return mergeMaxLoad(previous ?? [], parseMaxLoad(value));
        } catch (err) {
          throw new InvalidArgumentError((err as Error).message);
        }
      }),
    )
    .addOption(
      new Option(
        '--max-lag <s>',
        `wait while the replica's Seconds_Behind_Master is above s, or replication is stopped (the replica: --replica-url, else ${readDatabase}, which must then be a replica)`,
      ).argParser(once('--max-lag', intArg(0, 86400))),
    )
    .addOption(
      new Option('--replica-url <url>', 'the replica whose lag --max-lag reads (FCCTL_REPLICA_URL)').argParser(
        once('--replica-url', (v) => v),
      ),
    );
}

/** The limits {@link addThrottleOptions} parsed; `--replica-url` without `--max-lag` is exit 2. */
export function throttleLimitsOf(o: {
  readonly maxLoad?: LoadLimit[] | undefined;
  readonly maxLag?: number | undefined;
  readonly replicaUrl?: string | undefined;
}): ThrottleLimits {
  const maxLagSeconds = o.maxLag ?? null;
  if (o.replicaUrl !== undefined && maxLagSeconds === null)
    throw new UsageError('--replica-url is read only by --max-lag: give --max-lag too, or leave --replica-url out');
  return { maxLoad: o.maxLoad ?? [], maxLagSeconds };
}

/** An option parser refusing a second occurrence (exit 2) rather than silently keeping the last. */
function once<T>(flag: string, parse: (value: string) => T): (value: string, previous: T | undefined) => T {
  return (value, previous) => {
    if (previous !== undefined) throw new InvalidArgumentError(`${flag} is given twice: give it once`);
    return parse(value);
  };
}

/** `--listen [HOST]:PORT`: `:9464` is 127.0.0.1 only; anything malformed is exit 2. */
function listenArg(value: string): { host: string; port: number } {
  const address = listenAddress(value);
  if (!address) throw new InvalidArgumentError('expected [HOST]:PORT, e.g. :9464 (127.0.0.1) or 0.0.0.0:9464');
  return address;
}

/**
 * `--follow` and its flags: run until a stop signal, never exiting on an outage, with `/metrics`,
 * `/healthz` and `/readyz` on `--listen`. Read back with {@link serviceFlagsOf}.
 * @example addServiceOptions(cmd, 'claims', 9464)
 */
export function addServiceOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  what: string,
  port: number,
) {
  return (
    cmd
      .option(
        '--follow',
        `run as a service until SIGTERM/SIGINT: poll when nothing is due, wait out outages, exit 0 after draining`,
        false,
      )
      // no commander defaults: a service flag given without --follow is refused (serviceFlagsOf)
      .option(
        '--poll-interval <s>',
        `with --follow: seconds between looks at an empty queue before it ${what} again (default: ${SERVICE_DEFAULTS.pollSeconds})`,
        secondsArg(0.05, 60),
      )
      .option(
        '--drain-seconds <s>',
        `with --follow: after a stop signal, seconds what is in flight may take to finish (default: ${SERVICE_DEFAULTS.drainSeconds})`,
        secondsArg(0, 3600),
      )
      .option(
        '--listen <[host]:port>',
        `with --follow: serve /metrics, /healthz, /readyz (e.g. :${port}, 127.0.0.1 only; 0.0.0.0:${port} in a container)`,
        listenArg,
      )
      .option(
        '--heartbeat-seconds <n>',
        `with --follow: how often its row in the fleet registry (fcctl_worker) is written; stale after 3 (default: ${SERVICE_DEFAULTS.heartbeatSeconds})`,
        intArg(1, 300),
      )
  );
}

/** The service flags' defaults (issue 27). */
const SERVICE_DEFAULTS = { pollSeconds: 0.2, drainSeconds: 30, heartbeatSeconds: 5 } as const;

/** The service flags given; a service flag without `--follow`, or `--follow` with `--dry-run`, is exit 2. */
export function serviceFlagsOf(o: {
  readonly follow?: boolean | undefined;
  readonly pollInterval?: number | undefined;
  readonly drainSeconds?: number | undefined;
  readonly listen?: ServiceFlags['listen'] | undefined;
  readonly heartbeatSeconds?: number | undefined;
  readonly dryRun?: boolean | undefined;
}): ServiceFlags {
  const follow = o.follow === true;
  if (!follow) {
    const stray = (['pollInterval', 'drainSeconds', 'listen', 'heartbeatSeconds'] as const).find(
      (name) => o[name] !== undefined,
    );
    if (stray)
      throw new UsageError(
        `--${stray.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is a --follow option: add --follow, or leave it out`,
      );
  } else if (o.dryRun === true) {
    throw new UsageError(
      '--follow with --dry-run: a dry run that never ends checks nothing more; run the dry run without --follow',
    );
  }
  return {
    follow,
    pollMs: Math.round((o.pollInterval ?? SERVICE_DEFAULTS.pollSeconds) * 1000),
    drainMs: Math.round((o.drainSeconds ?? SERVICE_DEFAULTS.drainSeconds) * 1000),
    listen: o.listen ?? null,
    heartbeatSeconds: o.heartbeatSeconds ?? SERVICE_DEFAULTS.heartbeatSeconds,
  };
}

/** `--max-seconds` of a command that can run as a service: a batch run's default, none with `--follow` ({@link maxSecondsOf}). */
export function followMaxSecondsOption(description: string, batchSeconds: number) {
  return new Option('--max-seconds <s>', `${description} (default: ${batchSeconds}; none with --follow)`).argParser(
    secondsArg(1, 86400),
  );
}

/** `--max-seconds` as given, or its default: `batchSeconds` for a batch run, no limit for `--follow`. */
export function maxSecondsOf(
  o: { readonly maxSeconds?: number | undefined },
  service: ServiceFlags,
  batchSeconds: number,
): number {
  return o.maxSeconds ?? (service.follow ? Infinity : batchSeconds);
}
