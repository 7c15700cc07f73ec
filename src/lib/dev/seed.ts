/**
 * `dev seed`: a consistent, reproducible FC data set for demos, tests and benchmarks.
 *
 * `planSeed` is pure: options in, rows out, the same rows for the same options. `writeSeed`
 * inserts them in one transaction with multi-row INSERTs. Shape of the data set:
 * - `application_info`: the publisher (id 1, configured app code and key) and one app per consumer;
 * - forms × schools × consumers `form_consumer_grant` rows; with the grant mix (default) a few are
 *   push-disabled (rows held), revoked, or advanced past the version their outbox rows carry;
 * - `answers` answers spread over the schools and forms, revision ≥ 1, some tombstoned;
 * - one PENDING `answer_delivery` row per answer (its current revision) and consumer, with the
 *   fc.canon.v1 snapshot and hash, the grant version at the time and the publisher's key;
 * - with `includeFaults`, rows built to fail the pre-publish checks (SPEC §5): consumer keys with
 *   `.` and `*`, a school id 0, a tampered snapshot.
 */
import type { PoolConnection } from 'mysql2/promise';
import { buildAnswerSnapshot } from '../answers/snapshot.js';
import type { Db } from '../db/connect.js';
import { isRoutableAppKey } from '../ids.js';
import { Rng, seededUuid } from './random.js';
import { PAD_OVERHEAD, padValues, valuesJson } from './values.js';

export interface SeedOptions {
  readonly seed: number;
  readonly answers: number;
  /** consumer app keys; their count is the number of consumers */
  readonly consumerKeys: readonly string[];
  readonly schools: number;
  /** grow each snapshot to this many bytes (0: natural size, about 700–1000 bytes) */
  readonly snapshotBytes: number;
  readonly publisher: { readonly appCode: string; readonly appKey: string };
  /** push-disabled, revoked and advanced grants among the normal ones */
  readonly grantMix: boolean;
  readonly includeFaults: boolean;
}

export const DEFAULT_PUBLISHER = { appCode: 'demo-publisher', appKey: '100021' } as const;

/** The forms answers belong to: code, version. */
export const SEED_FORMS = [
  { code: 'honor_apply', version: 4 },
  { code: 'leave_request', version: 2 },
  { code: 'scholarship_apply', version: 1 },
] as const;

/** Answers are spread over this many seconds after the base time; fixed so hashes are reproducible. */
const BASE_TIME = '2026-10-21 08:00:00';
const SPAN_SECONDS = 7 * 24 * 3600;

/** School ids start at 5 (seed 000's example school). */
export function schoolIds(count: number): string[] {
  return Array.from({ length: count }, (_, i) => String(5 + i));
}

/** Default consumer keys: six digits like the registry's (`100100`, …), skipping the publisher's. */
export function defaultConsumerKeys(count: number, publisherKey: string): string[] {
  const keys: string[] = [];
  for (let k = 100100; keys.length < count; k++) if (String(k) !== publisherKey) keys.push(String(k));
  return keys;
}

export interface AppRow {
  readonly id: number;
  readonly app_code: string;
  readonly app_key: string;
  readonly app_name: string;
}

export type GrantVariant = 'active' | 'push-disabled' | 'revoked' | 'advanced';

export interface GrantRow {
  readonly id: number;
  readonly form_uuid: string;
  readonly consumer_school_id: string;
  readonly consumer_app_key: string;
  /** the version in the grant table */
  readonly grant_version: number;
  /** the version outbox rows were written under (one less than the table's when advanced) */
  readonly rowVersion: number;
  readonly push_allowed: number;
  readonly revoked: number;
  readonly create_time: string;
  readonly update_time: string | null;
  readonly variant: GrantVariant;
}

export interface SeedAnswerRow {
  readonly id: number;
  readonly answer_uuid: string;
  readonly form_uuid: string;
  readonly form_version: number;
  readonly sch_id: string;
  readonly app_code: string;
  readonly code: string;
  readonly submitter_id: string;
  readonly subject_id: string | null;
  readonly status: string;
  readonly values_json: string;
  readonly answer_no: string | null;
  readonly create_time: string;
  readonly update_time: string | null;
  readonly is_deleted: number;
  readonly answer_revision: number;
}

export interface SeedDeliveryRow {
  readonly id: number;
  readonly event_id: string;
  readonly event_type: 'created' | 'updated' | 'tombstoned';
  readonly source_app_key: string;
  readonly consumer_app_key: string;
  readonly consumer_school_id: string;
  readonly grant_version: number;
  readonly form_uuid: string;
  readonly form_version: number;
  readonly answer_uuid: string;
  readonly answer_revision: number;
  readonly is_deleted: number;
  readonly content_hash: string;
  readonly occurred_at: string;
  readonly snapshot_json: string;
}

