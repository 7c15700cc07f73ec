import { randomBytes } from 'node:crypto';
import { ConfirmPublisher, type Message, type PublishOutcome } from './confirm-publisher.js';
import { type Broker, DELIVERY_EXCHANGE, RETURN_PROBE_ROUTING_KEY } from './connect.js';
/** The probe's `type`: not an event type, so a consumer that does receive it rejects it. */
export const RETURN_PROBE_TYPE = 'fcctl.return-probe';

/** A fresh probe message (its own messageId each time, so its return is its own). */
export function returnProbeMessage(): Message {
  const body = {
    type: RETURN_PROBE_TYPE,
    note: 'fcctl checks that unroutable messages come back as returns; this is not an envelope: reject it',
  };
  return {
    exchange: DELIVERY_EXCHANGE,
    routingKey: RETURN_PROBE_ROUTING_KEY,
    body: Buffer.from(JSON.stringify(body), 'utf8'),
    options: {
      messageId: `fcctl-return-probe-${randomBytes(8).toString('hex')}`,
      mandatory: true,
      persistent: false,
      type: RETURN_PROBE_TYPE,
      contentType: 'application/json',
    },
  };
}

/**
 * What the probe's outcome says about the exchange (seed 004: without observable returns, no
 * scan-send). Only a return before the ack passes.
 * @example judgeReturnProbe({ kind: 'ack', returned: true }).ok // true
 */
export function judgeReturnProbe(outcome: PublishOutcome, timeoutMs: number): { ok: boolean; detail: string } {
  const probe = `a mandatory probe through ${DELIVERY_EXCHANGE} to ${RETURN_PROBE_ROUTING_KEY}`;
  switch (outcome.kind) {
    case 'ack':
      return outcome.returned
        ? { ok: true, detail: `${probe} came back as a return before its ack` }
        : {
            ok: false,
            detail:
              `${probe} was acked without a return: an alternate exchange on ${DELIVERY_EXCHANGE} (a policy or an argument) ` +
              'or a binding that catches every consumer key (#, fc.snapshot.v2.#, a leading wildcard) takes unroutable messages, so NO_ROUTE could not be seen',
          };
    case 'refused':
      return {
        ok: false,
        detail:
          `the broker refused ${probe} (${outcome.code} ${outcome.text})` +
          (outcome.code === 403
            ? `: the publisher needs write on ${DELIVERY_EXCHANGE} and a topic permission that allows ${RETURN_PROBE_ROUTING_KEY}`
            : ''),
      };
    case 'nack':
      return { ok: false, detail: `the broker nacked ${probe}` };
    case 'timeout':
      return { ok: false, detail: `no confirm for ${probe} within ${timeoutMs / 1000} s` };
    default:
      return { ok: false, detail: `the channel closed before ${probe} was confirmed` };
  }
}

/** Sends the return probe alone on a publisher that has nothing else in flight. */
export async function sendReturnProbe(
  publisher: ConfirmPublisher,
  timeoutMs: number,
): Promise<{ ok: boolean; detail: string }> {
  return judgeReturnProbe(await publisher.sendAlone(returnProbeMessage()), timeoutMs);
}

/**
 * Proves on this broker, through the delivery exchange itself, what the relay relies on: a
 * mandatory publish nobody can route is returned, and the return arrives before its ack. Needs
 * only `write` on the exchange (seed 000 §6's least-privilege publisher).
 */
export async function probeReturnBeforeAck(broker: Broker, timeoutMs = 5000): Promise<{ ok: boolean; detail: string }> {
  const publisher = new ConfirmPublisher(await broker.confirmChannel(), 1, timeoutMs);
  try {
    return await sendReturnProbe(publisher, timeoutMs);
  } finally {
    await publisher.close();
  }
}
