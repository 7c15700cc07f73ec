import type { Statement } from './statement.js';

/**
 * The database's NOW() and UTC_TIMESTAMP() in one statement (one instant), as text: a scan's start
 * and the task start are read in the database's own clock.
 * @example selectDatabaseNow().sql // 'SELECT CAST(NOW() AS CHAR) AS t, CAST(UTC_TIMESTAMP() AS CHAR) AS u'
 */
export function selectDatabaseNow(): Statement {
  return { sql: 'SELECT CAST(NOW() AS CHAR) AS t, CAST(UTC_TIMESTAMP() AS CHAR) AS u', params: [] };
}

// --- the reference schema (`schema.ts`: `db init`, `db check`; the DDL itself is `sql/<side>.sql`) ---

/** Every column of every table of the connection's database. */
export function selectLiveColumns(): Statement {
  return {
    sql: 'SELECT TABLE_NAME AS t, COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()',
    params: [],
  };
}

/** The type and collation of the columns that keyset pages and the merge-join order by (`KEY_ORDER_COLUMNS`). */
export function selectKeyColumns(
  columns: ReadonlyArray<{ readonly table: string; readonly column: string }>,
): Statement {
  return {
    sql:
      'SELECT TABLE_NAME AS t, COLUMN_NAME AS c, DATA_TYPE AS type, COLLATION_NAME AS collation FROM information_schema.COLUMNS ' +
      `WHERE TABLE_SCHEMA = DATABASE() AND (TABLE_NAME, COLUMN_NAME) IN (${columns.map(() => '(?, ?)').join(', ')})`,
    params: columns.flatMap((k) => [k.table, k.column]),
  };
}

/** Every index column of the connection's database, each index's columns in order. */
export function selectLiveIndexes(): Statement {
  return {
    sql: 'SELECT TABLE_NAME AS t, INDEX_NAME AS i, COLUMN_NAME AS c FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX',
    params: [],
  };
}

/** Whether the version table exists (a count: 0 or 1), read before it is queried. */
export function countSchemaVersionTables(): Statement {
  return {
    sql: "SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fcctl_schema_version'",
    params: [],
  };
}

/**
 * The recorded version row of a side: `columns` the ones read.
 * @example selectSchemaVersion('fc', 'version, is_dev').sql // 'SELECT version, is_dev FROM fcctl_schema_version WHERE side = ?'
 */
export function selectSchemaVersion(side: string, columns: 'version' | 'is_dev' | 'version, is_dev'): Statement {
  return { sql: `SELECT ${columns} FROM fcctl_schema_version WHERE side = ?`, params: [side] };
}

/** Records a side's schema version the first time `db init` runs on it. */
export function insertSchemaVersion(side: string, version: number, dev: boolean, now: string): Statement {
  return {
    sql: 'INSERT INTO fcctl_schema_version (side, version, is_dev, applied_at) VALUES (?, ?, ?, ?)',
    params: [side, version, dev ? 1 : 0, now],
  };
}

/** Records a side's new schema version. */
export function updateSchemaVersion(side: string, version: number, now: string): Statement {
  return {
    sql: 'UPDATE fcctl_schema_version SET version = ?, applied_at = ? WHERE side = ?',
    params: [version, now, side],
  };
}

/** Marks a side's database a development database (`db init --dev`). */
export function markDevDatabase(side: string): Statement {
  return { sql: 'UPDATE fcctl_schema_version SET is_dev = 1 WHERE side = ?', params: [side] };
}

/**
 * The session's wait for a metadata lock, in whole seconds (a number: no placeholder in `SET SESSION`).
 * @example setLockWaitTimeout(2).sql // 'SET SESSION lock_wait_timeout = 2'
 */
export function setLockWaitTimeout(seconds: number): Statement {
  return { sql: `SET SESSION lock_wait_timeout = ${seconds}`, params: [] };
}

/**
 * An online index build on an existing table; the names come from our own DDL files, never from input.
 * @example alterTableAddIndex('answer_delivery', 'idx_x', ['state', 'error']).sql // 'ALTER TABLE answer_delivery ADD KEY idx_x (state, error), ALGORITHM=INPLACE, LOCK=NONE'
 */
export function alterTableAddIndex(table: string, index: string, columns: readonly string[]): Statement {
  return {
    sql: `ALTER TABLE ${table} ADD KEY ${index} (${columns.join(', ')}), ALGORITHM=INPLACE, LOCK=NONE`,
    params: [],
  };
}

/**
 * A column a later schema version added (schema.ts ADDED_COLUMNS); names and definition are our DDL's.
 * @example alterTableAddColumn('fcctl_worker', 'detail', 'VARCHAR(255) NULL').sql // 'ALTER TABLE fcctl_worker ADD COLUMN detail VARCHAR(255) NULL'
 */
export function alterTableAddColumn(table: string, column: string, definition: string): Statement {
  return { sql: `ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`, params: [] };
}

/** One row of a table if it holds any (`LIMIT 1`: never a count of a large table); the name is one of our DDL's. */
export function selectAnyRow(table: string): Statement {
  return { sql: `SELECT 1 AS x FROM ${table} LIMIT 1`, params: [] };
}
