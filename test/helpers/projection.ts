import { createHash, randomUUID } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { buildAnswerSnapshot } from '../../src/lib/answers/snapshot.js';
import { answerSource } from './manifest.js';

/** An FC answer as the projection tests arrange it. */
export interface FcAnswerSpec {
  readonly answerUuid?: string;
  readonly formUuid: string;
  readonly schId?: number;
  readonly revision?: number;
  readonly isDeleted?: number;
  readonly status?: string;
  readonly updateTime?: string | null;
}

/** Inserts one FC answer; returns its uuid and the fc.canon.v1 snapshot FC's row gives. */
export async function insertFcAnswer(
  admin: mysql.Connection,
  fcName: string,
  spec: FcAnswerSpec,
): Promise<{ answerUuid: string; snapshotJson: string; contentHash: string }> {
  const answerUuid = spec.answerUuid ?? randomUUID();
  // the manifest tests' answer row, with a submitter beyond 2^53 and text beyond ASCII in its values
  const source = {
    ...answerSource({
      answerUuid,
      formUuid: spec.formUuid,
      ...(spec.schId !== undefined ? { schId: spec.schId } : {}),
      status: spec.status ?? 'processed',
      valuesJson: `{"name":"张三","amount":12.50,"big":9007199254740993,"id":${JSON.stringify(answerUuid)}}`,
      createTime: '2026-10-21 08:00:00',
    }),
    submitter_id: '9007199254740993',
    update_time: spec.updateTime === undefined ? '2026-10-22 09:30:00' : spec.updateTime,
  };
  await admin.query(
    `INSERT INTO \`${fcName}\`.answer (answer_uuid, form_uuid, form_version, sch_id, app_code, code, submitter_id, subject_id, status, values_json, answer_no, create_time, update_time, is_deleted, answer_revision)
     VALUES (?, ?, 4, ?, ?, ?, ?, NULL, ?, ?, NULL, ?, ?, ?, ?)`,
    [
      answerUuid,
      spec.formUuid,
      BigInt(source.sch_id),
      source.app_code,
      source.code,
      BigInt(source.submitter_id),
      source.status,
      source.values_json,
      source.create_time,
      source.update_time,
      spec.isDeleted ?? 0,
      spec.revision ?? 3,
    ],
  );
  return { answerUuid, ...buildAnswerSnapshot(source) };
}

/** A projection row with every column a consumer may have written. */
export interface ProjectionSpec {
  readonly answerUuid: string;
  readonly formUuid: string;
  readonly schId?: number;
  readonly revision: number;
  readonly contentHash?: string;
  readonly isDeleted?: number;
  readonly snapshotJson?: string;
  readonly linked?: boolean;
  readonly conflictFlag?: number;
  readonly projectionVersion?: number;
  readonly retiredAt?: string | null;
}

/** A 64-hex hash from a label. */
export const hashOf = (label: string) => createHash('sha256').update(label).digest('hex');

export async function insertProjection(admin: mysql.Connection, shName: string, p: ProjectionSpec): Promise<void> {
  const linked = p.linked ?? true;
  await admin.query(
    `INSERT INTO \`${shName}\`.fc_answer_projection (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, is_deleted, snapshot_json, link_state,
       intent_id, apply_id, flow_guid, biz_ext_json, conflict_flag, projection_version, create_time, update_time, retired_at, retire_proof_id)
     VALUES (?, ?, ?, 3, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '2026-10-21 08:00:07', '2026-10-21 08:00:07', ?, ?)`,
    [
      p.answerUuid,
      p.schId ?? 5,
      p.formUuid,
      p.revision,
      p.contentHash ?? hashOf(`${p.answerUuid}:${p.revision}`),
      p.isDeleted ?? 0,
      p.snapshotJson ?? `{"local":${p.revision},"amount":12.50}`,
      linked ? 'LINKED' : 'UNLINKED',
      linked ? `svchall-${p.answerUuid.slice(0, 8)}` : null,
      linked ? 4242 : null,
      linked ? 'flow-honor' : null,
      '{"ext":{"note":"业务扩展","n":1.50}}',
      p.conflictFlag ?? 0,
      p.projectionVersion ?? 7,
      p.retiredAt ?? null,
      p.retiredAt ? 'retire-proof-1' : null,
    ],
  );
}

/** Every column of a projection row, as mysql2 returns it (strings for BIGINT and DATETIME). */
export async function projectionRow(
  admin: mysql.Connection,
  shName: string,
  answerUuid: string,
): Promise<Record<string, unknown> | undefined> {
  const [rows] = await admin.query(`SELECT * FROM \`${shName}\`.fc_answer_projection WHERE answer_uuid = ?`, [
    answerUuid,
  ]);
  return (rows as Array<Record<string, unknown>>)[0];
}

/** The columns a repair must never change on an existing row. */
export const UNTOUCHED_COLUMNS = [
  'id',
  'answer_uuid',
  'sch_id',
  'form_uuid',
  'link_state',
  'intent_id',
  'apply_id',
  'flow_guid',
  'biz_ext_json',
  'create_time',
  'retired_at',
  'retire_proof_id',
] as const;

export const pick = (row: Record<string, unknown> | undefined, columns: readonly string[]) =>
  Object.fromEntries(columns.map((c) => [c, row?.[c]]));

export async function auditRows(
  admin: mysql.Connection,
  shName: string,
  answerUuid: string,
): Promise<Array<Record<string, unknown>>> {
  const [rows] = await admin.query(`SELECT * FROM \`${shName}\`.fc_reconcile_audit WHERE answer_uuid = ? ORDER BY id`, [
    answerUuid,
  ]);
  return rows as Array<Record<string, unknown>>;
}
