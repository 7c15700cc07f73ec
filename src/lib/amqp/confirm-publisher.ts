import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import type { BrokerOutcome } from '../deliveries/decide.js';
import { CLOSE_TIMEOUT_MS, within } from './connect.js';

/** A publish's outcome, or `unsent` when the channel was gone before the message went out. */
export type PublishOutcome = BrokerOutcome | { readonly kind: 'unsent' };

/**
 * Publishes on a ConfirmChannel with a bounded in-flight window and a confirm timeout, and
 * correlates `mandatory` returns by messageId (returns carry no delivery tag). RabbitMQ sends
 * basic.return before the basic.ack of the same message, so by the time the ack arrives the
 * return has been recorded; an ack of a returned message is reported as `returned: true`.
 * Only one copy of a messageId is ever unconfirmed on the channel at a time: a second copy (a
 * replayed row claimed again while its first publish waits) is answered `unsent`, so a return can
 * never be credited to the wrong copy.
 * @example const out = await publisher.publish('x', 'rk', body, { messageId: 'e1', mandatory: true })
 */
export class ConfirmPublisher {
  private inFlight = 0;
  private readonly waiters: Array<() => void> = [];
  /** unconfirmed messages by messageId: whether a return has arrived, and how to settle them */
  private readonly outstanding = new Map<string, { returned: boolean; settle: (o: PublishOutcome) => void }>();
  private closedReason: string | null = null;
  private closedOnPurpose = false;

  constructor(
    private readonly channel: ConfirmChannel,
    private readonly window: number,
    private readonly confirmTimeoutMs: number,
  ) {
    channel.on('return', (msg: ConsumeMessage) => {
      const id = msg.properties.messageId as string | undefined;
      // A return for a message that already timed out belongs to nobody now: ignore it.
      const entry = id === undefined ? undefined : this.outstanding.get(id);
      if (entry) entry.returned = true;
    });
    channel.on('close', () => this.gone('channel closed'));
    channel.on('error', (err: Error) => this.gone(err.message));
  }

  /** The channel is unusable: every outstanding message is `closed` (resent later), waiters wake. */
  private gone(why: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = why;
    for (const { settle } of [...this.outstanding.values()]) settle({ kind: 'closed' });
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Why the channel is gone, or null while it is usable. */
  get closed(): string | null {
    return this.closedReason;
  }

  get pending(): number {
    return this.inFlight;
  }

  /**
   * Publishes once a window slot is free. `notAfter` (epoch ms) is the latest time a confirm may
   * still be waited for — the claim's lease: a message that could not be confirmed before the
   * lease ends is not sent (`unsent`), since another relay may own the row by then.
   */
  async publish(
    exchange: string,
    routingKey: string,
    body: Buffer,
    options: Options.Publish & { messageId: string },
    notAfter = Number.POSITIVE_INFINITY,
  ): Promise<PublishOutcome> {
    while (this.inFlight >= this.window && this.closedReason === null) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    const id = options.messageId;
    if (this.closedReason !== null || this.outstanding.has(id) || Date.now() + this.confirmTimeoutMs > notAfter) {
      this.waiters.shift()?.();
      return { kind: 'unsent' };
    }
    this.inFlight += 1;
    return new Promise<PublishOutcome>((resolve) => {
      let done = false;
      const entry = {
        returned: false,
        settle: (outcome: PublishOutcome) => {
          if (done) return; // first outcome wins: a late ack after a timeout changes nothing
          done = true;
          clearTimeout(timer);
          this.outstanding.delete(id);
          this.inFlight -= 1;
          this.waiters.shift()?.();
          resolve(outcome);
        },
      };
      const timer = setTimeout(() => entry.settle({ kind: 'timeout' }), this.confirmTimeoutMs);
      this.outstanding.set(id, entry);
      try {
        this.channel.publish(exchange, routingKey, body, options, (err: unknown) => {
          if (err) entry.settle((err as Error).message === 'message nacked' ? { kind: 'nack' } : { kind: 'closed' });
          else entry.settle({ kind: 'ack', returned: entry.returned });
        });
      } catch (err) {
        // Once the channel is closed publish throws: nothing went out.
        if (this.closedReason !== null) {
          entry.settle({ kind: 'unsent' });
          return;
        }
        // Any other synchronous error (a frame that cannot be encoded) would repeat on every
        // retry, so it spends the retry budget. amqplib has already queued this message's confirm
        // callback before encoding it, so from now on the broker's acks would be credited to the
        // wrong messages: the channel is given up (the rest are resent), never trusted again.
        const detail = (err as Error).message;
        entry.settle({ kind: 'error', detail });
        this.gone(`a publish failed before it was sent (${detail}); the channel was closed so that no confirm is credited to another message`);
        void this.channel.close().catch(() => undefined);
      }
    });
  }

  /** Closes the channel on purpose; only an unexpected close counts as the broker going away. */
  async close(): Promise<void> {
    if (this.closedReason !== null) return;
    this.closedReason = 'closed by fcctl';
    this.closedOnPurpose = true;
    // Bounded: a broker that blocks the connection never answers; the connection's close drops it.
    await within(this.channel.close(), CLOSE_TIMEOUT_MS);
  }

  /** Why the channel went away unexpectedly, or null. */
  get lost(): string | null {
    return this.closedOnPurpose ? null : this.closedReason;
  }
}
