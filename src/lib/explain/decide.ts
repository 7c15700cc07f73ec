/**
 * `fcctl explain`'s decisions over plain facts (issue 29 §1): the verdict of one consumer and school,
 * the exact next command it suggests, relative times and the exit code. No I/O.
 */
import { ExitCode } from '../cli/exit.js';
import { shownAsIs } from '../cli/printable.js';
import { shellLine, shellWord } from '../cli/shell.js';
import { isReasonCode } from '../apply-command/resolve-unknown/decide.js';
import { consumerHasIt } from '../deliveries/replay/decide.js';
import { reasonAdvice } from './reasons.js';
import {
  idProblem,
  isAppKey,
  isContentHash,
  isRevisionText,
  isRoutableAppKey,
  isSchoolId,
  isTidy,
  isUuid,
} from '../ids.js';
import type {
  ApplyCommandFacts,
  GrantFacts,
  OutboxRow,
  ProjectionFacts,
  Verdict,
  VerdictFacts,
  VerdictKind,
} from './types.js';

/**
 * A row accepted longer ago than this and still not applied is no longer "in flight": a stale or
 * missing SH projection is then a finding of its own (the consumer lost or refused it), with its repair.
 */
export const APPLY_GRACE_SECONDS = 3600;

/**
 * SH's findings no delivery in flight can settle, shown at once (issue 36 §12): at FC's revision with
 * another hash or isDeleted the consumer's MQ rule keeps SH's row (conflict_flag) and only
 * `repair-authoritative` repairs it (SPEC §6); a higher local revision is never downgraded.
 */
const NOT_FIXED_BY_DELIVERY: readonly VerdictKind[] = ['SH_DIFFERS', 'SH_AHEAD'];

/**
 * A duration for a person: seconds under a minute, then minutes, hours, days (rounded).
 * @example duration(180) // '3m'
 */
export function duration(seconds: number): string {
  const s = Math.abs(Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.round(s / 60)}m`;
  if (s < 86_400) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

/**
 * When a time relative to now is: "in 3m", "5m ago", "now".
 * @example relative(180) // 'in 3m'
 */
export function relative(secondsFromNow: number | null): string | null {
  if (secondsFromNow === null) return null;
  if (Math.abs(secondsFromNow) < 1) return 'now';
  return secondsFromNow > 0 ? `in ${duration(secondsFromNow)}` : `${duration(secondsFromNow)} ago`;
}

/** The stable code of a `last_error` (the text before the first ':'). */
export function errorCode(lastError: string | null): string {
  if (lastError === null || lastError === '') return 'no error recorded';
  const i = lastError.indexOf(':');
  return i < 0 ? lastError : lastError.slice(0, i);
}

/** The key can make a routing key (SPEC §4): `deliveries replay` refuses any other. */
const routable = (key: string) => key !== '' && !/[.*#\s]/.test(key);

/**
 * The consumer reported the row taken in: a receipt other than CONFLICT, DEFERRED or REJECTED
 * (seed 000 §7.2) — the rule `deliveries replay` answers ALREADY_DELIVERED by, so the two agree.
 */
const takenIn = (row: OutboxRow) =>
  consumerHasIt({ consumer_applied_at: row.consumerAppliedAt, consumer_outcome: row.consumerOutcome });

/**
 * A value as data in a sentence: JSON-quoted (a quote, `$` or backtick shown, never read by a
 * shell), cut to 80 characters; control characters are escaped by the terminal view.
 * @example shownValue('$(touch x)') // '"$(touch x)"'
 */
export const shownValue = (v: string) => JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}…` : v);

/** One value a printed command puts in a flag, and whether it is what the flag takes. */
interface Claim {
  readonly what: string;
  readonly value: string;
  readonly fits: boolean;
  readonly should: string;
}
const claim = (what: string, value: string, fits: boolean, should: string): Claim => ({ what, value, fits, should });

/**
 * A command to print, every word shell-quoted, or why there is none: a value read from a database
 * that cannot be what it claims (a hash that is not 64 hex, an answer uuid that is not a UUID) is
 * shown as data and put into no command — the command would refuse it, and a person pastes it.
 */
export type Suggestion =
  | { readonly command: string; readonly execute: string; readonly problem: null }
  | { readonly command: null; readonly execute: null; readonly problem: string };

