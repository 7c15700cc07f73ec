/**
 * What a replay of a FAILED or DEAD outbox row meets again, by the reason code `deliveries send`
 * wrote (issue 36 §11). A replay resets the row to PENDING and the relay sends the same row again:
 * the same event id, the same stored snapshot (immutable, SPEC §4–5), the same routing key. So a
 * row refused for what it holds fails again forever; a row refused for what was around it (the
 * broker, the registry, the relay's config) goes out once that is set right — by whom. Pure data.
 */
import type { FailReason } from '../deliveries/types.js';

/**
 * - `works`: a replay sends it `when` the passing cause is over;
 * - `after`: a replay sends it only after `who` sets something right outside the row;
 * - `never`: no replay ever sends it (the row itself is wrong): `who` must act; `fromFc` when FC's
 *   answer, at the row's revision and hash, can still reach SH by `projection repair-authoritative`.
 */
export type ReasonAdvice =
  | { readonly replay: 'works'; readonly when: string }
  | { readonly replay: 'after'; readonly who: string }
  | { readonly replay: 'never'; readonly who: string; readonly fromFc: boolean };

const works = (when: string): ReasonAdvice => ({ replay: 'works', when });
const after = (who: string): ReasonAdvice => ({ replay: 'after', who });
const never = (who: string, fromFc: boolean): ReasonAdvice => ({ replay: 'never', who, fromFc });

const BROKER_ADMIN = "the broker's admin";

/** Every code of {@link FailReason}: the compiler keeps the table closed. */
export const REASON_ADVICE: Readonly<Record<FailReason, ReasonAdvice>> = {
  NO_ROUTE: after(
    'the consumer (its team) must bind a queue to fc.answer.delivery.v2 for its routing key (no queue took it)',
  ),
  NACK: works('once the broker accepts messages again (a nack: a full queue, a disk or memory alarm)'),
  CONFIRM_TIMEOUT: works('once the broker confirms in time again'),
  CHANNEL_CLOSED: works('once the broker connection is stable again'),
  PUBLISH_ERROR: works('once the broker takes publishes again'),
  ACCESS_REFUSED: after(
    `${BROKER_ADMIN} must give fcctl's broker user write (and topic) permission on fc.answer.delivery.v2`,
  ),
  MESSAGE_TOO_LARGE: after(
    `${BROKER_ADMIN} must raise max_message_size above the message (its snapshot is immutable: a replay sends the same bytes)`,
  ),
  PRECONDITION_FAILED: after(
    `${BROKER_ADMIN} must find why the broker refused it (a precondition failed) and set it right`,
  ),
  NOT_FOUND: after(`${BROKER_ADMIN} must declare the exchange fc.answer.delivery.v2 (the broker did not find it)`),
  RESOURCE_LOCKED: works('once the broker releases the locked resource'),
  BROKER_REFUSED: after(`${BROKER_ADMIN} must find why the broker refused it (the reason text) and set it right`),
  RETRY_BUDGET_SPENT: works('now (it was not sent: its tries were over a lowered budget; a replay gives it a new one)'),
  SOURCE_MISMATCH: after(
    "whoever runs the relay must configure the row's source app key as FCCTL_APP_KEY, or the producer (FC team) must own the row",
  ),
  REGISTRY_MISMATCH: after(
    "the FC team must make application_info's row of FCCTL_APP_CODE carry that app code and FCCTL_APP_KEY (or the relay's config be corrected)",
  ),
  REGISTRY_UNREACHABLE: works('once the relay reads the FC registry again'),
  INVALID_ROUTING_KEY: never(
    "the consumer key or school of the row cannot make a routing key (SPEC §4): the FC team must register the consumer under a credential key without . * # or whitespace and a positive school id, and the producer write the answer's rows for it anew",
    false,
  ),
  INVALID_EVENT: never(
    'the producer (FC team) wrote an event id, event type or occurred_at no envelope can carry: it must write a correct row',
    true,
  ),
  SNAPSHOT_INVALID: never(
    "the producer (FC team) stored a snapshot that is not the closed set of ten members (or not this consumer's intent): it must write a correct row",
    true,
  ),
  SNAPSHOT_HASH_MISMATCH: never(
    "the producer (FC team) stored a snapshot that does not hash to the row's content_hash: it must find why and write a correct row",
    true,
  ),
};

/**
 * The advice of a `last_error` code; a code fcctl does not write: a person must find out why first.
 * @example reasonAdvice('SNAPSHOT_HASH_MISMATCH').replay // 'never'
 */
export function reasonAdvice(code: string): ReasonAdvice {
  return Object.hasOwn(REASON_ADVICE, code)
    ? REASON_ADVICE[code as FailReason]
    : after(`a person must find out why first (${JSON.stringify(code.slice(0, 40))} is not a reason fcctl writes)`);
}