export type FaultKind = 'dotted-app-key' | 'wildcard-app-key' | 'school-zero' | 'tampered-snapshot';

export type SeedFault = {
  readonly kind: FaultKind;
  readonly eventId: string;
};

export interface SeedPlan {
  readonly apps: readonly AppRow[];
  readonly grants: readonly GrantRow[];
  readonly answers: readonly SeedAnswerRow[];
  readonly deliveries: readonly SeedDeliveryRow[];
  readonly faults: readonly SeedFault[];
}

// ---------------------------------------------------------------- times

/** `base + seconds` as a DATETIME string; UTC arithmetic on the fields, so no zone shifts in. */
export function addSeconds(base: string, seconds: number): string {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(base);
  if (!m) throw new TypeError(`not a DATETIME: ${base}`);
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const t = new Date(Date.UTC(y, mo - 1, d, h, mi, s) + seconds * 1000);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${t.getUTCFullYear()}-${p(t.getUTCMonth() + 1)}-${p(t.getUTCDate())} ${p(t.getUTCHours())}:${p(t.getUTCMinutes())}:${p(t.getUTCSeconds())}`;
}

// ---------------------------------------------------------------- plan

function grantKey(formUuid: string, schoolId: string, appKey: string): string {
  return `${formUuid}\u0000${schoolId}\u0000${appKey}`;
}

/** Which grants get which variant: a few of each, picked by seeded order, at least one each when there are ≥ 4 grants. */
function grantVariants(seed: number, keys: readonly string[]): Map<string, GrantVariant> {
  const variants = new Map<string, GrantVariant>(keys.map((k) => [k, 'active']));
  if (keys.length < 4) return variants;
  const per = Math.max(1, Math.floor(keys.length * 0.05));
  const rank = new Map(keys.map((k) => [k, seededUuid(seed, 'grant-order', k)]));
  const order = [...keys].sort((a, b) => (rank.get(a)! < rank.get(b)! ? -1 : 1));
  const kinds: GrantVariant[] = ['push-disabled', 'revoked', 'advanced'];
  for (const [k, kind] of kinds.entries())
    for (const key of order.slice(k * per, (k + 1) * per)) variants.set(key, kind);
  return variants;
}

function planAnswer(o: SeedOptions, i: number, forms: readonly string[], schools: readonly string[]): SeedAnswerRow {
  const rng = new Rng(o.seed, 'answer', i);
  const formIndex = Math.floor(i / schools.length) % SEED_FORMS.length;
  const form = SEED_FORMS[formIndex]!;
  const deleted = rng.chance(0.05);
  // Created = 1; every later change (edit, status, tombstone) adds one (seed 000 §2).
  let revision = rng.chance(0.7) ? 1 : rng.int(2, 5);
  if (deleted) revision += 1;
  const created = addSeconds(BASE_TIME, Math.floor((i * SPAN_SECONDS) / Math.max(1, o.answers)) + rng.int(0, 59));
  const updated = revision > 1 ? addSeconds(created, rng.int(60, 2 * 24 * 3600)) : null;
  const submitter = i % 17 === 3 ? (9007199254740993n + BigInt(i)).toString() : String(1000 + rng.int(0, 99999));
  return {
    id: i + 1,
    answer_uuid: seededUuid(o.seed, 'answer', i),
    form_uuid: forms[formIndex]!,
    form_version: form.version,
    sch_id: schools[i % schools.length]!,
    app_code: o.publisher.appCode,
    code: form.code,
    submitter_id: submitter,
    subject_id: rng.chance(0.3) ? null : String(rng.int(1, 5000)),
    status: revision === 1 ? 'submitted' : rng.pick(['processing', 'processed', 'rejected']),
    values_json: valuesJson(rng, form.code, i),
    answer_no: rng.chance(0.2) ? null : `NO${created.slice(0, 10).replace(/-/g, '')}${String(i).padStart(6, '0')}`,
    create_time: created,
    update_time: updated,
    is_deleted: deleted ? 1 : 0,
    answer_revision: revision,
  };
}

/** The answer's snapshot, grown to `snapshotBytes` when asked (the padding is part of `values`). */
function snapshotOf(
  answer: SeedAnswerRow,
  snapshotBytes: number,
): { answer: SeedAnswerRow; snapshotJson: string; contentHash: string } {
  let snap = buildAnswerSnapshot(answer);
  const natural = Buffer.byteLength(snap.snapshotJson);
  if (natural < snapshotBytes) {
    const padded = {
      ...answer,
      values_json: padValues(answer.values_json, Math.max(0, snapshotBytes - natural - PAD_OVERHEAD)),
    };
    snap = buildAnswerSnapshot(padded);
    return { answer: padded, ...snap };
  }
  return { answer, ...snap };
}

function eventType(a: SeedAnswerRow): SeedDeliveryRow['event_type'] {
  if (a.is_deleted === 1) return 'tombstoned';
  return a.answer_revision === 1 ? 'created' : 'updated';
}

/**
 * The whole data set for the options; pure and deterministic.
 * @example const plan = planSeed({ seed: 1, answers: 10, consumerKeys: ['100100'], schools: 1, snapshotBytes: 0, publisher: DEFAULT_PUBLISHER, grantMix: true, includeFaults: false })
 */
export function planSeed(o: SeedOptions): SeedPlan {
  const schools = schoolIds(o.schools);
  const forms = SEED_FORMS.map((f) => seededUuid(o.seed, 'form', f.code));
  const b = new PlanBuilder(o);
  b.apps.push(
    { id: 1, app_code: o.publisher.appCode, app_key: o.publisher.appKey, app_name: '表单中心 (publisher)' },
    ...o.consumerKeys.map((key, i) => ({
      id: i + 2,
      app_code: `consumer-${i + 1}`,
      app_key: key,
      app_name: `消费方 ${i + 1}`,
    })),
  );
  const triples: Array<[string, string, string]> = [];
  for (const f of forms) for (const s of schools) for (const c of o.consumerKeys) triples.push([f, s, c]);
  const variants = o.grantMix
    ? grantVariants(
        o.seed,
        triples.map(([f, s, c]) => grantKey(f, s, c)),
      )
    : new Map<string, GrantVariant>();
  for (const [f, s, c] of triples) b.addGrant(f, s, c, variants.get(grantKey(f, s, c)) ?? 'active');
  for (let i = 0; i < o.answers; i++) {
    const { answer, ...snap } = snapshotOf(planAnswer(o, i, forms, schools), o.snapshotBytes);
    b.answers.push(answer);
    b.snapshots.push(snap);
    for (const c of o.consumerKeys)
      b.addDelivery(answer, snap, c, answer.sch_id, b.grantByKey.get(grantKey(answer.form_uuid, answer.sch_id, c))!);
  }
  const faults = o.includeFaults ? addFaults(o, b) : [];
  return { apps: b.apps, grants: b.grants, answers: b.answers, deliveries: b.deliveries, faults };
}

/** The rows of a plan as they are built: ids follow the order rows are added in. */
class PlanBuilder {
  readonly apps: AppRow[] = [];
  readonly grants: GrantRow[] = [];
  readonly grantByKey = new Map<string, GrantRow>();
  readonly answers: SeedAnswerRow[] = [];
  readonly deliveries: SeedDeliveryRow[] = [];
  readonly snapshots: Array<{ snapshotJson: string; contentHash: string }> = [];
  private readonly gTime = addSeconds(BASE_TIME, -24 * 3600);
  constructor(private readonly o: SeedOptions) {}

  addGrant(formUuid: string, schoolId: string, appKey: string, variant: GrantVariant): GrantRow {
    const key = grantKey(formUuid, schoolId, appKey);
    const rowVersion = 1 + new Rng(this.o.seed, 'grant-version', key).int(0, 4);
    const g: GrantRow = {
      id: this.grants.length + 1,
      form_uuid: formUuid,
      consumer_school_id: schoolId,
      consumer_app_key: appKey,
      grant_version: variant === 'advanced' ? rowVersion + 1 : rowVersion,
      rowVersion,
      push_allowed: variant === 'push-disabled' ? 0 : 1,
      revoked: variant === 'revoked' ? 1 : 0,
      create_time: this.gTime,
      update_time: variant === 'active' ? null : addSeconds(BASE_TIME, SPAN_SECONDS + 3600),
      variant,
    };
    this.grants.push(g);
    this.grantByKey.set(key, g);
    return g;
  }

  addDelivery(
    a: SeedAnswerRow,
    snap: { snapshotJson: string; contentHash: string },
    appKey: string,
    schoolId: string,
    grant: GrantRow,
  ): SeedDeliveryRow {
    const row: SeedDeliveryRow = {
      id: this.deliveries.length + 1,
      event_id: seededUuid(this.o.seed, 'event', a.answer_uuid, a.answer_revision, appKey, schoolId),
      event_type: eventType(a),
      source_app_key: this.o.publisher.appKey,
      consumer_app_key: appKey,
      consumer_school_id: schoolId,
      grant_version: grant.rowVersion,
      form_uuid: a.form_uuid,
      form_version: a.form_version,
      answer_uuid: a.answer_uuid,
      answer_revision: a.answer_revision,
      is_deleted: a.is_deleted,
      content_hash: snap.contentHash,
      occurred_at: a.update_time ?? a.create_time,
      snapshot_json: snap.snapshotJson,
    };
    this.deliveries.push(row);
    return row;
  }
}

/** `includeFaults`: rows of the first answer built to fail the pre-publish checks, and one tampered snapshot. */
function addFaults(o: SeedOptions, b: PlanBuilder): SeedFault[] {
  const faults: SeedFault[] = [];
  const first = b.answers[0];
  if (!first) return faults;
  const snap = b.snapshots[0]!;
  // Grants are active, so each row passes the grant check and fails where it should (SPEC §5 step 3).
  const bad: Array<[FaultKind, string, string]> = [
    ['dotted-app-key', 'fault.dotted', first.sch_id],
    ['wildcard-app-key', 'fault*wild', first.sch_id],
  ];
  if (o.consumerKeys[0] !== undefined) bad.push(['school-zero', o.consumerKeys[0], '0']);
  for (const [kind, appKey, schoolId] of bad) {
    if (!b.apps.some((a) => a.app_key === appKey))
      b.apps.push({
        id: b.apps.length + 1,
        app_code: `fault-${b.apps.length + 1}`,
        app_key: appKey,
        app_name: `fault: ${kind}`,
      });
    const g =
      b.grantByKey.get(grantKey(first.form_uuid, schoolId, appKey)) ??
      b.addGrant(first.form_uuid, schoolId, appKey, 'active');
    faults.push({ kind, eventId: b.addDelivery(first, snap, appKey, schoolId, g).event_id });
  }
  // One normal row with an active grant whose stored snapshot was changed after hashing.
  const { deliveries, grantByKey } = b;
  const victim = deliveries.findIndex(
    (d) =>
      grantByKey.get(grantKey(d.form_uuid, d.consumer_school_id, d.consumer_app_key))?.variant === 'active' &&
      isRoutableAppKey(d.consumer_app_key) &&
      d.consumer_school_id !== '0',
  );
  if (victim >= 0) {
    const d = deliveries[victim]!;
    const a = b.answers.find((x) => x.answer_uuid === d.answer_uuid)!;
    deliveries[victim] = {
      ...d,
      snapshot_json: buildAnswerSnapshot({ ...a, status: `${a.status}-tampered` }).snapshotJson,
    };
    faults.push({ kind: 'tampered-snapshot', eventId: d.event_id });
  }
  return faults;
}

export const SEED_TABLES = ['application_info', 'form_consumer_grant', 'answer', 'answer_delivery'] as const;
export type SeedTable = (typeof SEED_TABLES)[number];

/** Rows per INSERT, and a byte budget well under MariaDB's default 16 MB max_allowed_packet. */
const BATCH_ROWS = 500;
const BATCH_BYTES = 4 * 1024 * 1024;

async function insertRows(
  conn: PoolConnection,
  table: SeedTable,
  columns: readonly string[],
  rows: ReadonlyArray<readonly unknown[]>,
): Promise<void> {
  let batch: Array<readonly unknown[]> = [];
  let bytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    await conn.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ?`, [batch]);
    batch = [];
    bytes = 0;
  };
  for (const row of rows) {
    batch.push(row);
    for (const v of row) bytes += typeof v === 'string' ? v.length * 3 : 8;
    if (batch.length >= BATCH_ROWS || bytes >= BATCH_BYTES) await flush();
  }
  await flush();
}