/**
 * The suggestion of a command that writes only with `--execute` (docs: a dry run first): `command`
 * the dry run, `execute` the same line with `--execute`, the write.
 */
function suggestion(claims: readonly Claim[], words: () => string[]): Suggestion {
  const bad = claims.find((c) => !c.fits);
  if (bad !== undefined)
    return {
      command: null,
      execute: null,
      problem: `${bad.what} ${shownValue(bad.value)} is not ${bad.should}: no command is printed with it`,
    };
  // a word the terminal view shows escaped (U+0085 as `\u0085`) would be copied from the screen as another value
  const hidden = words().find((w) => !shownAsIs(w));
  if (hidden === undefined)
    return { command: shellLine(words()), execute: shellLine([...words(), '--execute']), problem: null };
  return {
    command: null,
    execute: null,
    problem: `${shownValue(hidden)} holds characters a terminal cannot show as they are: no command is printed with it`,
  };
}

const schoolClaim = (schId: string) => claim('the school', schId, isSchoolId(schId), 'a positive whole number');
const answerClaim = (answerUuid: string) => claim('the answer uuid', answerUuid, isUuid(answerUuid), 'a UUID');

/**
 * `deliveries replay` of the row, as that command takes it, under an operation id that names the
 * row and its generation: the same suggestion twice is one operation, a later generation a new one.
 * @example replayCommand(row, 'a1…').command // 'fcctl deliveries replay --consumer k --school 5 --answer a1… --expected-revision 4 --operation-id explain:<eventId>:g0' (`.execute`: the same with --execute)
 */
export function replayCommand(row: OutboxRow, answerUuid: string): Suggestion {
  const generation = row.generation === null ? 'g0' : `g${row.generation.slice(0, 12)}`;
  const operationId = `explain:${row.eventId}:${generation}`;
  return suggestion(
    [
      claim(
        'the consumer key',
        row.consumerAppKey,
        isRoutableAppKey(row.consumerAppKey),
        'an app key of a routing key',
      ),
      schoolClaim(row.schId),
      answerClaim(answerUuid),
      claim('the revision', row.revision, isRevisionText(row.revision), 'a whole number'),
      claim('the event id', row.eventId, idProblem(operationId) === null, 'fit for an operation id'),
    ],
    () => [
      ...['deliveries', 'replay', '--consumer', row.consumerAppKey, '--school', row.schId, '--answer', answerUuid],
      ...['--expected-revision', row.revision, '--operation-id', operationId],
    ],
  );
}

/**
 * `projection repair-authoritative` of one answer, as that command takes it: the local triple as
 * read (or `--expect-missing`), under a proof id naming the answer and FC's revision.
 */
export function repairCommand(
  consumerAppKey: string,
  schId: string,
  answerUuid: string,
  local: ProjectionFacts | null,
  fcRevision: string,
): Suggestion {
  const proofId = `explain:${answerUuid}:${fcRevision}`;
  const expected =
    local === null
      ? ['--expect-missing']
      : [
          ...['--expected-revision', local.revision, '--expected-hash', local.contentHash],
          ...['--expected-is-deleted', local.isDeleted ? '1' : '0'],
        ];
  return suggestion(
    [
      claim('the consumer key', consumerAppKey, isAppKey(consumerAppKey), 'an app key'),
      schoolClaim(schId),
      answerClaim(answerUuid),
      ...(local === null
        ? []
        : [
            claim("SH's revision", local.revision, isRevisionText(local.revision), 'a whole number'),
            claim("SH's content_hash", local.contentHash, isContentHash(local.contentHash), '64 lowercase hex digits'),
          ]),
      claim("FC's revision", fcRevision, idProblem(proofId) === null, 'fit for a proof id'),
    ],
    () => [
      ...['projection', 'repair-authoritative', '--consumer', consumerAppKey, '--school', schId],
      ...['--answer', answerUuid, ...expected, '--proof-id', proofId],
    ],
  );
}

