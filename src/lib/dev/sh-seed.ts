/**
 * `dev seed`, SH side: `fc_answer_projection` rows for the seeded FC answers, with drift of every
 * kind `reconcile diff` tells apart, so a seeded pair of databases exercises the whole
 * reconciliation. Pure planning (`planShSeed`: the FC plan in, rows and the expected category of
 * each answer out, deterministic) and one writer. It never changes the FC plan: its randomness
 * comes from its own labels.
 *
 * Drift, by category (`src/lib/reconcile/diff/decide.ts`), with n seeded answers:
 * - `MISSING_LOCAL` max(1, 5 % of n): no projection row;
 * - `STALE_LOCAL` max(1, 5 %), among answers with revision ≥ 2: revision one lower, an older snapshot;
 * - `HASH_CONFLICT` max(1, 3 %): same revision, another snapshot (conflict_flag 1, as the consumer marks it);
 * - `LOCAL_AHEAD` max(1, 3 %): revision one higher, a later snapshot;
 * - `IN_SYNC`: every other answer, the FC snapshot exactly (every 7th LINKED to an intent/apply/flow);
 * - rows of answers FC does not have, max(1, 2 %) each: `ABSENT_AT_FC` (created in the seed's week),
 *   `ABSENT_CREATED_AFTER_TASK_START` (created from {@link SH_SEED_AFTER_TIME}), `ABSENT_CREATE_TIME_NULL`,
 *   `RETIRED` (created in the seed's week, `retired_at` and `retire_proof_id` set).
 *
 * Any task start from {@link SH_SEED_TASK_START_WINDOW}`.from` to `.until` classifies the rows
 * exactly so (the real clock's NOW() included, until 2099).
 */
import type { PoolConnection } from 'mysql2/promise';
import { buildAnswerSnapshot } from '../answers/snapshot.js';
import type { Db } from '../db/connect.js';
import { CATEGORIES, type Category } from '../reconcile/diff/decide.js';
import { Rng, seededUuid } from './random.js';
import { addSeconds, type SeedAnswerRow, type SeedPlan } from './seed.js';

/** "Created after the task start" rows are created from this time on (one minute apart). */
export const SH_SEED_AFTER_TIME = '2099-01-01 00:00:00';
/** Task starts that classify the seeded rows as planned: after every other seeded create time, before {@link SH_SEED_AFTER_TIME}. */
export const SH_SEED_TASK_START_WINDOW = { from: '2026-10-31 00:00:00', until: '2098-12-31 23:59:59' } as const;

/** One `fc_answer_projection` row of the seed. */
export interface ShProjectionRow {
  readonly answer_uuid: string;
  readonly sch_id: string;
  readonly form_uuid: string;
  readonly form_version: number;
  readonly answer_revision: number;
  readonly content_hash: string;
  readonly is_deleted: number;
  readonly snapshot_json: string;
  readonly link_state: 'UNLINKED' | 'LINKED';
  readonly intent_id: string | null;
  readonly apply_id: number | null;
  readonly flow_guid: string | null;
  readonly conflict_flag: number;
  readonly projection_version: number;
  readonly create_time: string | null;
  readonly update_time: string | null;
  readonly retired_at: string | null;
  readonly retire_proof_id: string | null;
}

/** The category `reconcile diff` is expected to give an answer of the seed. */
export interface ShDriftEntry {
  readonly category: Category;
  readonly answerUuid: string;
  readonly schId: string;
  readonly formUuid: string;
}

export interface ShSeedPlan {
  readonly rows: readonly ShProjectionRow[];
  /** every seeded answer (FC, SH or both) with its expected category */
  readonly drift: readonly ShDriftEntry[];
}

const STATUSES = ['processing', 'processed', 'rejected'] as const;

function snapshotOf(a: SeedAnswerRow) {
  return buildAnswerSnapshot(a);
}

function projection(
  a: SeedAnswerRow,
  fields: Partial<ShProjectionRow> & Pick<ShProjectionRow, 'create_time'>,
): ShProjectionRow {
  const snap = snapshotOf(a);
  return {
    answer_uuid: a.answer_uuid,
    sch_id: a.sch_id,
    form_uuid: a.form_uuid,
    form_version: a.form_version,
    answer_revision: a.answer_revision,
    content_hash: snap.contentHash,
    is_deleted: a.is_deleted,
    snapshot_json: snap.snapshotJson,
    link_state: 'UNLINKED',
    intent_id: null,
    apply_id: null,
    flow_guid: null,
    conflict_flag: 0,
    projection_version: 1,
    update_time: a.update_time,
    retired_at: null,
    retire_proof_id: null,
    ...fields,
  };
}

