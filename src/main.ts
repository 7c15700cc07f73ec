import { readFileSync } from 'node:fs';
import { type Command, CommanderError, Option } from '@commander-js/extra-typings';
import { type Deps, Resources } from './commands/context.js';
import { progressIntervalOption } from './commands/options.js';
import { commanderErrorLine, FcctlCommand } from './lib/cli/command.js';
import { ExitCode, FcctlError } from './lib/cli/exit.js';
import { printable } from './lib/cli/printable.js';
import { loadTerminal } from './lib/cli/terminal.js';
import { redact } from './lib/config/mask.js';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

type Register = (program: Command, deps: Deps, resources: Resources) => unknown;

/**
 * The top-level commands, in `--help` order. Every command runs with all of them registered (help,
 * "Did you mean"), and `--version` with none. Loading only the command that runs saved 80 ms of
 * start-up but cost a 20,000-row `deliveries send` 10–15 % more CPU: with a smaller heap after
 * start-up, V8 began its incremental marking early and from then on promoted the batches in
 * flight to the old generation at every scavenge (1.5–1.9 MB each instead of 0.1 MB; 4 full
 * collections instead of 1, `node --trace-gc-nvp`).
 */
const COMMANDS: ReadonlyArray<() => Promise<Register>> = [
  async () => (await import('./commands/db/index.js')).createDbGroup,
  async () => (await import('./commands/deliveries/index.js')).createDeliveriesGroup,
  async () => (await import('./commands/apply-command/index.js')).createApplyCommandGroup,
  async () => (await import('./commands/doctor/doctor.js')).createDoctorCommand,
  async () => (await import('./commands/dev/index.js')).createDevGroup,
  async () => (await import('./commands/canon/index.js')).createCanonGroup,
  async () => (await import('./commands/manifest/index.js')).createManifestGroup,
  async () => (await import('./commands/reconcile/index.js')).createReconcileGroup,
  async () => (await import('./commands/retire-absent/index.js')).createRetireAbsentGroup,
  async () => (await import('./commands/projection/index.js')).createProjectionGroup,
  async () => (await import('./commands/pause/index.js')).createPauseCommands,
  async () => (await import('./commands/config/index.js')).createConfigGroup,
  async () => (await import('./commands/explain/index.js')).createExplainGroup,
  async () => (await import('./commands/status/index.js')).createStatusCommand,
];

/** `fcctl --version` alone (`--json` and `--debug` aside): no command module is needed to answer it. */
const versionOnly = (argv: readonly string[]) =>
  argv.some((a) => a === '-V' || a === '--version') &&
  argv.every((a) => ['-V', '--version', '--json', '--debug'].includes(a));

/**
 * Builds the command tree (see {@link COMMANDS}; none for a bare `--version` in `argv`). Only
 * commands that work are registered, so `--help` lists only those.
 */
export async function buildProgram(deps: Deps, resources: Resources, argv?: readonly string[]): Promise<Command> {
  const program = new FcctlCommand('fcctl')
    .description('operator toolkit for the form-center answer delivery system')
    .version(pkg.version, '-V, --version')
    .option('--config <file>', 'JSON config file (flags > FCCTL_* environment > config file)')
    .option('--fc-database-url <url>', 'FC database (FCCTL_FC_DATABASE_URL)')
    .option('--sh-database-url <url>', 'SH database (FCCTL_SH_DATABASE_URL)')
    .option('--amqp-url <url>', 'RabbitMQ (FCCTL_AMQP_URL)')
    .option(
      '--amqp-management-url <url>',
      'RabbitMQ management API, for doctor --isolation (FCCTL_AMQP_MANAGEMENT_URL)',
    )
    .option('--flow-url <url>', 'flow center (FCCTL_FLOW_URL)')
    .option('--app-key <key>', "this publisher's credential key (FCCTL_APP_KEY)")
    .option('--app-code <code>', "this publisher's deployment code (FCCTL_APP_CODE)")
    .option(
      '--service-time-zone <zone>',
      "IANA time zone of the service's DATETIMEs; default: the FC database's zone (FCCTL_SERVICE_TIME_ZONE)",
    )
    .option('--json', 'JSON lines on stdout, even on a terminal')
    .addOption(progressIntervalOption())
    .addOption(new Option('--debug', 'print stack traces of unexpected errors'))
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => deps.io.stdout.write(s),
      writeErr: (s) => deps.io.stderr.write(s),
      // Commander's messages start with "error: "; ours are one line prefixed "fcctl: " (a newline in
      // the refused value is escaped; a "Did you mean" line is kept at the end of that line).
      outputError: (s, write) => write(`fcctl: ${oneLine(commanderErrorLine(s))}\n`),
    });

  const wanted = argv !== undefined && versionOnly(argv) ? [] : COMMANDS;
  const registers = await Promise.all(wanted.map((load) => load()));
  for (const register of registers) register(program, deps, resources);
  return program;
}