/** Why the grant does not let this row out, or null when it does (SPEC §5 check 2). */
export function grantProblem(grant: GrantFacts | null, rowGrantVersion: string | null): string | null {
  if (grant === null) return 'no grant';
  if (grant.revoked) return `grant revoked (version ${grant.grantVersion})`;
  if (!grant.read || !grant.subscribe) return `grant without ${grant.read ? 'subscribe' : 'read'}`;
  if (rowGrantVersion !== null && grant.grantVersion !== rowGrantVersion)
    return `grant version ${grant.grantVersion}, the row's ${rowGrantVersion}`;
  return null;
}

const cmp = (a: string, b: string) => {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
};

type Make = (kind: VerdictKind, text: string, s?: Suggestion | null) => Verdict;

/** A verdict with its commands (the dry run, then the write), or with why none is printed (a value that is not what it claims, as data). */
const withSuggestion = (make: Make, kind: VerdictKind, text: string, s: Suggestion): Verdict =>
  s.command !== null ? make(kind, text, s) : make(kind, `${text}; ${s.problem}`);

/**
 * The verdict of one consumer and school of an answer: where the answer is and why, and the exact
 * next command where one helps. Decided in the chain's order: FC, grant, outbox, SH.
 * @example verdictOf(facts).text // 'waiting: next retry in 3m after NACK ×2'
 */
export function verdictOf(f: VerdictFacts): Verdict {
  const v = deliveryVerdict(f);
  if (v.kind !== 'DELIVERED_APPLIED') return v;
  // delivered and applied: the flow center's part decides what is left (the first command not DONE)
  for (const c of f.applyCommands ?? []) {
    const apply = applyVerdict(c, v);
    if (apply !== null) return apply;
  }
  return v;
}

/** The verdict of the delivery and the projection: FC, grant, outbox, SH. */
function deliveryVerdict(f: VerdictFacts): Verdict {
  const make: Make = (kind, text, s = null) => ({
    consumerAppKey: f.consumerAppKey,
    schId: f.schId,
    kind,
    text,
    command: s?.command ?? null,
    execute: s?.execute ?? null,
  });
  if (f.fc.kind === 'unread') return make('UNKNOWN', 'FC not read: no verdict without the answer row and the outbox');
  if (f.fc.kind === 'absent') return absentVerdict(f, make);
  const fc = f.fc;
  const grant = f.grant === 'unread' ? null : f.grant;
  const row = f.newest;
  if (row === null && f.outboxCut)
    return make(
      'UNKNOWN',
      `no outbox row among those listed (the list is cut): explain again with ${shownAsIs(f.consumerAppKey) ? `--consumer ${shellWord(f.consumerAppKey)}` : 'that --consumer'} --school ${shellWord(f.schId)}`,
    );
  if (row === null) {
    // a grant not read is no grant missing: said as not read, never as "no grant"
    const problem = f.grant === 'unread' ? null : grantProblem(grant, null);
    if (f.grant === 'unread')
      return make(
        'NO_DELIVERY_ROW',
        `no outbox row: the producer has not written revision ${fc.revision} for this consumer; the grant was not read`,
      );
    return problem === null
      ? make('NO_DELIVERY_ROW', `no outbox row: the producer has not written revision ${fc.revision} for this consumer`)
      : make('NO_GRANT', `${problem} and no outbox row: nothing is delivered to this consumer and school`);
  }
  if (cmp(row.revision, fc.revision) < 0)
    return make(
      'OUTBOX_BEHIND',
      `outbox behind FC: newest row revision ${row.revision} (${row.state}), FC ${fc.revision}: the producer has not written revision ${fc.revision}`,
    );
  // FC's revision never goes back (seed 000 §2, a CAS): a newer outbox row means FC moved on between the
  // reads — SH holding that revision is a delivery, not "SH ahead" for a person to decide
  if (cmp(row.revision, fc.revision) > 0)
    return make(
      'UNKNOWN',
      `the outbox's newest row is revision ${row.revision}, FC's answer was read at revision ${fc.revision}: FC changed while explain read it — explain again (if it stays so, FC's answer went back, which the producer never does)`,
    );
  if (row.state === 'BROKER_ACCEPTED') return acceptedVerdict(f, row, fc.revision, make);
  return pendingVerdict(f, row, make);
}

