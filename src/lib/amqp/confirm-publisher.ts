import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { CLOSE_TIMEOUT_MS, within } from './connect.js';

/**
 * What the broker said about one published message, as the publisher observed it (`unsent` when
 * the channel was gone before the message went out); `deliveries send` adjudicates it.
 */
export type PublishOutcome =
  | { readonly kind: 'ack'; readonly returned: boolean }
  | { readonly kind: 'nack' }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'closed' }
  /** the client refused to send it (synchronous publish error other than a closed channel) */
  | { readonly kind: 'error'; readonly detail: string }
  /**
   * the broker closed the channel over this message, sent alone (AMQP reply code and text); or,
   * `sent: false`, not sent because the broker refused its routing key earlier in the run
   */
  | { readonly kind: 'refused'; readonly code: number; readonly text: string; readonly sent?: boolean }
  /** sent, but its confirm was lost when the broker refused another message: resent later */
  | { readonly kind: 'unknown' }
  /** never went out (the channel was gone first, or the lease too short to wait for a confirm) */
  | { readonly kind: 'unsent' };

/** One message as handed to `publish`. */
export interface Message {
  readonly exchange: string;
  readonly routingKey: string;
  readonly body: Buffer;
  readonly options: Options.Publish & { messageId: string };
}

/** What one transmission of a message came to, before the publisher decides what it means. */
type Raw =
  | { readonly kind: 'ack'; readonly returned: boolean }
  | { readonly kind: 'nack' }
  | { readonly kind: 'timeout' }
  /** the broker closed the channel (an AMQP channel exception) while this message was unconfirmed */
  | { readonly kind: 'exception'; readonly code: number; readonly text: string }
  /** the channel went away without an exception of its own (the connection closed) */
  | { readonly kind: 'closed' }
  | { readonly kind: 'unsent' }
  /** the client could not send it (a synchronous publish error); the channel is given up */
  | { readonly kind: 'error'; readonly detail: string };

interface Entry {
  readonly message: Message;
  /** epoch ms after which a confirm may no longer be waited for (the claim's lease) */
  readonly notAfter: number;
  returned: boolean;
  channel: ConfirmChannel | null;
  timer: NodeJS.Timeout | undefined;
  /** the current transmission's listener; null once it has reported */
  onRaw: ((raw: Raw) => void) | null;
  /** settles the caller's promise: once */
  settle: (outcome: PublishOutcome) => void;
}

export interface RecoveryOptions {
  /** a fresh confirm channel on the same connection */
  readonly reopen: () => Promise<ConfirmChannel>;
  /**
   * A message the broker must return (mandatory, unroutable) on a working channel: sent after a
   * message was refused alone, to tell a refusal of that message from a channel on which nothing
   * can be published any more (exchange deleted, write permission revoked).
   */
  readonly probe: () => Message;
}

/** The broker's reply code and text from amqplib's channel error (`… 403 (ACCESS-REFUSED) with message "…"`). */
export function channelException(err: unknown): { code: number; text: string } | null {
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e?.code !== 'number') return null;
  const message = String(e.message ?? '');
  const m = /with message "([\s\S]*)"$/.exec(message);
  return { code: e.code, text: m ? m[1]! : message };
}

/**
 * Publishes on a ConfirmChannel with a bounded in-flight window and a confirm timeout, and
 * correlates `mandatory` returns by messageId (returns carry no delivery tag). RabbitMQ sends
 * basic.return before the basic.ack of the same message, so by the time the ack arrives the
 * return has been recorded; an ack of a returned message is reported as `returned: true`.
 * Only one copy of a messageId is ever unconfirmed on the channel at a time: a second copy (a
 * replayed row claimed again while its first publish waits) is answered `unsent`, so a return can
 * never be credited to the wrong copy.
 *
 * A refusal of one message is not an outage (with `recovery`): when the broker closes the channel
 * over a message (a channel exception: 403 topic permission, 406 size, …), every message still
 * unconfirmed on it is a suspect whose outcome is unknown. Publishing pauses; each suspect is sent
 * again alone on a fresh channel, so the broker's next refusal names the culprit. A suspect
 * refused alone is `refused` only once a return probe shows the exchange still takes messages;
 * otherwise the channel itself is unusable and the publisher is gone. Suspects that cannot be
 * settled so are `unknown` (resent later, nothing charged). A channel closed without an exception
 * (the connection went away) ends the publisher, as before.
 * @example const out = await publisher.publish({ exchange: 'x', routingKey: 'rk', body, options: { messageId: 'e1', mandatory: true } })
 */
