import { vhostOf } from '../amqp/connect.js';
/** One line of `fcctl doctor`. */
export interface CheckResult {
  readonly check: string;
  readonly status: 'ok' | 'warn' | 'fail' | 'skipped';
  readonly detail: string;
}

/**
 * Seed 004 B-03: sharing the default vhost `/` with other systems is a known risk; a separate
 * vhost with its own accounts is expected.
 * @example vhostCheck('amqp://u:p@h:5672') // { status: 'warn', … }
 */
export function vhostCheck(amqpUrl: string): CheckResult {
  let vhost: string;
  try {
    vhost = vhostOf(amqpUrl);
  } catch {
    return { check: 'broker vhost', status: 'fail', detail: 'amqpUrl is not a URL' };
  }
  return vhost === '/'
    ? { check: 'broker vhost', status: 'warn', detail: 'using the default vhost "/" (seed 004 B-03): use a separate vhost with its own accounts' }
    : { check: 'broker vhost', status: 'ok', detail: `vhost ${vhost}` };
}

/** Exit code of a doctor run: any failed check is an environment problem. */
export function doctorExitCode(results: readonly CheckResult[]): 0 | 3 {
  return results.some((r) => r.status === 'fail') ? 3 : 0;
}