/** FC has no answer row: what SH holds decides. */
function absentVerdict(f: VerdictFacts, make: Make): Verdict {
  if (f.sh.kind === 'found') {
    const sh = f.sh.row;
    if (sh.retiredAt !== null)
      return make('RETIRED', `absent at FC, retired at SH on ${sh.retiredAt} (proof ${sh.retireProofId ?? 'none'})`);
    return make(
      'ABSENT_AT_FC',
      `absent at FC, present at SH (revision ${sh.revision}): see \`fcctl retire-absent prove\` (from a reconcile run's retire-candidates.jsonl)`,
    );
  }
  const outbox = f.newest === null ? '' : ` (outbox: revision ${f.newest.revision}, ${f.newest.state})`;
  return make('ABSENT_AT_FC', `absent at FC${outbox}; ${f.sh.kind === 'unread' ? 'SH not read' : 'absent at SH'}`);
}

/**
 * The newest row is GRANT_REVOKED (terminal, SPEC §5): said against the grant as it is now. A grant
 * valid again (re-granted, maybe at a newer version) does not revive the row — `deliveries replay`
 * answers GRANT_REVOKED for it — so no replay is suggested; only a new row from the producer goes out.
 */
function revokedVerdict(row: OutboxRow, grant: GrantFacts | null | 'unread', make: Make): Verdict {
  const at = `GRANT_REVOKED (${errorCode(row.lastError)}) at grant version ${row.grantVersion}`;
  // replay asks about the consumer's receipt before the row's state (replay/decide.ts)
  const never = takenIn(row)
    ? `\`deliveries replay\` would answer ALREADY_DELIVERED (${row.consumerOutcome ?? 'a receipt'} at ${row.consumerAppliedAt})`
    : '`deliveries replay` would answer GRANT_REVOKED (a revoked row is never replayed)';
  if (grant === 'unread') return make('GRANT_REVOKED', `${at}; the grant was not read: ${never}`);
  const problem = grantProblem(grant, null);
  if (grant === null || problem !== null) return make('GRANT_REVOKED', `${at}; now: ${problem}; ${never}`);
  return make(
    'REGRANTED',
    `${at}; the grant is valid again at version ${grant.grantVersion}: ${never}; revision ${row.revision} goes out only in a new outbox row the producer writes under version ${grant.grantVersion}`,
  );
}

/** The newest row is PENDING, FAILED, DEAD or GRANT_REVOKED. */
function pendingVerdict(f: VerdictFacts, row: OutboxRow, make: Make): Verdict {
  if (row.state === 'GRANT_REVOKED') return revokedVerdict(row, f.grant, make);
  const v = sendableVerdict(f, row, make);
  // a grant not read (its section failed) is no grant missing: send and a replay read it themselves
  return f.grant === 'unread'
    ? { ...v, text: `${v.text}; the grant was not read: send and a replay check it first` }
    : v;
}

/** The newest row is PENDING, FAILED or DEAD: what send or a replay does with it. */
function sendableVerdict(f: VerdictFacts, row: OutboxRow, make: Make): Verdict {
  const tries = `${errorCode(row.lastError)} ×${row.retryCount}`;
  const grant = f.grant === 'unread' ? null : f.grant;
  const problem = f.grant === 'unread' ? null : grantProblem(grant, row.grantVersion);
  if (row.state === 'DEAD') {
    if (takenIn(row))
      return make('DELIVERED_APPLIED', `DEAD (${tries}) but applied by the consumer at ${row.consumerAppliedAt}`);
    if (problem !== null) return make('DEAD', `DEAD (${tries}); ${problem}: a replay would answer GRANT_REVOKED`);
    if (!routable(row.consumerAppKey))
      return make('DEAD', `DEAD (${tries}); the consumer key cannot make a routing key: no replay can send it`);
    return (
      refusedAgain(f, row, 'DEAD', `DEAD (${tries}), ${row.consumerOutcome} by the consumer`, make) ??
      failedVerdict(f, row, 'DEAD', `DEAD (${tries})`, make)
    );
  }
  if (problem !== null)
    return make('WILL_BE_REVOKED', `${row.state}, but ${problem}: the next send marks it GRANT_REVOKED`);
  if (row.claimLive && row.claimOwner !== null) {
    const holder = row.claimHolder;
    const where =
      holder === null
        ? 'no registry row'
        : `${holder.host} pid ${holder.pid}${holder.gone ? ', registry row gone' : holder.stale ? ', registry row stale' : ''}`;
    return make('SENDING', `being sent: claimed by ${row.claimOwner} until ${row.claimExpiresAt} (${where})`);
  }
  if (grant !== null && !grant.push)
    return make('HELD', `held: push_allowed = 0 (${row.state}${row.retryCount > 0 ? ` after ${tries}` : ''})`);
  const when =
    row.nextRetryInSeconds === null || row.nextRetryInSeconds <= 0
      ? 'due now'
      : `next retry ${relative(row.nextRetryInSeconds)}`;
  if (row.state !== 'FAILED') return make('WAITING', `waiting: ${when} (PENDING)`);
  const advice = reasonAdvice(errorCode(row.lastError));
  // the relay's own retries meet the same refusal: say so, and who acts, instead of a plain "waiting"
  if (advice.replay === 'never')
    return failedVerdict(f, row, 'CANNOT_SEND', `FAILED (${tries}), retried ${when} but it can never be sent`, make);
  const until =
    advice.replay === 'after'
      ? ` — it fails again until this is set right: ${advice.who}`
      : ` — it goes out ${advice.when}`;
  return make('WAITING', `waiting: ${when} after ${tries}${until}`);
}