export class ConfirmPublisher {
  private channel: ConfirmChannel;
  private inFlight = 0;
  private readonly waiters: Array<() => void> = [];
  /** unconfirmed messages by messageId */
  private readonly outstanding = new Map<string, Entry>();
  private closedReason: string | null = null;
  private closedOnPurpose = false;
  /** while suspects are being resent one at a time, nothing else is published */
  private recovering = false;
  /** a channel given up by fcctl is closing: publishes wait for the recovery its close starts */
  private pausing = false;
  private suspects: Entry[] = [];
  /** the channel exception of each channel, recorded on 'error' before its 'close' */
  private readonly exceptions = new WeakMap<ConfirmChannel, { code: number; text: string }>();
  /** messages the broker refused alone so far, each at the cost of a channel (for the summary) */
  refusals = 0;
  /** gone because the broker refused the return probe too (nothing can be published), not because the connection went away */
  refusing = false;
  /**
   * Routing keys the broker refused by topic permission (403 naming the key): every later message
   * to such a key would be refused the same way, so it is answered `refused` without being sent
   * (without this, each row of a consumer outside the permission would close a channel and have
   * the whole window resent one at a time).
   */
  private readonly refusedTopics = new Map<string, { code: number; text: string }>();

  constructor(
    channel: ConfirmChannel,
    private readonly window: number,
    private readonly confirmTimeoutMs: number,
    private readonly recovery?: RecoveryOptions,
    /** the clock the caller's `notAfter` deadlines are on (send's injected clock) */
    private readonly clock: () => number = Date.now,
  ) {
    this.channel = channel;
    this.attach(channel);
  }

  private attach(channel: ConfirmChannel): void {
    channel.on('return', (msg: ConsumeMessage) => {
      const id = msg.properties.messageId as string | undefined;
      // A return for a message that already timed out belongs to nobody now: ignore it.
      const entry = id === undefined ? undefined : this.outstanding.get(id);
      if (entry && entry.channel === channel) entry.returned = true;
    });
    channel.on('error', (err: Error) => {
      const exception = channelException(err);
      if (exception) this.exceptions.set(channel, exception);
    });
    channel.on('close', () => this.channelClosed(channel));
  }

  /** A channel closed: its unconfirmed messages learn why; the publisher recovers or is gone. */
  private channelClosed(channel: ConfirmChannel): void {
    const exception = this.exceptions.get(channel);
    const raw: Raw = exception ? { kind: 'exception', ...exception } : { kind: 'closed' };
    for (const entry of [...this.outstanding.values()]) if (entry.channel === channel) entry.onRaw?.(raw);
    if (channel !== this.channel || this.recovering || this.closedReason !== null) return;
    if (exception && this.recovery) void this.recover(exception);
    else this.gone(exception ? `the broker closed the channel: ${exception.code} ${exception.text}` : 'channel closed');
  }

  /** The publisher is unusable: every message still waiting is settled, waiters wake. */
  private gone(why: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = why;
    for (const entry of this.suspects.splice(0)) entry.settle({ kind: 'unknown' });
    for (const entry of [...this.outstanding.values()]) entry.settle({ kind: 'closed' });
    this.wakeAll();
  }