/** Longest error line printed: a refused value is echoed, and an argument or file may be megabytes. */
const MAX_ERROR_CHARS = 2000;

/**
 * A message cut to twice {@link MAX_ERROR_CHARS} before it is redacted: an echoed value may be
 * megabytes, and only the first {@link MAX_ERROR_CHARS} are printed, so a secret this cut splits
 * lies beyond the printed part.
 */
const bounded = (message: string) =>
  message.length > 2 * MAX_ERROR_CHARS ? message.slice(0, 2 * MAX_ERROR_CHARS) : message;

/**
 * An error message as exactly one line: control characters (a newline in a path) escaped as
 * `\u` and four hex digits, cut to {@link MAX_ERROR_CHARS}. C1 and the characters that reorder or
 * hide text too ({@link printable}): a message may quote the flow center's answer or a database
 * value (`HTTP 503: {"error":"<U+009B>2J"}` cleared the screen of a terminal that acts on C1).
 * @example oneLine('cannot read a\nb') // 'cannot read a\\u000ab'
 */
export function oneLine(message: string): string {
  const escaped = printable(message);
  return escaped.length > MAX_ERROR_CHARS ? `${escaped.slice(0, MAX_ERROR_CHARS)}…` : escaped;
}

/**
 * Runs one fcctl invocation and returns its exit code; never throws and never prints a stack
 * trace unless `--debug` (SPEC §2).
 * @example process.exitCode = await main(process.argv.slice(2), deps)
 */
export async function main(argv: readonly string[], deps: Deps): Promise<number> {
  const resources = new Resources();
  try {
    // An interrupt is exit 1 everywhere (SPEC §10), also in a command that finished without
    // looking at the signal: it did not necessarily do what it was asked.
    // A `--follow` service ends by the signal as its normal stop (exit 0 once drained).
    const code = interruptedExitCode(await run(argv, deps, resources), deps.signal.aborted && !resources.signalIsStop);
    // The summary is printed last, with the code the process ends with: whatever failed after the
    // command built it (its metrics file, an error thrown after it), the two never differ.
    resources.summary.release(code);
    return code;
  } finally {
    await resources.closeAll();
  }
}

/**
 * The exit code of a run the stop signal may have interrupted: at least 1 when it did (2, 3 and 4
 * keep their meaning).
 * @example interruptedExitCode(0, true) // 1
 */
export function interruptedExitCode(code: number, aborted: boolean): number {
  return aborted && code === ExitCode.OK ? ExitCode.ITEMS_FAILED : code;
}

/** {@link main} without the summary and the closing: parses, runs, and maps errors to exit codes. */
async function run(argv: readonly string[], deps: Deps, resources: Resources): Promise<number> {
  const debug = argv.includes('--debug');
  try {
    // inside the try: a command module that fails to load is one `fcctl:` line, exit 3
    const program = await buildProgram(deps, resources, argv);
    // ink and React are loaded only for a command that runs with a terminal view (see terminal.ts):
    // `--version`, `--help` and a refused flag draw none, and neither does `--json` or a pipe.
    program.hook('preAction', async (_program, action) => {
      if (deps.io.interactive && !action.optsWithGlobals()['json']) await loadTerminal();
    });
    await program.parseAsync([...argv], { from: 'user' });
    return resources.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return ExitCode.OK;
      // Missing subcommand shows help on stderr; everything else was already reported in one line.
      return ExitCode.USAGE;
    }
    const secrets = resources.lastSecrets;
    if (err instanceof FcctlError) {
      deps.io.stderr.write(`fcctl: ${oneLine(redact(bounded(err.message), secrets))}\n`);
      if (debug && err.cause instanceof Error) deps.io.stderr.write(`${redact(err.cause.stack ?? '', secrets)}\n`);
      return err.exitCode;
    }
    const e = err as Error;
    const first = redact(bounded(String(e?.message ?? e).split('\n')[0] ?? ''), secrets);
    deps.io.stderr.write(
      `fcctl: unexpected error: ${oneLine(first)}${debug ? '' : ' (run with --debug for details)'}\n`,
    );
    if (debug) deps.io.stderr.write(`${redact(e?.stack ?? '', secrets)}\n`);
    // Unexpected errors are almost always the environment (a dropped connection mid-query).
    return ExitCode.ENVIRONMENT;
  }
}
