import { describe, expect, it } from 'vitest';
import {
  alterTableAddIndex,
  countSchemaVersionTables,
  insertSchemaVersion,
  markDevDatabase,
  selectAnyRow,
  selectLiveColumns,
  selectLiveIndexes,
  selectSchemaVersion,
  setLockWaitTimeout,
  updateSchemaVersion,
} from '../../src/lib/db/sql.js';

/** The reference schema's statements as text (executed by db/schema.ts against the real databases in init.test.ts). */
describe('db/sql: the reference schema statements', () => {
  it('reads the live columns and indexes of the connection database, index columns in order', () => {
    expect(selectLiveColumns()).toEqual({
      sql: 'SELECT TABLE_NAME AS t, COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()',
      params: [],
    });
    expect(selectLiveIndexes().sql).toMatch(/FROM information_schema\.STATISTICS WHERE TABLE_SCHEMA = DATABASE\(\)/);
    expect(selectLiveIndexes().sql).toMatch(/ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX$/);
    expect(countSchemaVersionTables().sql).toContain("TABLE_NAME = 'fcctl_schema_version'");
  });

  it('binds the side, version, dev mark and time as parameters', () => {
    expect(selectSchemaVersion('sh', 'version, is_dev')).toEqual({
      sql: 'SELECT version, is_dev FROM fcctl_schema_version WHERE side = ?',
      params: ['sh'],
    });
    expect(insertSchemaVersion('fc', 6, true, '2026-12-02 01:00:00')).toEqual({
      sql: 'INSERT INTO fcctl_schema_version (side, version, is_dev, applied_at) VALUES (?, ?, ?, ?)',
      params: ['fc', 6, 1, '2026-12-02 01:00:00'],
    });
    expect(insertSchemaVersion('fc', 6, false, 'now').params[2]).toBe(0);
    expect(updateSchemaVersion('fc', 6, 'now')).toEqual({
      sql: 'UPDATE fcctl_schema_version SET version = ?, applied_at = ? WHERE side = ?',
      params: [6, 'now', 'fc'],
    });
    expect(markDevDatabase('sh')).toEqual({
      sql: 'UPDATE fcctl_schema_version SET is_dev = 1 WHERE side = ?',
      params: ['sh'],
    });
  });

  it('builds the online index build, its lock wait and the one-row probe from our own names', () => {
    expect(setLockWaitTimeout(2).sql).toBe('SET SESSION lock_wait_timeout = 2');
    expect(alterTableAddIndex('answer_delivery', 'idx_delivery_state_error', ['state', 'last_error_at']).sql).toBe(
      'ALTER TABLE answer_delivery ADD KEY idx_delivery_state_error (state, last_error_at), ALGORITHM=INPLACE, LOCK=NONE',
    );
    expect(selectAnyRow('answer')).toEqual({ sql: 'SELECT 1 AS x FROM answer LIMIT 1', params: [] });
  });
});