/**
 * A DEAD row (or a FAILED one that can never be sent): the replay where one will send it, who must
 * act first or instead, and for a row whose stored snapshot or event is wrong, the repair that
 * brings FC's answer to SH (SPEC §6: built from the FC row, not from the outbox) when FC's answer
 * is the row's revision and hash.
 */
function failedVerdict(f: VerdictFacts, row: OutboxRow, kind: VerdictKind, head: string, make: Make): Verdict {
  const advice = reasonAdvice(errorCode(row.lastError));
  const replay = () => replayCommand(row, f.answerUuid);
  // a FAILED row under push_allowed = 0 is HELD before this; a DEAD one replayed is queued, then held by send
  const held = f.grant !== 'unread' && f.grant !== null && !f.grant.push;
  if (held && advice.replay !== 'never')
    return withSuggestion(
      make,
      kind,
      `${head}: push_allowed = 0 now — a replay queues it and send holds it, neither sent nor failed, until the FC team allows push again${advice.replay === 'after' ? `; before it can go out: ${advice.who}` : ''}`,
      replay(),
    );
  if (advice.replay === 'works')
    return withSuggestion(make, kind, `${head}: a replay sends it ${advice.when}`, replay());
  if (advice.replay === 'after')
    return withSuggestion(
      make,
      kind,
      `${head}: a replay fails again until this is set right: ${advice.who}; then replay it`,
      replay(),
    );
  const text = `${head}: a replay resends the same row and fails again — ${advice.who}`;
  const tail = kind === 'CANNOT_SEND' ? '; the relay retries it until its budget is spent (DEAD)' : '';
  if (!advice.fromFc) return make(kind, `${text}${tail}`);
  return fromFcVerdict(f, row, kind, text, tail, make);
}

/**
 * A row no replay delivers: the repair from FC where FC's answer is the row's revision and content
 * (SPEC §6: built from the FC row, not from the outbox) and SH lacks it, else why none.
 */
function fromFcVerdict(f: VerdictFacts, row: OutboxRow, kind: VerdictKind, text: string, tail: string, make: Make) {
  if (f.fc.kind !== 'found') return make(kind, `${text}${tail}`);
  const fc = f.fc;
  if (fc.revision !== row.revision || fc.contentHash !== row.contentHash || fc.isDeleted !== row.isDeleted)
    return make(
      kind,
      `${text}; FC's answer now (revision ${fc.revision}) is not the row's content: no repair from FC brings the row's revision${tail}`,
    );
  if (f.sh.kind === 'unread') return make(kind, `${text}; SH not read: no repair is suggested${tail}`);
  const sh = shVerdict(f, fc.revision, make);
  if (sh === null)
    return make(
      kind,
      `${text}; SH already holds revision ${fc.revision} as FC has it: nothing is missing at SH${tail}`,
    );
  const fromFc = `meanwhile FC's answer hashes to the row's content_hash at revision ${fc.revision}, so repair-authoritative builds it from FC: ${sh.text}`;
  return { ...sh, kind, text: `${text}; ${fromFc}${tail}` };
}

