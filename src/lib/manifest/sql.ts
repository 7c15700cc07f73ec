/**
 * The manifest page queries, one per side: a keyset page on `answer_uuid` within one school and
 * form, read along the side's `(sch_id, form_uuid, answer_uuid)` index — equality on the first
 * two columns and a range on the third, so the index gives the order (no filesort) and a page
 * reads only its own rows however large the table. The index is named (`FORCE INDEX`): when one
 * school and form is most of the table, the optimizer might otherwise prefer a full scan and a
 * sort, which is fine once and ruinous once per page. `fcctl db check` verifies both indexes.
 */
import { ANSWER_COLUMNS } from '../answers/sql.js';
import type { Statement } from '../db/statement.js';
import { isPositiveIntegerText } from '../ids.js';
import type { ManifestSide } from './row.js';
import type { ShardRange } from './shard.js';

/** What one page asks for. */
export interface ManifestPageQuery {
  /** the school, as decimal text (bound as a BigInt: exact) */
  readonly schId: string;
  readonly formUuid: string;
  /** continue after this answer uuid; null for the first page */
  readonly after: string | null;
  /** the shard's key range (unbounded: the whole form) */
  readonly range?: ShardRange;
  /** read no key after this one (`answer_uuid <= upTo`): a page of a range planned ahead by `manifest scan` */
  readonly upTo?: string | null;
  /** rows to read: the page size plus one, to know whether the page is the last */
  readonly limit: number;
}

/** The index each side's page query reads along. */
export const MANIFEST_INDEX: Readonly<Record<ManifestSide, { readonly table: string; readonly index: string }>> = {
  sh: { table: 'fc_answer_projection', index: 'idx_projection_manifest' },
  fc: { table: 'answer', index: 'idx_answer_manifest' },
};

/** The columns of a projection row a manifest needs: no snapshot, no database id. */
export const SH_MANIFEST_COLUMNS =
  'answer_uuid, answer_revision, content_hash, is_deleted, sch_id, create_time, retired_at';

function where(q: ManifestPageQuery): { clause: string; params: unknown[] } {
  if (!isPositiveIntegerText(q.schId))
    throw new TypeError(`schId must be a positive integer, got ${JSON.stringify(q.schId)}`);
  if (!Number.isSafeInteger(q.limit) || q.limit < 1)
    throw new TypeError(`limit must be a positive integer, got ${q.limit}`);
  const parts = ['sch_id = ?', 'form_uuid = ?'];
  const params: unknown[] = [BigInt(q.schId), q.formUuid];
  if (q.range?.lower != null) {
    parts.push('answer_uuid >= ?');
    params.push(q.range.lower);
  }
  if (q.range?.upper != null) {
    parts.push('answer_uuid < ?');
    params.push(q.range.upper);
  }
  if (q.after !== null) {
    parts.push('answer_uuid > ?');
    params.push(q.after);
  }
  if (q.upTo != null) {
    parts.push('answer_uuid <= ?');
    params.push(q.upTo);
  }
  return { clause: parts.join(' AND '), params };
}

/**
 * The SH page: `fc_answer_projection` rows of one school and form, retired ones included (they
 * carry `retired_at`, so the diff can tell "already retired" from "absent at FC").
 * @example selectShManifestPage({ schId: '5', formUuid: 'f…', after: null, limit: 201 })
 */
export function selectShManifestPage(q: ManifestPageQuery): Statement {
  const { clause, params } = where(q);
  return {
    sql: `SELECT ${SH_MANIFEST_COLUMNS} FROM fc_answer_projection FORCE INDEX (idx_projection_manifest) WHERE ${clause} ORDER BY answer_uuid LIMIT ?`,
    params: [...params, q.limit],
  };
}

/**
 * The FC page: the `answer` rows of one school and form with every column the snapshot is built
 * from (the content hash is computed from them, SPEC §3), tombstones included.
 * @example selectFcManifestPage({ schId: '5', formUuid: 'f…', after: 'a…', limit: 201 })
 */
export function selectFcManifestPage(q: ManifestPageQuery): Statement {
  const { clause, params } = where(q);
  return {
    sql: `SELECT ${ANSWER_COLUMNS} FROM answer FORCE INDEX (idx_answer_manifest) WHERE ${clause} ORDER BY answer_uuid LIMIT ?`,
    params: [...params, q.limit],
  };
}

/** The page query of a side. */
export function selectManifestPage(side: ManifestSide, q: ManifestPageQuery): Statement {
  return side === 'sh' ? selectShManifestPage(q) : selectFcManifestPage(q);
}

/**
 * The key that ends the next page and the one after it, read from the index alone (no row is
 * visited): `LIMIT 2 OFFSET size-1` after `after`. Two keys mean a full page follows and more after
 * it, so the page is the range `(after, first key]`; fewer mean the rest fits one page. `manifest
 * scan` plans its pages ahead with it, so that several page queries can run at once.
 * @example selectManifestBoundary('sh', { schId: '5', formUuid: 'f…', after: null, limit: 500 })
 */
export function selectManifestBoundary(side: ManifestSide, q: ManifestPageQuery): Statement {
  const { clause, params } = where(q);
  const { table, index } = MANIFEST_INDEX[side];
  return {
    sql: `SELECT answer_uuid FROM ${table} FORCE INDEX (${index}) WHERE ${clause} ORDER BY answer_uuid LIMIT 2 OFFSET ${q.limit - 1}`,
    params,
  };
}

/**
 * How many rows a scan will read (for the progress view's total); an index-only count.
 * @example countManifestRows('sh', { schId: '5', formUuid: 'f…', after: null, limit: 1 })
 */
export function countManifestRows(side: ManifestSide, q: ManifestPageQuery): Statement {
  const { clause, params } = where(q);
  const { table, index } = MANIFEST_INDEX[side];
  return { sql: `SELECT COUNT(*) AS n FROM ${table} FORCE INDEX (${index}) WHERE ${clause}`, params };
}