  /**
   * Wakes every waiter; each looks again whether it may send. Not just one: a woken caller that
   * then sends nothing (its row refused from memory, or no longer to be published) would
   * otherwise leave the others asleep with nothing in flight to wake them — a run that hangs.
   */
  private wakeAll(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Why the channel is gone, or null while it is usable. */
  get closed(): string | null {
    return this.closedReason;
  }

  get pending(): number {
    return this.inFlight;
  }

  /** Whether a publish now would have to wait (window full, or a recovery under way). */
  get busy(): boolean {
    return (this.inFlight >= this.window || this.recovering || this.pausing) && this.closedReason === null;
  }

  /** Resolves once a message could be sent at once (a window slot, no recovery), or the publisher is gone. */
  async slot(): Promise<void> {
    while (this.busy) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /**
   * Publishes once a window slot is free. `notAfter` (epoch ms) is the latest time a confirm may
   * still be waited for — the claim's lease: a message that could not be confirmed before the
   * lease ends is not sent (`unsent`), since another relay may own the row by then.
   */
  async publish(message: Message, notAfter = Number.POSITIVE_INFINITY): Promise<PublishOutcome> {
    // No await when a slot is free: the message goes out in the caller's turn, in call order.
    if (this.busy) await this.slot();
    const known = this.refusedTopics.get(message.routingKey);
    if (known) {
      this.wakeAll();
      return { kind: 'refused', ...known, sent: false };
    }
    const id = message.options.messageId;
    if (this.closedReason !== null || this.outstanding.has(id) || this.clock() + this.confirmTimeoutMs > notAfter) {
      this.wakeAll();
      return { kind: 'unsent' };
    }
    this.inFlight += 1;
    return new Promise<PublishOutcome>((resolve) => {
      let done = false;
      const entry: Entry = {
        message,
        notAfter,
        returned: false,
        channel: null,
        timer: undefined,
        onRaw: null,
        settle: (outcome) => {
          if (done) return; // first outcome wins: a late ack after a timeout changes nothing
          done = true;
          entry.onRaw = null;
          clearTimeout(entry.timer);
          this.outstanding.delete(id);
          this.inFlight -= 1;
          this.wakeAll();
          resolve(outcome);
        },
      };
      this.outstanding.set(id, entry);
      this.transmit(entry, (raw) => this.settleNormally(entry, raw));
    });
  }

  /** What a transmission in normal flow means for its message. */
  private settleNormally(entry: Entry, raw: Raw): void {
    switch (raw.kind) {
      case 'exception':
        // Unknown: it may have been routed before the channel closed. Sorted out by recover().
        if (this.recovery && !this.closedOnPurpose) this.suspects.push(entry);
        else entry.settle({ kind: 'closed' });
        return;
      case 'error':
        entry.settle(raw);
        // Without recovery the publisher ends here; with it, the close of the channel starts one.
        if (!this.recovery)
          this.gone(
            `a publish failed before it was sent (${raw.detail}); the channel was closed so that no confirm is credited to another message`,
          );
        return;
      default:
        entry.settle(raw);
    }
  }

  /** Sends the entry on the current channel; `onRaw` hears once how it went. */
  private transmit(entry: Entry, onRaw: (raw: Raw) => void): void {
    const channel = this.channel;
    entry.returned = false;
    entry.channel = channel;
    let reported = false;
    const report = (raw: Raw) => {
      if (reported) return;
      reported = true;
      entry.onRaw = null;
      clearTimeout(entry.timer);
      onRaw(raw);
    };
    entry.onRaw = report;
    entry.timer = setTimeout(() => report({ kind: 'timeout' }), this.confirmTimeoutMs);
    const { exchange, routingKey, body, options } = entry.message;
    try {
      channel.publish(exchange, routingKey, body, options, (err: unknown) => {
        if (!err) report({ kind: 'ack', returned: entry.returned });
        else if ((err as Error).message === 'message nacked') report({ kind: 'nack' });
        // 'channel closed': channelClosed() reports, knowing whether the broker refused something
      });
    } catch (err) {
      // Once the channel is closed publish throws: nothing went out.
      if (this.closedReason !== null || this.exceptions.has(channel)) {
        report({ kind: 'unsent' });
        return;
      }
      // Any other synchronous error (a frame that cannot be encoded) would repeat on every
      // retry, so it spends the retry budget. amqplib has already queued this message's confirm
      // callback before encoding it, so from now on the broker's acks would be credited to the
      // wrong messages: the channel is given up and never trusted again (with recovery, the other
      // unconfirmed messages are resent one at a time on a fresh channel).
      const detail = (err as Error).message;
      this.exceptions.set(channel, { code: 0, text: `a publish failed before it was sent (${detail})` });
      if (this.recovery && !this.recovering) this.pausing = true;
      report({ kind: 'error', detail });
      void channel.close().catch(() => undefined);
    }
  }

  /** Sends one entry alone on the current channel and waits for how it went. */
  private alone(entry: Entry): Promise<Raw> {
    return new Promise<Raw>((resolve) => this.transmit(entry, resolve));
  }

  /** Replaces the current channel with a fresh one; false (and gone) when none can be had. */
  private async freshChannel(): Promise<boolean> {
    try {
      const channel = await this.recovery!.reopen();
      this.channel = channel;
      this.attach(channel);
      return true;
    } catch (err) {
      this.gone(`cannot open a new channel after the broker refused a message: ${(err as Error).message}`);
      return false;
    }
  }

  /** Whether the probe comes back as a return on the current channel (so the channel still works). */
  private async probeWorks(): Promise<Raw> {
    const message = this.recovery!.probe();
    const probe = aloneEntry(message);
    this.outstanding.set(message.options.messageId, probe);
    try {
      return await this.alone(probe);
    } finally {
      this.outstanding.delete(message.options.messageId);
    }
  }

  /** Sends each suspect again alone, so a refusal names its message; see the class comment. */
  private async recover(first: { code: number; text: string }): Promise<void> {
    this.recovering = true;
    // Every unconfirmed message has heard of the close by now (channelClosed reported to each).
    const suspects = this.suspects;
    let last = first;
    try {
      if (!(await this.freshChannel())) return;
      while (suspects.length > 0 && this.closedReason === null) {
        const entry = suspects.shift()!;
        const known = this.refusedTopics.get(entry.message.routingKey);
        if (known) {
          entry.settle({ kind: 'refused', ...known, sent: true });
          continue;
        }
        if (this.clock() + this.confirmTimeoutMs > entry.notAfter) {
          entry.settle({ kind: 'unknown' });
          continue;
        }
        const raw = await this.alone(entry);
        if (raw.kind !== 'exception') {
          entry.settle(raw);
          if (raw.kind === 'closed') this.gone('channel closed');
          else if (raw.kind === 'error' && !(await this.freshChannel())) return;
          // A broker too slow to confirm one message alone (an alarm?) would take a confirm
          // timeout per suspect: the rest are released unsent instead (finally, below).
          else if (raw.kind === 'timeout') return;
          continue;
        }
        last = raw;
        // Refused alone. A working exchange still returns the probe: then it was this message.
        if (!(await this.freshChannel())) {
          entry.settle({ kind: 'unknown' });
          return;
        }
        const probe = await this.probeWorks();
        if (probe.kind === 'ack' && probe.returned) {
          this.refusals += 1;
          const rk = entry.message.routingKey;
          if (raw.code === 403 && raw.text.includes(`topic '${rk}'`))
            this.refusedTopics.set(rk, { code: raw.code, text: raw.text });
          entry.settle({ kind: 'refused', code: raw.code, text: raw.text, sent: true });
          continue;
        }
        entry.settle({ kind: 'unknown' });
        this.refusing = probe.kind === 'exception';
        const why =
          probe.kind === 'exception'
            ? `the return probe was refused too (${probe.code} ${probe.text}): the exchange takes no message on this channel`
            : probe.kind === 'ack'
              ? 'the return probe came back without a return, so no refusal could be told from the channel'
              : `the return probe was not confirmed (${probe.kind})`;
        this.gone(`after the broker refused a message (${raw.code} ${raw.text}), ${why}`);
        return;
      }
    } finally {
      for (const entry of suspects.splice(0)) entry.settle({ kind: 'unknown' });
      this.recovering = false;
      this.pausing = false;
      if (this.closedReason === null && this.exceptions.has(this.channel)) {
        // The last probe or resend closed the fresh channel too: start over on another.
        void this.recover(last);
      } else this.wakeAll();
    }
  }

  /**
   * Publishes `message` alone and reports how it went, without any recovery: for the return
   * probe a run sends before anything else. A channel exception leaves the publisher gone.
   */
  async sendAlone(message: Message): Promise<PublishOutcome> {
    await this.slot();
    if (this.closedReason !== null) return { kind: 'unsent' };
    const probe = aloneEntry(message);
    this.outstanding.set(message.options.messageId, probe);
    this.recovering = true;
    let raw: Raw;
    try {
      raw = await this.alone(probe);
    } finally {
      this.outstanding.delete(message.options.messageId);
      this.recovering = false;
    }
    if (raw.kind === 'exception') {
      this.gone(`the broker closed the channel: ${raw.code} ${raw.text}`);
      return { kind: 'refused', code: raw.code, text: raw.text, sent: true };
    }
    if (raw.kind === 'closed' || raw.kind === 'error') this.gone(raw.kind === 'error' ? raw.detail : 'channel closed');
    this.wakeAll();
    return raw;
  }

  /** Closes the channel on purpose; only an unexpected close counts as the broker going away. */
  async close(): Promise<void> {
    if (this.closedReason !== null) return;
    this.closedReason = 'closed by fcctl';
    this.closedOnPurpose = true;
    for (const entry of this.suspects.splice(0)) entry.settle({ kind: 'unknown' });
    this.wakeAll();
    // Bounded: a broker that blocks the connection never answers; the connection's close drops it.
    await within(this.channel.close(), CLOSE_TIMEOUT_MS);
    // A close the broker did not answer (a connection it blocks is not read) never reaches the
    // unconfirmed messages: they learn it here, not at their confirm timeout (a stop with
    // --drain-seconds 2 during a memory alarm waited 15 s for it).
    for (const entry of [...this.outstanding.values()]) entry.settle({ kind: 'closed' });
  }

  /** Why the channel went away unexpectedly, or null. */
  get lost(): string | null {
    return this.closedOnPurpose ? null : this.closedReason;
  }
}

/** The entry of a message sent alone (a probe): no deadline, no timer, settled by its caller. */
function aloneEntry(message: Message): Entry {
  return {
    message,
    notAfter: Number.POSITIVE_INFINITY,
    returned: false,
    channel: null,
    timer: undefined,
    onRaw: null,
    settle: () => undefined,
  };
}