/**
 * The consumer's own refusal (seed 000 §7.2) that a replay of the same row meets again: CONFLICT
 * (the consumer keeps its other hash at that revision; only `repair-authoritative` repairs it, SPEC
 * §6) and REJECTED (a poison payload: closed set or hash — the producer's row). Null for DEFERRED
 * (the grant could not be confirmed: a replay works once it can) and for no receipt.
 */
function refusedAgain(f: VerdictFacts, row: OutboxRow, kind: VerdictKind, head: string, make: Make): Verdict | null {
  if (row.consumerOutcome === 'CONFLICT')
    return fromFcVerdict(
      f,
      row,
      kind,
      `${head}: the consumer keeps its other hash at revision ${row.revision}, and a replay meets the same CONFLICT — only projection repair-authoritative repairs it (SPEC §6)`,
      '',
      make,
    );
  if (row.consumerOutcome === 'REJECTED')
    return fromFcVerdict(
      f,
      row,
      kind,
      `${head}: the consumer refused the payload as poison (closed set or hash), and a replay resends the same row — the producer (FC team) must find why and write a correct row`,
      '',
      make,
    );
  return null;
}

/** The newest row was accepted by the broker: the consumer's receipt and SH's projection decide. */
function acceptedVerdict(f: VerdictFacts, row: OutboxRow, fcRevision: string, make: Make): Verdict {
  const reported = row.consumerAppliedAt !== null;
  const settled = reported || (row.acceptedAgoSeconds ?? 0) >= APPLY_GRACE_SECONDS;
  const sh = shVerdict(f, fcRevision, make);
  // in flight, SH behind or missing may yet be fixed by the delivery; SH at FC's revision with another
  // hash (or ahead) never is: a delivery of that revision changes nothing (SPEC §6), so it is said at once
  if (sh !== null && (settled || NOT_FIXED_BY_DELIVERY.includes(sh.kind))) return sh;
  if (reported && takenIn(row))
    return make(
      'DELIVERED_APPLIED',
      `delivered and applied (${row.consumerOutcome ?? 'no outcome'} at ${row.consumerAppliedAt})`,
    );
  if (reported) return refusedVerdict(f, row, make);
  const ago = row.acceptedAgoSeconds === null ? '' : ` (${duration(row.acceptedAgoSeconds)})`;
  return make('ACCEPTED_NOT_APPLIED', `accepted by the broker, not yet applied by the consumer${ago}`);
}

/**
 * Accepted, but the consumer's receipt says it did not take it in (CONFLICT, DEFERRED, REJECTED):
 * not delivered. `deliveries replay` queues such a row again when the grant still lets it out, and
 * is suggested where the consumer would take it then (DEFERRED), not where it refuses it again.
 */
function refusedVerdict(f: VerdictFacts, row: OutboxRow, make: Make): Verdict {
  const text = `accepted by the broker, not taken in by the consumer (${row.consumerOutcome} at ${row.consumerAppliedAt})`;
  const again = refusedAgain(f, row, 'CONSUMER_REFUSED', text, make);
  if (again !== null) return again;
  const problem = grantProblem(f.grant === 'unread' ? null : f.grant, row.grantVersion);
  if (f.grant === 'unread' || problem !== null || !routable(row.consumerAppKey))
    return make(
      'CONSUMER_REFUSED',
      `${text}${problem === null ? '' : `; ${problem}: a replay would answer GRANT_REVOKED`}`,
    );
  return withSuggestion(make, 'CONSUMER_REFUSED', text, replayCommand(row, f.answerUuid));
}

