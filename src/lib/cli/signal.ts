/**
 * One shared stop mechanism. A command either watches the stop signal — batch commands: they
 * finish or release what they hold at their next check, print their summary and exit 1 — or it
 * does not (reports, lookups, setup): nothing there is worth finishing, and a query blocked on a
 * lock would otherwise keep the process alive long after cron's `timeout` sent its one SIGTERM.
 *
 * - first SIGINT/SIGTERM: aborts the signal; a command that does not watch it ends at once, exit 1;
 * - a second signal ends any command at once, exit 1 (no summary).
 *
 * Exit 1 either way: an interrupt is exit 1 everywhere (SPEC §10).
 * @example const { signal, setMode, dispose } = abortOnSignals(); await run({ signal, setSignalMode: setMode }); dispose();
 */
export type SignalMode = 'stop-at-check' | 'exit-at-once';

/** The exit code of an interrupt (`ExitCode.ITEMS_FAILED`; not imported so `bin/` loads nothing else). */
const INTERRUPTED = 1;

/**
 * The commands that check the stop signal and end with a summary (`stoppedBy: "signal"`); every
 * other command ends at once on the first signal. A command added here must check `ctx.signal`.
 */
export const SIGNAL_WATCHING_COMMANDS: ReadonlySet<string> = new Set([
  'deliveries send',
  'deliveries replay',
  'apply-command resolve-unknown',
  'apply-command requeue',
  'manifest scan',
  'reconcile run',
  'reconcile diff',
  'projection repair-authoritative',
  'retire-absent',
  'retire-absent prove',
  'canon hash',
]);

/**
 * What the first signal does to a command, by its path (`deliveries scan`).
 * @example signalMode('doctor') // 'exit-at-once'
 */
export function signalMode(commandPath: string): SignalMode {
  return SIGNAL_WATCHING_COMMANDS.has(commandPath) ? 'stop-at-check' : 'exit-at-once';
}

export function abortOnSignals(proc: NodeJS.Process = process): {
  signal: AbortSignal;
  setMode: (mode: SignalMode) => void;
  dispose: () => void;
} {
  const controller = new AbortController();
  // Until a command says otherwise (parsing, help): nothing to finish.
  let mode: SignalMode = 'exit-at-once';
  const onSignal = (name: NodeJS.Signals) => {
    if (controller.signal.aborted || mode === 'exit-at-once') proc.exit(INTERRUPTED);
    controller.abort(new Error(`stopped by ${name}`));
  };
  proc.on('SIGINT', onSignal);
  proc.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    setMode: (m) => {
      mode = m;
    },
    dispose: () => {
      proc.off('SIGINT', onSignal);
      proc.off('SIGTERM', onSignal);
    },
  };
}