/** Row counts of the seed tables. */
export async function countSeedTables(db: Db): Promise<Record<SeedTable, number>> {
  const counts = {} as Record<SeedTable, number>;
  for (const t of SEED_TABLES)
    counts[t] = Number((await db.query<{ n: string }>(`SELECT COUNT(*) AS n FROM ${t}`))[0]?.n ?? 0);
  return counts;
}

/**
 * Inserts the plan in one transaction (all or nothing); with `replace`, first deletes what the
 * seed tables hold, in the same transaction. BIGINT values go in as BigInt: exact digits.
 */
export async function writeSeed(db: Db, plan: SeedPlan, options: { replace: boolean }): Promise<void> {
  await db.transaction(async (conn) => {
    if (options.replace) for (const t of [...SEED_TABLES].reverse()) await conn.query(`DELETE FROM ${t}`);
    for (const insert of [appInsert, grantInsert, answerInsert, deliveryInsert].map((of) => of(plan)))
      await insertRows(conn, insert.table, insert.columns, insert.rows);
  });
}

/** One table's rows of a seed, as `insertRows` writes them. */
interface SeedInsert {
  readonly table: SeedTable;
  readonly columns: readonly string[];
  readonly rows: readonly unknown[][];
}

const big = (v: string | number) => BigInt(v);