/** SH against FC once the delivery is done: null when they agree or SH was not read. */
function shVerdict(f: VerdictFacts, fcRevision: string, make: Make): Verdict | null {
  if (f.fc.kind !== 'found' || f.sh.kind === 'unread') return null;
  const fc = f.fc;
  const stop = repairStop(f);
  const withRepair = (kind: VerdictKind, text: string, local: ProjectionFacts | null) =>
    stop.refused !== null
      ? make(kind, `${text}; ${stop.refused}`)
      : withSuggestion(
          make,
          kind,
          `${text}${stop.note}`,
          repairCommand(f.consumerAppKey, f.schId, f.answerUuid, local, fcRevision),
        );
  if (f.sh.kind === 'absent') return withRepair('SH_MISSING', `SH has no projection (FC revision ${fcRevision})`, null);
  const sh = f.sh.row;
  if (sh.retiredAt !== null)
    return make(
      'RETIRED_PRESENT_AT_FC',
      `retired at SH (proof ${sh.retireProofId ?? 'none'}) but present at FC (revision ${fcRevision}): a person decides`,
    );
  const c = cmp(sh.revision, fcRevision);
  if (c < 0) return withRepair('SH_STALE', `SH stale (revision ${sh.revision}, FC ${fcRevision})`, sh);
  if (c > 0)
    return make('SH_AHEAD', `SH ahead (revision ${sh.revision}, FC ${fcRevision}): never downgraded; a person decides`);
  if ((fc.contentHash !== null && sh.contentHash !== fc.contentHash) || sh.isDeleted !== fc.isDeleted)
    return withRepair(
      'SH_DIFFERS',
      `SH differs at revision ${sh.revision} (hash ${sh.contentHash.slice(0, 12)}…, FC ${(fc.contentHash ?? '').slice(0, 12)}…)`,
      sh,
    );
  return null;
}

/**
 * What stands before `projection repair-authoritative` under this consumer: the projection's school
 * must be the answer's own, and the grant, read now, must let the repair through (SPEC §6: present,
 * not revoked, read and subscribe — the version is the grant's own when the snapshot is built from
 * FC), else the repair is DEFERRED and none is suggested (`refused`). With several consumers compared with the one SH projection the
 * suggestion is one per consumer, and `note` says only SH's own consumer's is the one to run.
 */
function repairStop(f: VerdictFacts): { readonly refused: string | null; readonly note: string } {
  const answerSchool = f.fc.kind === 'found' ? f.fc.schId : undefined;
  // repair-authoritative builds the snapshot of the answer's own school only (SCHOOL_MISMATCH)
  const problem =
    answerSchool !== undefined && answerSchool !== f.schId
      ? `FC's answer belongs to school ${answerSchool} (SCHOOL_MISMATCH)`
      : f.grant === 'unread'
        ? 'the grant was not read'
        : grantProblem(f.grant, null);
  if (problem !== null)
    return { refused: `a repair under ${f.consumerAppKey} would be DEFERRED: ${problem}`, note: '' };
  const all = f.shConsumers ?? [];
  if (all.length < 2) return { refused: null, note: '' };
  return {
    refused: null,
    note: ` — if SH is ${f.consumerAppKey}'s: SH serves one consumer, and ${all.length} at school ${f.schId} are compared with it (${all.join(', ')}); run only the repair under SH's own consumer key (or explain again with --consumer)`,
  };
}

/** Reasons after which a requeue ends DEAD again: the lookup finds the same instance, or the row cannot be sent. */
const PERSON_REASONS: Readonly<Record<string, string>> = {
  OWNERSHIP_MISMATCH:
    "the flow center's instance of this business key is someone else's (app key, submitter or flowGuid): a person must look at the flow instance (shown under apply commands); a requeue would find it again and end DEAD",
  UNEXPECTED_BRANCH:
    'the flow center answered a branch that does not settle it (a rejected or withdrawn instance, say): a person must look at the flow instance (shown under apply commands) first; a requeue would look it up and, finding it, settle the command DONE with its status as it is',
  INVALID_COMMAND: 'the command row cannot be sent as it is: a person must correct it (its service), then requeue it',
};

/**
 * `apply-command requeue` of one command, as a dry run (it answers WOULD_REQUEUE; the same line
 * with `--execute` requeues), under an operation id naming the row and when it last changed: the
 * same DEAD row is one operation, a row DEAD again after a requeue a new one.
 * @example requeueCommand(c).command // 'fcctl apply-command requeue --biz-type honor_apply --biz-id A-1 --operation-id explain:requeue:7:20261201100000'
 */
export function requeueCommand(c: ApplyCommandFacts): Suggestion {
  const operationId = `explain:requeue:${c.id ?? ''}:${(c.updateTime ?? '').replace(/\D/g, '')}`;
  const part = (what: string, value: string, width: number) =>
    claim(what, value, value !== '' && [...value].length <= width && isTidy(value), 'a key part requeue takes');
  return suggestion([part('the biz type', c.bizType, 32), part('the biz id', c.bizId, 64)], () => [
    'apply-command',
    'requeue',
    '--biz-type',
    c.bizType,
    '--biz-id',
    c.bizId,
    '--operation-id',
    operationId,
  ]);
}

