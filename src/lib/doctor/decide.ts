/**
 * `doctor`'s check lines decided from what was read (pure); `run.ts` reads and calls them.
 */
import { vhostOf } from '../amqp/connect.js';
import { parseAmqpUrl } from '../amqp/url.js';

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
    ? {
        check: 'broker vhost',
        status: 'warn',
        detail: 'using the default vhost "/" (seed 004 B-03): use a separate vhost with its own accounts',
      }
    : { check: 'broker vhost', status: 'ok', detail: `vhost ${vhost}` };
}

/**
 * The `broker` line once connected: over TLS, how (who is checked, which login) and the heartbeat
 * the broker agreed to; a warning when the broker's certificate is not checked (`verify_none`).
 * @example brokerConnectedCheck('amqps://mq/fc?certfile=/c&keyfile=/k&auth_mechanism=external', 15).detail // 'connected over TLS: the broker's certificate checked (verify_peer), a client certificate, login EXTERNAL, heartbeat 15 s'
 */
export function brokerConnectedCheck(amqpUrl: string, heartbeatSeconds: number | undefined): CheckResult {
  const s = parseAmqpUrl(amqpUrl);
  if (!s.tls) return { check: 'broker', status: 'ok', detail: 'connected' };
  const parts = [
    s.verify === 'verify_peer'
      ? "the broker's certificate checked (verify_peer)"
      : "the broker's certificate NOT checked (verify=verify_none)",
    s.certfile !== undefined ? 'a client certificate' : 'no client certificate',
    `login ${s.authMechanism.toUpperCase()}`,
    ...(heartbeatSeconds !== undefined ? [`heartbeat ${heartbeatSeconds} s`] : []),
  ];
  return {
    check: 'broker',
    status: s.verify === 'verify_peer' ? 'ok' : 'warn',
    detail: `connected over TLS: ${parts.join(', ')}`,
  };
}

/** Exit code of a doctor run: any failed check is an environment problem. */
export function doctorExitCode(results: readonly CheckResult[]): 0 | 3 {
  return results.some((r) => r.status === 'fail') ? 3 : 0;
}

/** The summary of a doctor run: its exit code and how many checks ended in each status. */
export interface DoctorSummary {
  readonly exitCode: 0 | 3;
  readonly ok: number;
  readonly warn: number;
  readonly fail: number;
  readonly skipped: number;
}

/**
 * @example summarizeDoctor([{ check: 'broker', status: 'fail', detail: '…' }]) // { exitCode: 3, ok: 0, warn: 0, fail: 1, skipped: 0 }
 */
export function summarizeDoctor(results: readonly CheckResult[]): DoctorSummary {
  const count = (s: CheckResult['status']) => results.filter((r) => r.status === s).length;
  return {
    exitCode: doctorExitCode(results),
    ok: count('ok'),
    warn: count('warn'),
    fail: count('fail'),
    skipped: count('skipped'),
  };
}

/** How re-declaring the existing delivery exchange (durable, topic) went: done, or the broker's code and message. */
export type RedeclareOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly code: number | undefined; readonly message: string };

/**
 * The plain `delivery exchange` check of an exchange that exists: fcctl re-declares it as a durable
 * topic exchange, a no-op when it is one. 406 PRECONDITION_FAILED (another type or durability) fails.
 * 403 ACCESS_REFUSED is the least-privilege publisher of seed 000 §6, which may not configure the
 * exchange: ok, saying type and durability were not verified (`--isolation` reads them through the
 * management API). Anything else fails naming it.
 * @example redeclareCheck('fc.answer.delivery.v2', { ok: false, code: 403, message: '…' }).status // 'ok'
 */
export function redeclareCheck(exchange: string, outcome: RedeclareOutcome): CheckResult {
  const check = 'delivery exchange';
  if (outcome.ok) return { check, status: 'ok', detail: `${exchange} exists, topic, durable` };
  if (outcome.code === 403) {
    return {
      check,
      status: 'ok',
      detail: `${exchange} exists; its type and durability were not verified: the publisher may not configure it (re-declaring it was refused, 403 ACCESS_REFUSED), as seed 000 §6 asks; doctor --isolation verifies them through the management API`,
    };
  }
  if (outcome.code === 406)
    return {
      check,
      status: 'fail',
      detail: `${exchange} exists but is not a durable topic exchange: ${outcome.message}`,
    };
  return {
    check,
    status: 'fail',
    detail: `${exchange} exists but could not be re-declared to check its type and durability: ${outcome.message}`,
  };
}