/**
 * The SH rows for a seeded FC plan, with the category of every answer; pure and deterministic.
 * @example const { rows, drift } = planShSeed(1, planSeed(options))
 */
export function planShSeed(seed: number, plan: Pick<SeedPlan, 'answers'>): ShSeedPlan {
  const answers = plan.answers;
  const n = answers.length;
  const quota = (p: number) => (n === 0 ? 0 : Math.max(1, Math.floor(n * p)));
  const categoryOf = driftCategories(seed, answers, quota);
  const rows: ShProjectionRow[] = [];
  const drift: ShDriftEntry[] = [];
  let inSync = 0;
  answers.forEach((a, i) => {
    const category = categoryOf.get(a.answer_uuid)!;
    drift.push({ category, answerUuid: a.answer_uuid, schId: a.sch_id, formUuid: a.form_uuid });
    const linked = category === 'IN_SYNC' && inSync++ % 7 === 3;
    const row = projectionOf(seed, a, i, category, linked);
    if (row !== null) rows.push(row);
  });
  absentRows(seed, answers, quota, rows, drift);
  return { rows, drift };
}

/** The category of each FC answer: the drift quotas taken in a seeded order, every other answer IN_SYNC. */
function driftCategories(
  seed: number,
  answers: readonly SeedAnswerRow[],
  quota: (p: number) => number,
): Map<string, Category> {
  const left: Partial<Record<Category, number>> = {
    MISSING_LOCAL: quota(0.05),
    STALE_LOCAL: quota(0.05),
    HASH_CONFLICT: quota(0.03),
    LOCAL_AHEAD: quota(0.03),
  };
  const eligible = (c: Category, a: SeedAnswerRow) => c !== 'STALE_LOCAL' || a.answer_revision >= 2;
  const rank = new Map(answers.map((a) => [a.answer_uuid, seededUuid(seed, 'sh-drift-order', a.answer_uuid)]));
  const ordered = [...answers].sort((x, y) => (rank.get(x.answer_uuid)! < rank.get(y.answer_uuid)! ? -1 : 1));
  const categoryOf = new Map<string, Category>();
  for (const a of ordered) {
    const c = (Object.keys(left) as Category[]).find((k) => left[k]! > 0 && eligible(k, a)) ?? 'IN_SYNC';
    if (c !== 'IN_SYNC') left[c]! -= 1;
    categoryOf.set(a.answer_uuid, c);
  }
  return categoryOf;
}

/** The projection row of FC answer `i` in its category; null for MISSING_LOCAL. */
function projectionOf(
  seed: number,
  a: SeedAnswerRow,
  i: number,
  category: Category,
  linked: boolean,
): ShProjectionRow | null {
  const rng = new Rng(seed, 'sh-projection', i);
  const created = addSeconds(a.create_time, rng.int(1, 30));
  switch (category) {
    case 'MISSING_LOCAL':
      return null;
    case 'IN_SYNC':
      return projection(a, {
        create_time: created,
        projection_version: a.answer_revision,
        ...(linked
          ? {
              link_state: 'LINKED' as const,
              intent_id: seededUuid(seed, 'intent', a.answer_uuid),
              apply_id: 100_000 + i,
              flow_guid: `flow-${a.code}`,
            }
          : {}),
      });
    case 'STALE_LOCAL': {
      const older: SeedAnswerRow = {
        ...a,
        answer_revision: a.answer_revision - 1,
        is_deleted: 0,
        status: a.answer_revision - 1 === 1 ? 'submitted' : rng.pick(STATUSES),
        update_time: a.answer_revision - 1 === 1 ? null : addSeconds(a.create_time, 30),
      };
      return projection(older, { create_time: created, projection_version: older.answer_revision });
    }
    case 'HASH_CONFLICT': {
      const other: SeedAnswerRow = { ...a, status: `${a.status}-local` };
      return projection(other, { create_time: created, conflict_flag: 1, projection_version: a.answer_revision });
    }
    case 'LOCAL_AHEAD': {
      const newer: SeedAnswerRow = {
        ...a,
        answer_revision: a.answer_revision + 1,
        status: 'processed',
        update_time: addSeconds(a.update_time ?? a.create_time, 3600),
      };
      return projection(newer, { create_time: created, projection_version: newer.answer_revision });
    }
    default:
      throw new Error(`unexpected category ${category}`);
  }
}