/**
 * What is left at the flow center once the answer is delivered and applied, from the apply command
 * of its projection (seed 000 §7.3): null when DONE (or none), else who or what settles it next.
 * @example applyVerdict({ ...c, state: 'UNKNOWN' }, delivered)!.kind // 'APPLY_UNKNOWN'
 */
export function applyVerdict(c: ApplyCommandFacts, delivered: Verdict): Verdict | null {
  const verdict = (kind: VerdictKind, text: string, s: Suggestion | null = null): Verdict => ({
    ...delivered,
    kind,
    text: `${delivered.text}; flow apply command ${c.bizType}/${c.bizId} ${text}`,
    command: s?.command ?? null,
    execute: s?.execute ?? null,
  });
  const tries = `${errorCode(c.lastError)} ×${c.retryCount}`;
  const when =
    c.nextRetryInSeconds === null || c.nextRetryInSeconds <= 0 ? 'now (due)' : relative(c.nextRetryInSeconds);
  switch (c.state) {
    case 'DONE':
    case 'NO_COMMAND':
      return null;
    case 'PENDING':
      return verdict(
        'APPLY_PENDING',
        'is PENDING: its service has not sent it yet; apply-command resolve-unknown takes it once it is older than --pending-grace',
      );
    case 'UNKNOWN':
      return verdict(
        'APPLY_UNKNOWN',
        `is UNKNOWN (${c.lastError === null ? 'its send outcome unknown' : tries}): apply-command resolve-unknown settles it ${when} — it looks the instance up and resends only when there is none`,
      );
    case 'FAILED':
      return verdict('APPLY_FAILED', `is FAILED (${tries}): apply-command resolve-unknown tries it again ${when}`);
    case 'DEAD':
      return deadApplyVerdict(c, tries, verdict);
    default:
      return verdict('UNKNOWN', `is in state ${shownValue(c.state)}, which fcctl does not know`);
  }
}

/** A DEAD apply command: who must act, and the requeue where one would settle it. */
function deadApplyVerdict(
  c: ApplyCommandFacts,
  tries: string,
  verdict: (kind: VerdictKind, text: string, s?: Suggestion | null) => Verdict,
): Verdict {
  const person = PERSON_REASONS[errorCode(c.lastError)];
  if (person !== undefined) return verdict('APPLY_DEAD', `is DEAD (${tries}): ${person}`);
  // a reason resolve-unknown does not write: its service or a person put it there, for a cause fcctl cannot know
  if (!isReasonCode(errorCode(c.lastError)))
    return verdict(
      'APPLY_DEAD',
      `is DEAD (${tries}), not by a reason apply-command resolve-unknown writes: a person must find out why first — a requeue looks the instance up and resends the apply when the flow center has none`,
    );
  const s = requeueCommand(c);
  // the flow center's faults spent the budget: once they are over, a requeue looks the instance up first
  const cause = /_(HTTP_4\d\d|MALFORMED)$/.test(errorCode(c.lastError))
    ? 'the flow center refused or garbled its requests until the retry budget was spent: a person finds why there, then requeues it'
    : 'the flow center did not answer (an outage, timeouts) until the retry budget was spent: once it answers again, requeue it';
  const text = `is DEAD (${tries}): ${cause} — a dry run first, then the same line with --execute`;
  return s.command === null ? verdict('APPLY_DEAD', `${text}; ${s.problem}`) : verdict('APPLY_DEAD', text, s);
}

/**
 * The exit code of an explain: 1 when the subject was found nowhere that was read, 3 when a side
 * could not be reached (the others are still shown), else 0.
 * @example explainExitCode({ found: true, unreachable: 0 }) // 0
 */
export function explainExitCode(r: { readonly found: boolean; readonly unreachable: number }): ExitCode {
  if (r.unreachable > 0) return ExitCode.ENVIRONMENT;
  return r.found ? ExitCode.OK : ExitCode.ITEMS_FAILED;
}
