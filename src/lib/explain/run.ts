/**
 * `fcctl explain` (issue 29 §1): where one answer is and why, in the chain's order — FC, grants,
 * the outbox, SH, the apply commands and the flow center — and one verdict per consumer and school.
 * Read-only: every section is its own short read (store.ts), none inside a transaction; a side
 * not configured is shown so, a side that fails is shown so and the others still are.
 */
import type { OpenDb, ReadSection } from '../cli/section.js';
import { AnswerSnapshotError, buildAnswerSnapshot } from '../answers/snapshot.js';
import type { AnswerRow } from '../answers/sql.js';
import { UsageError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import type { FlowClient } from '../flow/client.js';
import { categoryInRunDir } from './category.js';
import { SECTION_LIMIT } from './sql.js';
import { explainExitCode, relative, verdictOf } from './decide.js';
import {
  appKeyKnown,
  readAnswer,
  readApplyByKey,
  readApplyKey,
  readAudit,
  readEvent,
  readGrants,
  readOutbox,
  readProjections,
  readReconcileTask,
} from './store.js';
import type {
  ApplyCommandFacts,
  AuditRow,
  FcAnswer,
  FlowLookup,
  GrantFacts,
  OutboxRow,
  ProjectionFacts,
  ReconcileFacts,
  Section,
  Unread,
  Verdict,
} from './types.js';

/** A side's connection, or null when it is not configured. */
export interface ExplainDeps {
  readonly fcDb: OpenDb;
  readonly shDb: OpenDb;
  readonly flow: (() => FlowClient) | null;
  /** reads each section by the deadline, a side that failed once not asked again (lib/cli/section.ts `sectionReader`) */
  readonly section: ReadSection;
}

export interface ExplainAnswerOptions {
  readonly answerUuid: string;
  readonly consumer?: string;
  readonly schId?: string;
  /** a reconcile run's directory, where the answer's category is read (category.ts) */
  readonly reconcileDir?: string;
}

export type OutboxEntry = OutboxRow & { readonly nextRetry: string | null };

export interface ShSection {
  readonly projections: readonly ProjectionFacts[];
  readonly audit: readonly AuditRow[];
  /** more audit rows than the newest {@link SECTION_LIMIT} shown */
  readonly auditTruncated: boolean;
  readonly reconcile: readonly ReconcileFacts[];
}

export interface ApplySection {
  readonly commands: ReadonlyArray<ApplyCommandFacts & { readonly flow: FlowLookup }>;
}

/** `--json`'s one document (docs/commands/explain.md). */
export interface ExplainDocument {
  readonly subject: Readonly<Record<string, string>>;
  readonly fc: Section<{ readonly answer: FcAnswer | null }>;
  readonly grants: Section<{ readonly rows: readonly GrantFacts[]; readonly truncated: boolean }>;
  /** `truncated`: the answer has more rows than the newest {@link SECTION_LIMIT} shown */
  readonly outbox: Section<{ readonly rows: readonly OutboxEntry[]; readonly truncated: boolean }>;
  readonly sh: Section<ShSection>;
  readonly applyCommands: Section<ApplySection>;
  readonly verdicts: readonly Verdict[];
  readonly found: boolean;
  readonly exitCode: number;
}

const ok = <T extends object>(s: Section<T>): (T & { status: 'ok' }) | null => (s.status === 'ok' ? s : null);

/** The FC answer row with its hash recomputed now, compared with the newest outbox row's. */
function fcAnswerOf(row: AnswerRow, outbox: readonly OutboxRow[]): FcAnswer {
  let contentHash: string | null = null;
  let hashError: string | null = null;
  try {
    contentHash = buildAnswerSnapshot(row).contentHash;
  } catch (err) {
    if (!(err instanceof AnswerSnapshotError)) throw err;
    hashError = err.message;
  }
  const newest = outbox[0] ?? null;
  return {
    answerUuid: row.answer_uuid,
    formUuid: row.form_uuid,
    formVersion: Number(row.form_version),
    schId: String(row.sch_id),
    revision: String(row.answer_revision),
    isDeleted: Number(row.is_deleted) === 1,
    updateTime: row.update_time,
    contentHash,
    hashError,
    outboxHash: newest?.contentHash ?? null,
    outboxRevision: newest?.revision ?? null,
    hashMatches:
      newest === null || contentHash === null || newest.revision !== String(row.answer_revision)
        ? null
        : newest.contentHash === contentHash,
  };
}

/**
 * Whether `--consumer` is in the app registry: null when not asked, or FC was not read (its
 * section says why). A key missing there may still name rows (a deregistered consumer's grants
 * and outbox rows): {@link refuseUnknownConsumer} decides once those are read.
 */
async function consumerRegistered(deps: ExplainDeps, consumer: string | undefined): Promise<boolean | null> {
  if (consumer === undefined) return null;
  const read = await deps.section(deps.fcDb, async (db) => ({ known: await appKeyKnown(db, consumer) }));
  return read.status === 'ok' ? read.known : null; // else the FC section says why
}

/** An unknown `--consumer` (exit 2): in no registry row, no outbox row and no grant of the answer. */
function refuseUnknownConsumer(
  consumer: string | undefined,
  registered: boolean | null,
  outbox: readonly OutboxRow[],
  grants: Section<{ rows: GrantFacts[] }>,
): void {
  if (registered !== false || outbox.length > 0 || (ok(grants)?.rows.length ?? 0) > 0) return;
  throw new UsageError(
    `--consumer ${consumer}: no such app key in application_info, nor in a grant or outbox row of this answer`,
  );
}

/**
 * Explains one answer: every section, then the verdicts.
 * @example const doc = await explainAnswer({ answerUuid }, { fcDb: ctx.fcDb, shDb: ctx.shDb, flow: null })
 */
export async function explainAnswer(o: ExplainAnswerOptions, deps: ExplainDeps): Promise<ExplainDocument> {
  const only = {
    ...(o.consumer !== undefined ? { consumer: o.consumer } : {}),
    ...(o.schId ? { schId: o.schId } : {}),
  };
  // independent reads of both sides at once: two databases that stop answering cost one deadline
  const [registered, fcRead, sh] = await Promise.all([
    consumerRegistered(deps, o.consumer),
    deps.section(deps.fcDb, async (db) => {
      const row = await readAnswer(db, o.answerUuid);
      const outbox = await readOutbox(db, o.answerUuid, only);
      return { row, outbox };
    }),
    deps.section(deps.shDb, (db) => readSh(db, o)),
  ]);
  const fc = ok(fcRead);
  const forms = new Set([
    ...(fc?.row ? [fc.row.form_uuid] : []),
    ...(fc?.outbox.map((r) => r.formUuid) ?? []),
    ...(ok(sh)?.projections.map((p) => p.formUuid) ?? []),
  ]);
  const schools = new Set([
    ...(o.schId ? [o.schId] : []),
    ...(!o.schId && fc?.row ? [String(fc.row.sch_id)] : []),
    ...(fc?.outbox.map((r) => r.schId) ?? []),
    ...(ok(sh)?.projections.map((p) => p.schId) ?? []),
  ]);
  const grants = await deps.section(deps.fcDb, async (db) => {
    const rows: GrantFacts[] = [];
    for (const form of forms) rows.push(...(await readGrants(db, form, [...schools], o.consumer)));
    return { rows: rows.slice(0, SECTION_LIMIT), truncated: rows.length > SECTION_LIMIT };
  });
  refuseUnknownConsumer(o.consumer, registered, fc?.outbox ?? [], grants);
  const applyCommands = await deps.section(deps.shDb, (db) => readApplyCommands(db, ok(sh)?.projections ?? [], deps));
  return documentOf(o, fcRead, grants, sh, applyCommands);
}

/**
 * `explain answer` of a uuid as pasted: looked up exactly as given first (the uuid columns compare
 * case-sensitively, and nothing in the schema makes FC's uuids lower-case); found nowhere, and
 * given with upper-case letters, its lower-case form — what FC's producer (Java `UUID.toString()`)
 * writes — is explained instead, the document's `subject.given` keeping what was typed.
 * @example (await explainAnswerAsPasted({ answerUuid: 'A1B2…' }, deps)).subject // { answerUuid: 'a1b2…', given: 'A1B2…' }
 */
export async function explainAnswerAsPasted(o: ExplainAnswerOptions, deps: ExplainDeps): Promise<ExplainDocument> {
  const doc = await explainAnswer(o, deps);
  const lower = o.answerUuid.toLowerCase();
  // only "found nowhere that was read" is retried: a side unreachable is no evidence of absence
  if (doc.found || doc.exitCode !== explainExitCode({ found: false, unreachable: 0 }) || lower === o.answerUuid)
    return doc;
  const again = await explainAnswer({ ...o, answerUuid: lower }, deps);
  return again.found ? { ...again, subject: { ...again.subject, given: o.answerUuid } } : doc;
}

/** The SH section: projections, audit rows, and the last reconcile run of each projection's pair. */
async function readSh(db: Db, o: ExplainAnswerOptions): Promise<ShSection> {
  const projections = await readProjections(db, o.answerUuid, o.schId);
  const auditRead = await readAudit(db, o.answerUuid);
  const audit = auditRead.slice(0, SECTION_LIMIT);
  const reconcile: ReconcileFacts[] = [];
  for (const p of projections) {
    const fromDir = o.reconcileDir
      ? await categoryInRunDir(o.reconcileDir, p.schId, p.formUuid, o.answerUuid).catch(() => null)
      : null;
    const task = await readReconcileTask(db, p.schId, p.formUuid, fromDir?.runId ?? null);
    if (task === null && fromDir === null) continue;
    reconcile.push({
      runId: task?.runId ?? fromDir?.runId ?? '',
      schId: p.schId,
      formUuid: p.formUuid,
      state: task?.state ?? 'not in fcctl_reconcile_task',
      finishedAt: task?.finishedAt ?? null,
      counts: task?.counts ?? null,
      category: fromDir?.category ?? 'not recorded',
      categorySource:
        fromDir?.source ??
        (o.reconcileDir
          ? `no finished diff of the pair in ${o.reconcileDir}`
          : 'the tables keep per-pair counts only: pass --reconcile-dir DIR (the run directory)'),
    });
  }
  return { projections, audit, auditTruncated: auditRead.length > SECTION_LIMIT, reconcile };
}

/** The apply commands of the projections' applies, each with its flow instance looked up now. */
async function readApplyCommands(db: Db, projections: readonly ProjectionFacts[], deps: ExplainDeps) {
  const commands: Array<ApplyCommandFacts & { flow: FlowLookup }> = [];
  for (const p of projections) {
    if (p.applyId === null) continue;
    const key = await readApplyKey(db, p.applyId);
    if (key === null) continue;
    const cmd = await readApplyByKey(db, key.bizType, key.bizId);
    if (cmd !== null) commands.push({ ...cmd, schId: p.schId, flow: await lookupFlow(deps, key.bizType, key.bizId) });
  }
  return { commands };
}

/** One signed GET, never an apply; not configured without a flow URL. */
export async function lookupFlow(deps: ExplainDeps, bizType: string, bizId: string): Promise<FlowLookup> {
  if (deps.flow === null) return { status: 'not configured' };
  try {
    const r = await deps.flow().lookup(bizType, bizId);
    if (r.kind === 'found') return { status: 'found', instance: { ...r.instance } };
    if (r.kind === 'not-found') return { status: 'not found' };
    return { status: 'error', error: `${r.kind}: ${r.detail}` };
  } catch (err) {
    return { status: 'error', error: (err as Error).message };
  }
}

function documentOf(
  o: ExplainAnswerOptions,
  fcRead: Section<{ row: AnswerRow | null; outbox: OutboxRow[] }>,
  grants: Section<{ rows: GrantFacts[]; truncated: boolean }>,
  sh: Section<ShSection>,
  applyCommands: Section<ApplySection>,
): ExplainDocument {
  const fc = ok(fcRead);
  const outboxCut = (fc?.outbox.length ?? 0) > SECTION_LIMIT;
  const outboxRows = (fc?.outbox ?? []).slice(0, SECTION_LIMIT);
  const answer = fc?.row ? fcAnswerOf(fc.row, outboxRows) : null;
  const verdicts = verdictsOf(
    { ...o, outboxCut },
    answer,
    fcRead.status === 'ok',
    outboxRows,
    ok(grants)?.rows ?? null,
    ok(sh),
    ok(applyCommands)?.commands ?? [],
  );
  const found = answer !== null || outboxRows.length > 0 || (ok(sh)?.projections.length ?? 0) > 0;
  const unreachable = [fcRead, sh, applyCommands, grants].filter((s) => s.status === 'unreachable').length;
  return {
    subject: {
      answerUuid: o.answerUuid,
      ...(o.consumer ? { consumer: o.consumer } : {}),
      ...(o.schId ? { school: o.schId } : {}),
    },
    fc: fc ? { status: 'ok', answer } : (fcRead as Unread),
    grants,
    outbox: fc
      ? {
          status: 'ok',
          rows: outboxRows.map((r) => ({ ...r, nextRetry: relative(r.nextRetryInSeconds) })),
          truncated: outboxCut,
        }
      : (fcRead as Unread),
    sh,
    applyCommands,
    verdicts,
    found,
    exitCode: explainExitCode({ found, unreachable }),
  };
}

/** One verdict per consumer and school with an outbox row or a grant (SH's schools too when FC lacks the answer). */
function verdictsOf(
  o: ExplainAnswerOptions & { readonly outboxCut: boolean },
  answer: FcAnswer | null,
  fcRead: boolean,
  outbox: readonly OutboxRow[],
  grants: readonly GrantFacts[] | null,
  sh: ShSection | null,
  applyCommands: readonly ApplyCommandFacts[],
): Verdict[] {
  const pairs = new Map<string, { consumer: string; schId: string }>();
  const add = (consumer: string, schId: string) => pairs.set(`${consumer}\u0000${schId}`, { consumer, schId });
  for (const r of outbox) add(r.consumerAppKey, r.schId);
  for (const g of grants ?? []) add(g.consumerAppKey, g.schId);
  if (pairs.size === 0) for (const p of sh?.projections ?? []) add(o.consumer ?? '-', p.schId);
  // the consumers each school's one projection is compared with (all of them without --consumer)
  const atSchool = (schId: string) => [...pairs.values()].filter((p) => p.schId === schId).map((p) => p.consumer);
  return [...pairs.values()].map(({ consumer, schId }) => {
    const projection = sh?.projections.find((p) => p.schId === schId);
    const newest = outbox.find((r) => r.consumerAppKey === consumer && r.schId === schId) ?? null;
    // the grant of the answer's own form: another form's grant of the consumer and school is no stand-in
    const form = answer?.formUuid ?? newest?.formUuid ?? projection?.formUuid;
    const grant = (g: GrantFacts) => g.consumerAppKey === consumer && g.schId === schId && g.formUuid === form;
    return verdictOf({
      answerUuid: o.answerUuid,
      consumerAppKey: consumer,
      schId,
      fc: !fcRead
        ? { kind: 'unread' }
        : answer === null
          ? { kind: 'absent' }
          : {
              kind: 'found',
              schId: answer.schId,
              revision: answer.revision,
              contentHash: answer.contentHash,
              isDeleted: answer.isDeleted,
            },
      grant: grants === null ? 'unread' : (grants.find(grant) ?? null),
      newest,
      outboxCut: o.outboxCut,
      shConsumers: atSchool(schId),
      sh: sh === null ? { kind: 'unread' } : projection ? { kind: 'found', row: projection } : { kind: 'absent' },
      applyCommands: applyCommands.filter((c) => c.schId === schId),
    });
  });
}

/** `explain event` of an event id FC has no row of (or FC was not read). */
export interface EventNotFound {
  readonly subject: Readonly<Record<string, string>>;
  readonly fc: Section<{ readonly answer: null }>;
  readonly found: false;
  readonly exitCode: number;
}

/**
 * `explain event`: the answer of the outbox row a DLQ message names, that row and its verdict first.
 * Not found when FC has no such event (or FC is not read): the document says so.
 */
export async function explainEvent(
  eventId: string,
  o: Omit<ExplainAnswerOptions, 'answerUuid'>,
  deps: ExplainDeps,
): Promise<ExplainDocument | EventNotFound> {
  // only the outbox knows an event id: without FC, "not found" would be a guess
  if (deps.fcDb === null)
    throw new UsageError('explain event reads the outbox: FCCTL_FC_DATABASE_URL is not configured');
  const ev = await deps.section(deps.fcDb, async (db) => ({ event: await readEvent(db, eventId) }));
  const event = ok(ev)?.event ?? null;
  if (event === null)
    return {
      subject: { eventId },
      fc: ev.status === 'ok' ? { status: 'ok', answer: null } : ev,
      found: false,
      exitCode: explainExitCode({ found: false, unreachable: ev.status === 'unreachable' ? 1 : 0 }),
    };
  const doc = await explainAnswer({ ...o, answerUuid: event.answerUuid }, deps);
  const first = <T extends { consumerAppKey: string; schId: string }>(rows: readonly T[], isIt: (r: T) => boolean) => [
    ...rows.filter(isIt),
    ...rows.filter((r) => !isIt(r)),
  ];
  const outbox =
    doc.outbox.status === 'ok'
      ? { ...doc.outbox, rows: first(doc.outbox.rows, (r) => r.eventId === eventId) }
      : doc.outbox;
  const verdicts = first(doc.verdicts, (v) => v.consumerAppKey === event.consumerAppKey && v.schId === event.schId);
  return { ...doc, subject: { eventId, ...doc.subject }, outbox, verdicts };
}

/** `explain command`: an apply command, its service_apply mirror and its flow instance looked up now. */
export async function explainCommand(
  key: { readonly bizType: string; readonly bizId: string },
  deps: ExplainDeps,
): Promise<{
  readonly subject: Readonly<Record<string, string>>;
  readonly applyCommands: Section<ApplySection>;
  readonly found: boolean;
  readonly exitCode: number;
}> {
  const applyCommands = await deps.section(deps.shDb, async (db) => {
    const cmd = await readApplyByKey(db, key.bizType, key.bizId);
    return { commands: cmd === null ? [] : [{ ...cmd, flow: await lookupFlow(deps, key.bizType, key.bizId) }] };
  });
  const found = (ok(applyCommands)?.commands.length ?? 0) > 0;
  const unreachable = applyCommands.status === 'unreachable' ? 1 : 0;
  return { subject: { ...key }, applyCommands, found, exitCode: explainExitCode({ found, unreachable }) };
}
