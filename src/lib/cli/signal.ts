/**
 * One shared stop mechanism: the first SIGINT/SIGTERM aborts the returned signal, batch commands
 * finish or release what they hold and print their summary; a second signal exits at once (130).
 * @example const { signal, dispose } = abortOnSignals(); await run({ signal }); dispose();
 */
export function abortOnSignals(proc: NodeJS.Process = process): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) proc.exit(130);
    controller.abort(new Error(`stopped by ${name}`));
  };
  proc.on('SIGINT', onSignal);
  proc.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      proc.off('SIGINT', onSignal);
      proc.off('SIGTERM', onSignal);
    },
  };
}
