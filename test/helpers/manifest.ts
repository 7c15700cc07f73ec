import { createHash } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { buildAnswerSnapshot } from '../../src/lib/answers/snapshot.js';

/** A deterministic UUID-shaped id from a label (tests need stable, sortable, unique keys). */
export function testUuid(...parts: Array<string | number>): string {
  const h = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Projection rows as the tests arrange them (the columns a manifest reads, plus the NOT NULL ones). */
export interface TestProjection {
  readonly answerUuid: string;
  readonly schId?: number;
  readonly formUuid: string;
  readonly revision?: number;
  readonly contentHash?: string;
  readonly isDeleted?: number;
  /** a DATETIME, null, or `NOW()` for the database's clock */
  readonly createTime?: string | null;
  readonly retiredAt?: string | null;
}

/**
 * Inserts projection rows with multi-row INSERTs (5,000 per statement): fast enough for the
 * 50,000-row crash test. `createTime: 'NOW()'` uses the database clock.
 */
export async function insertProjections(
  admin: mysql.Connection,
  database: string,
  rows: readonly TestProjection[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += 5000) {
    const batch = rows.slice(i, i + 5000);
    const values: string[] = [];
    const params: unknown[] = [];
    for (const r of batch) {
      const now = r.createTime === 'NOW()';
      values.push(`(?, ?, ?, 1, ?, ?, ?, '{}', ${now ? 'NOW()' : '?'}, ?)`);
      params.push(
        r.answerUuid,
        r.schId ?? 5,
        r.formUuid,
        r.revision ?? 1,
        r.contentHash ?? createHash('sha256').update(r.answerUuid).digest('hex'),
        r.isDeleted ?? 0,
      );
      if (!now) params.push(r.createTime === undefined ? '2026-10-01 08:00:00' : r.createTime);
      params.push(r.retiredAt ?? null);
    }
    await admin.query(
      `INSERT INTO \`${database}\`.fc_answer_projection (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, is_deleted, snapshot_json, create_time, retired_at) VALUES ${values.join(', ')}`,
      params,
    );
  }
}

/** An FC answer as the tests arrange it; the snapshot (and so the hash) is built from these columns. */
export interface TestAnswer {
  readonly answerUuid: string;
  readonly schId?: number;
  readonly formUuid: string;
  readonly revision?: number;
  readonly isDeleted?: number;
  readonly createTime?: string;
  readonly valuesJson?: string;
  readonly status?: string;
}

/** The columns of an FC answer row the snapshot is built from, as mysql2 would return them. */
export function answerSource(a: TestAnswer) {
  return {
    sch_id: String(a.schId ?? 5),
    app_code: 'demo-publisher',
    code: 'honor_apply',
    submitter_id: '1001',
    subject_id: null,
    status: a.status ?? 'submitted',
    values_json: a.valuesJson ?? `{"n":${JSON.stringify(a.answerUuid)},"amount":12.50}`,
    answer_no: null,
    create_time: a.createTime ?? '2026-10-01 08:00:00',
    update_time: null,
  };
}

/** The fc.canon.v1 hash FC's manifest gives a test answer. */
export function answerHash(a: TestAnswer): string {
  return buildAnswerSnapshot(answerSource(a)).contentHash;
}

/** Inserts FC answers (multi-row INSERTs). */
export async function insertAnswers(
  admin: mysql.Connection,
  database: string,
  rows: readonly TestAnswer[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += 2000) {
    const batch = rows.slice(i, i + 2000);
    const params: unknown[] = [];
    for (const a of batch) {
      const s = answerSource(a);
      params.push(
        a.answerUuid,
        a.formUuid,
        1,
        BigInt(s.sch_id),
        s.app_code,
        s.code,
        1001n,
        s.status,
        s.values_json,
        s.create_time,
        a.isDeleted ?? 0,
        a.revision ?? 1,
      );
    }
    await admin.query(
      `INSERT INTO \`${database}\`.answer (answer_uuid, form_uuid, form_version, sch_id, app_code, code, submitter_id, status, values_json, create_time, is_deleted, answer_revision) VALUES ${batch.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      params,
    );
  }
}

/**
 * Writes a manifest file and a completed checkpoint that vouches for it (as `manifest scan`
 * would), without a database: for diff tests. Returns the two paths.
 */
export async function writeManifestFiles(
  dir: string,
  name: string,
  side: 'fc' | 'sh',
  rows: readonly import('../../src/lib/manifest/row.js').ManifestRow[],
  options: {
    schId?: string;
    formUuid?: string;
    shard?: string | null;
    completed?: boolean;
    completedAt?: string;
    dbStartedAt?: string | null;
  } = {},
): Promise<{ file: string; checkpoint: string; bytes: Buffer }> {
  const { writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { formatManifestLine } = await import('../../src/lib/manifest/row.js');
  const { writeCheckpoint, CHECKPOINT_FORMAT } = await import('../../src/lib/manifest/checkpoint.js');
  const { paramsDigest } = await import('../../src/lib/canon/params-digest.js');
  const file = join(dir, `${name}.jsonl`);
  const checkpoint = join(dir, `${name}.checkpoint.json`);
  const bytes = Buffer.from(
    rows
      .map((r) =>
        formatManifestLine(side === 'sh' ? { ...r, retiredAt: r.retiredAt ?? null } : { ...r, retiredAt: undefined }),
      )
      .join(''),
    'utf8',
  );
  writeFileSync(file, bytes);
  const params = {
    side,
    database: 'test:3306/none',
    schId: options.schId ?? '5',
    formUuid: options.formUuid ?? 'f0000000-0000-4000-8000-000000000000',
    shard: options.shard ?? null,
    out: file,
  };
  const completed = options.completed ?? true;
  await writeCheckpoint(checkpoint, {
    format: CHECKPOINT_FORMAT,
    params,
    paramsDigest: paramsDigest(params),
    size: 200,
    cursor: rows.at(-1)?.answerUuid ?? null,
    pages: 1,
    rows: rows.length,
    outputBytes: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    completed,
    startedAt: '2026-11-30T00:00:00.000Z',
    updatedAt: '2026-11-30T00:01:00.000Z',
    completedAt: completed ? (options.completedAt ?? '2026-11-30T00:01:00.000Z') : null,
    // the scanned database's clock when the scan began: just after the diff tests' task start;
    // null leaves it out, as in a checkpoint of an older fcctl
    ...(options.dbStartedAt === null ? {} : { dbStartedAt: options.dbStartedAt ?? '2026-11-30 01:00:01' }),
  });
  return { file, checkpoint, bytes };
}