/** Rows of answers FC does not have: each a copy of a seeded answer under a new uuid. */
function absentRows(
  seed: number,
  answers: readonly SeedAnswerRow[],
  quota: (p: number) => number,
  rows: ShProjectionRow[],
  drift: ShDriftEntry[],
): void {
  const n = answers.length;
  const absent: Array<[Category, number]> = [
    ['ABSENT_AT_FC', quota(0.02)],
    ['ABSENT_CREATED_AFTER_TASK_START', quota(0.02)],
    ['ABSENT_CREATE_TIME_NULL', quota(0.02)],
    ['RETIRED', quota(0.02)],
  ];
  let k = 0;
  for (const [category, count] of absent) {
    for (let j = 0; j < count; j++, k++) {
      const template = answers[(k * 7) % n]!;
      const a: SeedAnswerRow = { ...template, answer_uuid: seededUuid(seed, 'sh-absent', category, j) };
      const created = addSeconds(a.create_time, new Rng(seed, 'sh-absent-time', category, j).int(1, 600));
      const createTime =
        category === 'ABSENT_CREATED_AFTER_TASK_START'
          ? addSeconds(SH_SEED_AFTER_TIME, j * 60)
          : category === 'ABSENT_CREATE_TIME_NULL'
            ? null
            : created;
      rows.push(
        projection(a, {
          create_time: createTime,
          projection_version: a.answer_revision,
          ...(category === 'RETIRED'
            ? { retired_at: addSeconds(created, 86_400), retire_proof_id: `seed-proof-${seed}-${j}` }
            : {}),
        }),
      );
      drift.push({ category, answerUuid: a.answer_uuid, schId: a.sch_id, formUuid: a.form_uuid });
    }
  }
}

/** Counts of a drift list by category. */
export function driftCounts(drift: readonly ShDriftEntry[]): Partial<Record<Category, number>> {
  const counts: Partial<Record<Category, number>> = {};
  for (const d of drift) counts[d.category] = (counts[d.category] ?? 0) + 1;
  // In report order.
  return Object.fromEntries(CATEGORIES.filter((c) => counts[c] !== undefined).map((c) => [c, counts[c]])) as Partial<
    Record<Category, number>
  >;
}

/** Rows of `fc_answer_projection`. */
export async function countShSeedRows(db: Db): Promise<number> {
  return Number((await db.query<{ n: string }>('SELECT COUNT(*) AS n FROM fc_answer_projection'))[0]?.n ?? 0);
}

const COLUMNS = [
  'answer_uuid',
  'sch_id',
  'form_uuid',
  'form_version',
  'answer_revision',
  'content_hash',
  'is_deleted',
  'snapshot_json',
  'link_state',
  'intent_id',
  'apply_id',
  'flow_guid',
  'conflict_flag',
  'projection_version',
  'create_time',
  'update_time',
  'retired_at',
  'retire_proof_id',
] as const;

async function insertBatches(conn: PoolConnection, rows: readonly ShProjectionRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    // Explicit ids (1, 2, … in plan order): the same options give the same table, `--replace` included.
    const batch = rows
      .slice(i, i + 500)
      .map((r, j) => [i + j + 1, ...COLUMNS.map((c) => (c === 'sch_id' ? BigInt(r.sch_id) : r[c]))]);
    await conn.query(`INSERT INTO fc_answer_projection (id, ${COLUMNS.join(', ')}) VALUES ?`, [batch]);
  }
}

/**
 * Inserts the SH rows in one transaction; with `replace`, first deletes every projection row
 * (same transaction).
 */
export async function writeShSeed(db: Db, plan: ShSeedPlan, options: { replace: boolean }): Promise<void> {
  await db.transaction(async (conn) => {
    if (options.replace) await conn.query('DELETE FROM fc_answer_projection');
    await insertBatches(conn, plan.rows);
  });
}