/** The `application_info` rows of a seed. */
function appInsert(plan: SeedPlan): SeedInsert {
  return {
    table: 'application_info',
    columns: ['id', 'app_code', 'app_key', 'app_name', 'status'],
    rows: plan.apps.map((a) => [a.id, a.app_code, a.app_key, a.app_name, 1]),
  };
}

/** The `form_consumer_grant` rows of a seed. */
function grantInsert(plan: SeedPlan): SeedInsert {
  return {
    table: 'form_consumer_grant',
    columns: [
      'id',
      'form_uuid',
      'consumer_school_id',
      'consumer_app_key',
      'grant_version',
      'read_allowed',
      'subscribe_allowed',
      'push_allowed',
      'revoked',
      'create_time',
      'update_time',
    ],
    rows: plan.grants.map((g) => [
      g.id,
      g.form_uuid,
      big(g.consumer_school_id),
      g.consumer_app_key,
      g.grant_version,
      1,
      1,
      g.push_allowed,
      g.revoked,
      g.create_time,
      g.update_time,
    ]),
  };
}

/** The `answer` rows of a seed. */
function answerInsert(plan: SeedPlan): SeedInsert {
  return {
    table: 'answer',
    columns: [
      'id',
      'answer_uuid',
      'form_uuid',
      'form_version',
      'sch_id',
      'app_code',
      'code',
      'submitter_id',
      'subject_id',
      'status',
      'values_json',
      'answer_no',
      'create_time',
      'update_time',
      'is_deleted',
      'answer_revision',
    ],
    rows: plan.answers.map((a) => [
      a.id,
      a.answer_uuid,
      a.form_uuid,
      a.form_version,
      big(a.sch_id),
      a.app_code,
      a.code,
      big(a.submitter_id),
      a.subject_id === null ? null : big(a.subject_id),
      a.status,
      a.values_json,
      a.answer_no,
      a.create_time,
      a.update_time,
      a.is_deleted,
      a.answer_revision,
    ]),
  };
}

