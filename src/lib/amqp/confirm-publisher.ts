import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import type { BrokerOutcome } from '../deliveries/decide.js';

/** A publish's outcome, or `unsent` when the channel was gone before the message went out. */
export type PublishOutcome = BrokerOutcome | { readonly kind: 'unsent' };

/**
 * Publishes on a ConfirmChannel with a bounded in-flight window and a confirm timeout, and
 * correlates `mandatory` returns by messageId (returns carry no delivery tag). RabbitMQ sends
 * basic.return before the basic.ack of the same message, so by the time the ack arrives the
 * return has been recorded; an ack of a returned message is reported as `returned: true`.
 * @example const out = await publisher.publish('x', 'rk', body, { messageId: 'e1', mandatory: true })
 */
export class ConfirmPublisher {
  private inFlight = 0;
  private readonly waiters: Array<() => void> = [];
  private readonly returned = new Set<string>();
  private readonly outstanding = new Set<(o: PublishOutcome) => void>();
  private closedReason: string | null = null;
  private closedOnPurpose = false;

  constructor(
    private readonly channel: ConfirmChannel,
    private readonly window: number,
    private readonly confirmTimeoutMs: number,
  ) {
    channel.on('return', (msg: ConsumeMessage) => {
      const id = msg.properties.messageId as string | undefined;
      if (id !== undefined) this.returned.add(id);
    });
    const onGone = (why: string) => {
      if (this.closedReason !== null) return;
      this.closedReason = why;
      for (const settle of [...this.outstanding]) settle({ kind: 'closed' });
      for (const wake of this.waiters.splice(0)) wake();
    };
    channel.on('close', () => onGone('channel closed'));
    channel.on('error', (err: Error) => onGone(err.message));
  }

  /** Why the channel is gone, or null while it is usable. */
  get closed(): string | null {
    return this.closedReason;
  }

  get pending(): number {
    return this.inFlight;
  }

  async publish(exchange: string, routingKey: string, body: Buffer, options: Options.Publish & { messageId: string }): Promise<PublishOutcome> {
    while (this.inFlight >= this.window && this.closedReason === null) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    if (this.closedReason !== null) return { kind: 'unsent' };
    this.inFlight += 1;
    const id = options.messageId;
    return new Promise<PublishOutcome>((resolve) => {
      let done = false;
      const settle = (outcome: PublishOutcome) => {
        if (done) return; // first outcome wins: a late ack after a timeout changes nothing
        done = true;
        clearTimeout(timer);
        this.outstanding.delete(settle);
        this.returned.delete(id);
        this.inFlight -= 1;
        this.waiters.shift()?.();
        resolve(outcome);
      };
      const timer = setTimeout(() => settle({ kind: 'timeout' }), this.confirmTimeoutMs);
      this.outstanding.add(settle);
      try {
        this.channel.publish(exchange, routingKey, body, options, (err: unknown) => {
          if (err) settle((err as Error).message === 'message nacked' ? { kind: 'nack' } : { kind: 'closed' });
          else settle({ kind: 'ack', returned: this.returned.has(id) });
        });
      } catch {
        // publish throws synchronously once the channel is closed: nothing went out.
        settle({ kind: 'unsent' });
      }
    });
  }

  /** Closes the channel on purpose; only an unexpected close counts as the broker going away. */
  async close(): Promise<void> {
    if (this.closedReason !== null) return;
    this.closedReason = 'closed by fcctl';
    this.closedOnPurpose = true;
    await this.channel.close().catch(() => undefined);
  }

  /** Why the channel went away unexpectedly, or null. */
  get lost(): string | null {
    return this.closedOnPurpose ? null : this.closedReason;
  }
}
