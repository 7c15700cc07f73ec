/** The paused gauge, `fcctl_paused{command}`, shared by every command that honours a pause (SPEC §10). */
import { type Gauge, gauge, previousValue, readPreviousMetrics } from './textfile.js';

/**
 * `fcctl_paused{command}`: 1 when the run stopped (or never started) because its command is paused.
 * @example pausedGauge('deliveries send', true) // fcctl_paused{command="deliveries send"} 1
 */
export function pausedGauge(command: string, paused: boolean): Gauge {
  return gauge(
    'fcctl_paused',
    'the last run found its command paused (fcctl pause, or --pause-file): 1, else 0',
    paused ? 1 : 0,
    { command },
  );
}

/**
 * `fcctl_paused` for a run that fails (exit 3) before its outcome writes the gauge: noted at once
 * as the previous metrics file's value (the switch as last known; nothing when there is none), then
 * as each check of the switch finds it. Returns the `onRead` of `pauseCheck` (src/lib/pause/run.ts).
 * @example const onRead = await pausedGaugeNotes('deliveries send', options.metricsFile, note)
 */
export async function pausedGaugeNotes(
  command: string,
  metricsFile: string | undefined,
  note: (gauge: Gauge) => void,
): Promise<(paused: boolean) => void> {
  if (metricsFile !== undefined) {
    const last = previousValue(await readPreviousMetrics(metricsFile), 'fcctl_paused', { command });
    if (last !== undefined) note(pausedGauge(command, last === 1));
  }
  return (paused) => note(pausedGauge(command, paused));
}