/** The `answer_delivery` rows of a seed. */
function deliveryInsert(plan: SeedPlan): SeedInsert {
  return {
    table: 'answer_delivery',
    columns: [
      'id',
      'event_id',
      'event_type',
      'source_app_key',
      'consumer_app_key',
      'consumer_school_id',
      'grant_version',
      'form_uuid',
      'form_version',
      'answer_uuid',
      'answer_revision',
      'is_deleted',
      'content_hash',
      'occurred_at',
      'snapshot_json',
      'state',
      'retry_count',
      'create_time',
    ],
    rows: plan.deliveries.map((d) => [
      // Enqueued in the answer's own transaction (seed 000 §2): create_time is the change time.
      d.id,
      d.event_id,
      d.event_type,
      d.source_app_key,
      d.consumer_app_key,
      big(d.consumer_school_id),
      d.grant_version,
      d.form_uuid,
      d.form_version,
      d.answer_uuid,
      d.answer_revision,
      d.is_deleted,
      d.content_hash,
      d.occurred_at,
      d.snapshot_json,
      'PENDING',
      0,
      d.occurred_at,
    ]),
  };
}

/** Counts of a plan by kind, for the summary. */
export function planCounts(plan: SeedPlan): Record<string, number> {
  const counts: Record<string, number> = {
    application_info: plan.apps.length,
    form_consumer_grant: plan.grants.length,
    answer: plan.answers.length,
    answer_delivery: plan.deliveries.length,
  };
  for (const g of plan.grants) counts[`grants_${g.variant}`] = (counts[`grants_${g.variant}`] ?? 0) + 1;
  for (const d of plan.deliveries)
    counts[`deliveries_${d.event_type}`] = (counts[`deliveries_${d.event_type}`] ?? 0) + 1;
  counts['answers_deleted'] = plan.answers.filter((a) => a.is_deleted === 1).length;
  return counts;
}
