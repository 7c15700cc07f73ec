import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EnvironmentError } from '../cli/exit.js';
import type { Db } from './connect.js';
import {
  alterTableAddColumn,
  alterTableAddIndex,
  countSchemaVersionTables,
  insertSchemaVersion,
  markDevDatabase,
  selectAnyRow,
  selectKeyColumns,
  selectLiveColumns,
  selectLiveIndexes,
  selectSchemaVersion,
  setLockWaitTimeout,
  updateSchemaVersion,
} from './sql.js';

export type Side = 'fc' | 'sh';
/**
 * The reference schema's version, recorded by `db init`. 2: SH `fcctl_requeue_operation`
 * (`apply-command requeue`); `db init` creates it on a version-1 database, `db check` names it missing.
 * 3: `fcctl_pause` and `fcctl_pause_event` on both sides (the pause switch, issue 19 §3), created
 * the same way by `db init` on an older database. 4: SH `fcctl_reconcile_task` (`reconcile run --all`,
 * issue 19 §1), created the same way. 5: FC `answer_delivery` index `idx_delivery_state_error` and
 * SH `flow_apply_command` index `idx_apply_command_state_error` (`deliveries scan` and
 * `apply-command scan` without reading the history, issue 20), which `db init` adds to an existing
 * table ({@link ADDED_INDEXES}). 6: `fcctl_worker` on both sides (the fleet registry of `--follow`
 * services, issue 27) and SH `fcctl_reconcile_join` (a process choosing a default run is activity,
 * issue 26 §3), created by `db init` on an older database. 7: FC `answer_delivery` index
 * `idx_delivery_state_time` and SH `flow_apply_command` index `idx_apply_command_state_time`
 * (`fcctl status`'s accepted/DONE windows read as a range, issue 29 §2), added like version 5's;
 * SH `fcctl_reconcile_ledger` (the drift ledger of `reconcile run --all`: one row per pair per
 * night, issue 30 §2), created like version 6's tables. 8: `fcctl_worker.detail` on both sides (why a
 * service is in outage or misconfigured, issue 36 §10), which `db init` adds to an existing table
 * ({@link ADDED_COLUMNS}); a service on a version-7 database beats without it.
 */
export const SCHEMA_VERSION = 8;

/**
 * Columns a later version added to a table an older `db init` had already created, with their
 * definition as the DDL file has it. `db init` adds the missing ones (a NULL column at the end: no
 * rows rewritten on MySQL 8 and MariaDB 10.6+, and the registry is a small table anyway).
 */
export const ADDED_COLUMNS: Readonly<
  Record<Side, ReadonlyArray<{ readonly table: string; readonly column: string; readonly definition: string }>>
> = {
  fc: [{ table: 'fcctl_worker', column: 'detail', definition: 'VARCHAR(255) NULL' }],
  sh: [{ table: 'fcctl_worker', column: 'detail', definition: 'VARCHAR(255) NULL' }],
};

/**
 * Indexes a later version added to a table an older `db init` had already created. `db init` adds
 * the missing ones of this list (online: the service keeps writing meanwhile); any other missing
 * index is `db check`'s to name, never silently re-made.
 */
export const ADDED_INDEXES: Readonly<Record<Side, ReadonlyArray<{ readonly table: string; readonly index: string }>>> =
  {
    fc: [
      { table: 'answer_delivery', index: 'idx_delivery_state_error' },
      { table: 'answer_delivery', index: 'idx_delivery_state_time' },
    ],
    sh: [
      { table: 'flow_apply_command', index: 'idx_apply_command_state_error' },
      { table: 'flow_apply_command', index: 'idx_apply_command_state_time' },
    ],
  };

/** One table of the reference schema as its SQL file declares it. */
export interface TableSpec {
  readonly name: string;
  readonly columns: readonly string[];
  /** index name → its columns in order (PRIMARY included) */
  readonly indexes: Readonly<Record<string, readonly string[]>>;
  readonly ddl: string;
}

/** The DDL file of a side, shipped in the package's `sql/` folder. */
export function schemaSql(side: Side): string {
  return readFileSync(fileURLToPath(new URL(`../../../sql/${side}.sql`, import.meta.url)), 'utf8');
}

/**
 * Reads the tables, columns and indexes out of our own DDL files, so the check can never drift
 * from what `db init` creates. The files keep one column or key per line; that is the contract.
 */
export function parseSchema(sql: string): TableSpec[] {
  const statements = sql
    .split(/^;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean);
  return statements.map((ddl) => {
    const name = /CREATE TABLE IF NOT EXISTS (\w+)/.exec(ddl)?.[1];
    if (!name) throw new Error(`schema file: statement without CREATE TABLE: ${ddl.slice(0, 60)}`);
    const columns: string[] = [];
    const indexes: Record<string, string[]> = {};
    for (const raw of ddl.split('\n').slice(1)) {
      const line = raw.trim();
      const key = /^(?:UNIQUE )?KEY (\w+) \(([^)]+)\)/.exec(line);
      if (key) {
        indexes[key[1]!] = key[2]!.split(',').map((c) => c.trim());
        continue;
      }
      const col = /^(\w+)\s+(?:BIGINT|INT|TINYINT|VARCHAR|CHAR|LONGTEXT|TEXT|DATETIME|DOUBLE)/.exec(line);
      if (col) {
        columns.push(col[1]!);
        if (/PRIMARY KEY/.test(line)) indexes['PRIMARY'] = [col[1]!];
      }
    }
    return { name, columns, indexes, ddl };
  });
}

/** A difference between the live database and the reference schema. */
export type SchemaProblem =
  | { readonly kind: 'missing-table'; readonly table: string }
  | { readonly kind: 'missing-column'; readonly table: string; readonly column: string }
  | { readonly kind: 'missing-index'; readonly table: string; readonly index: string }
  | {
      readonly kind: 'index-columns';
      readonly table: string;
      readonly index: string;
      readonly expected: readonly string[];
      readonly actual: readonly string[];
    }
  | {
      readonly kind: 'json-type';
      readonly table: string;
      readonly column: string;
    }
  | {
      readonly kind: 'key-order';
      readonly table: string;
      readonly column: string;
      readonly type: string;
      readonly collation: string | null;
    };

/**
 * The columns manifest pages are ordered by (keyset on `answer_uuid` within a school and form) and
 * the reconcile merge-join compares byte for byte: they must be strings ordered and compared by
 * their bytes. A case-insensitive collation (`utf8mb4_unicode_ci`, `utf8mb4_0900_ai_ci`) orders
 * `A` with `a`, so the database's pages come in an order the merge-join refuses only after a whole
 * scan; `db check` and `doctor` say so first (issue 35 §4).
 */
export const KEY_ORDER_COLUMNS: Readonly<Record<Side, ReadonlyArray<{ table: string; column: string }>>> = {
  fc: [
    { table: 'answer', column: 'answer_uuid' },
    { table: 'answer', column: 'form_uuid' },
    { table: 'form_consumer_grant', column: 'form_uuid' },
  ],
  sh: [
    { table: 'fc_answer_projection', column: 'answer_uuid' },
    { table: 'fc_answer_projection', column: 'form_uuid' },
  ],
};

/**
 * The JSON documents whose text is hashed (fc.canon.v1): MySQL 8's `JSON` type keeps a binary form
 * and gives back its own serialisation (decimals through doubles), so a snapshot stored there no
 * longer hashes to its `content_hash` (SNAPSHOT_HASH_MISMATCH → FAILED → DEAD), and values read
 * from there no longer hash as FC did. They must be text (`LONGTEXT`), as the reference schema has them.
 */
export const HASHED_TEXT_COLUMNS: Readonly<Record<Side, ReadonlyArray<{ table: string; column: string }>>> = {
  fc: [
    { table: 'answer', column: 'values_json' },
    { table: 'answer_delivery', column: 'snapshot_json' },
  ],
  sh: [{ table: 'fc_answer_projection', column: 'snapshot_json' }],
};

/**
 * Whether a key column is ordered by its bytes: a CHAR/VARCHAR with a binary collation (`…_bin`),
 * or a BINARY/VARBINARY (no collation); for a hashed document ({@link HASHED_TEXT_COLUMNS}),
 * whether it is text rather than MySQL's `JSON`.
 * @example keyOrderProblem({ table: 'answer', column: 'answer_uuid', type: 'char', collation: 'utf8mb4_bin' }) // null
 */
export function keyOrderProblem(live: {
  table: string;
  column: string;
  type: string;
  collation: string | null;
}): SchemaProblem | null {
  const type = live.type.toLowerCase();
  if (
    HASHED_TEXT_COLUMNS.fc
      .concat(HASHED_TEXT_COLUMNS.sh)
      .some((h) => h.table === live.table && h.column === live.column)
  )
    return type === 'json' ? { kind: 'json-type', table: live.table, column: live.column } : null;
  const ok =
    ((type === 'char' || type === 'varchar') && live.collation !== null && /_bin$/i.test(live.collation)) ||
    type === 'binary' ||
    type === 'varbinary';
  return ok ? null : { kind: 'key-order', ...live };
}

export function describeProblem(p: SchemaProblem): string {
  switch (p.kind) {
    case 'missing-table':
      return `missing table ${p.table}`;
    case 'missing-column':
      return `missing column ${p.table}.${p.column}`;
    case 'missing-index':
      return `missing index ${p.table}.${p.index}`;
    case 'index-columns':
      return `index ${p.table}.${p.index} is on (${p.actual.join(', ')}), expected (${p.expected.join(', ')})`;
    case 'json-type':
      return (
        `column ${p.table}.${p.column} is JSON: the server re-serialises it (numbers through doubles), so its text no ` +
        'longer hashes as written; it must be LONGTEXT'
      );
    case 'key-order':
      return (
        `column ${p.table}.${p.column} is ${p.type}${p.collation ? ` ${p.collation}` : ''}: keyset pages and the reconcile ` +
        'merge-join need it ordered by its bytes (CHAR/VARCHAR with a binary collation such as utf8mb4_bin, or BINARY)'
      );
  }
}

/**
 * Pure comparison of the expected tables with what information_schema reports.
 * @example compareSchema(parseSchema(schemaSql('fc')), liveColumns, liveIndexes)
 */
export function compareSchema(
  expected: readonly TableSpec[],
  liveColumns: ReadonlyMap<string, ReadonlySet<string>>,
  liveIndexes: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>,
): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  for (const table of expected) {
    const cols = liveColumns.get(table.name);
    if (!cols) {
      problems.push({ kind: 'missing-table', table: table.name });
      continue;
    }
    for (const column of table.columns) {
      if (!cols.has(column)) problems.push({ kind: 'missing-column', table: table.name, column });
    }
    // index names are case-insensitive: compared in lower case, whatever case the map holds
    const idx = new Map(
      [...(liveIndexes.get(table.name) ?? [])].map(([name, columns]) => [name.toLowerCase(), columns] as const),
    );
    for (const [index, columns] of Object.entries(table.indexes)) {
      const actual = idx.get(index.toLowerCase());
      if (!actual) problems.push({ kind: 'missing-index', table: table.name, index });
      else if (actual.join(',') !== columns.join(',')) {
        problems.push({ kind: 'index-columns', table: table.name, index, expected: columns, actual });
      }
    }
  }
  return problems;
}

async function liveSchema(db: Db) {
  const cols = selectLiveColumns();
  const columns = await db.query<{ t: string; c: string }>(cols.sql, cols.params);
  const idx = selectLiveIndexes();
  const stats = await db.query<{ t: string; i: string; c: string }>(idx.sql, idx.params);
  const liveColumns = new Map<string, Set<string>>();
  for (const { t, c } of columns) {
    if (!liveColumns.has(t)) liveColumns.set(t, new Set());
    liveColumns.get(t)!.add(c);
  }
  // Index names are case-insensitive in MariaDB and MySQL: kept in lower case, looked up so.
  const liveIndexes = new Map<string, Map<string, string[]>>();
  for (const { t, i, c } of stats) {
    if (!liveIndexes.has(t)) liveIndexes.set(t, new Map());
    const m = liveIndexes.get(t)!;
    const name = i.toLowerCase();
    if (!m.has(name)) m.set(name, []);
    m.get(name)!.push(c);
  }
  return { liveColumns, liveIndexes };
}

/**
 * Reports every missing table, column or index of one side, and each key column not ordered by
 * its bytes ({@link KEY_ORDER_COLUMNS}).
 */
export async function checkSchema(db: Db, side: Side): Promise<SchemaProblem[]> {
  const { liveColumns, liveIndexes } = await liveSchema(db);
  const keys = selectKeyColumns([...KEY_ORDER_COLUMNS[side], ...HASHED_TEXT_COLUMNS[side]]);
  const keyColumns = await db.query<{ t: string; c: string; type: string; collation: string | null }>(
    keys.sql,
    keys.params,
  );
  const keyProblems = keyColumns
    .map((k) => keyOrderProblem({ table: k.t, column: k.c, type: k.type, collation: k.collation }))
    .filter((p): p is SchemaProblem => p !== null);
  return [...compareSchema(parseSchema(schemaSql(side)), liveColumns, liveIndexes), ...keyProblems];
}

export interface InitResult {
  readonly side: Side;
  readonly created: readonly string[];
  readonly existing: readonly string[];
  /** `table.index` of each {@link ADDED_INDEXES} entry added to an existing table */
  readonly indexesAdded: readonly string[];
  /** `table.column` of each {@link ADDED_COLUMNS} entry added to an existing table */
  readonly columnsAdded: readonly string[];
  readonly versionRecorded: boolean;
  readonly markedDev: boolean;
}

/**
 * Creates the reference schema of one side; idempotent: existing tables are left as they are,
 * and a second run writes nothing. `dev` marks the database as a development database, the only
 * kind `fcctl dev seed` will fill.
 */
export async function initSchema(db: Db, side: Side, options: { dev?: boolean; now: string }): Promise<InitResult> {
  const tables = parseSchema(schemaSql(side));
  const { liveColumns, liveIndexes } = await liveSchema(db);
  const created: string[] = [];
  const existing: string[] = [];
  for (const table of tables) {
    if (liveColumns.has(table.name)) {
      existing.push(table.name);
      continue;
    }
    await db.execute(table.ddl);
    created.push(table.name);
  }
  await refuseUnseenTables(db, created);
  const indexesAdded = await addIndexes(db, side, tables, existing, liveIndexes);
  const columnsAdded = await addColumns(db, side, existing, liveColumns);
  const read = selectSchemaVersion(side, 'version, is_dev');
  const current = await db.query<{ version: number; is_dev: number }>(read.sql, read.params);
  let versionRecorded = false;
  let markedDev = false;
  const row = current[0];
  if (!row) {
    const insert = insertSchemaVersion(side, SCHEMA_VERSION, Boolean(options.dev), options.now);
    await db.execute(insert.sql, insert.params);
    versionRecorded = true;
    markedDev = Boolean(options.dev);
  } else {
    if (row.version !== SCHEMA_VERSION) {
      const update = updateSchemaVersion(side, SCHEMA_VERSION, options.now);
      await db.execute(update.sql, update.params);
      versionRecorded = true;
    }
    if (options.dev && row.is_dev !== 1) {
      const mark = markDevDatabase(side);
      await db.execute(mark.sql, mark.params);
      markedDev = true;
    }
  }
  return { side, created, existing, indexesAdded, columnsAdded, versionRecorded, markedDev };
}

/**
 * A table `db init` just created that information_schema still does not show: the user holds no
 * privilege on it (information_schema shows only those), so every later run would take the
 * existing tables for missing and never add a newer version's indexes. Exit 3 naming the grant,
 * before the version is recorded (docs/privileges.md).
 */
async function refuseUnseenTables(db: Db, created: readonly string[]): Promise<void> {
  if (created.length === 0) return;
  const { liveColumns } = await liveSchema(db);
  const unseen = created.filter((t) => !liveColumns.has(t));
  if (unseen.length === 0) return;
  throw new EnvironmentError(
    `db init created ${unseen.join(', ')} but information_schema does not show them to this user: grant it REFERENCES on the database (docs/privileges.md); schema version not recorded`,
  );
}

/**
 * Why `db init` must not touch this side: its recorded schema version is newer than this fcctl's
 * (an older fcctl would record its own, lower number over it), or null.
 */
export async function newerSchemaProblem(db: Db, side: Side): Promise<string | null> {
  const count = countSchemaVersionTables();
  const tables = await db.query<{ n: number }>(count.sql, count.params);
  if (Number(tables[0]?.n ?? 0) === 0) return null;
  const read = selectSchemaVersion(side, 'version');
  const rows = await db.query<{ version: number }>(read.sql, read.params);
  const version = Number(rows[0]?.version ?? 0);
  return version > SCHEMA_VERSION
    ? `the ${side} database is at fcctl schema version ${version}, newer than this fcctl's ${SCHEMA_VERSION}: run db init with the newer fcctl`
    : null;
}

/**
 * Adds the {@link ADDED_INDEXES} missing from tables that already existed, with the columns the
 * DDL file declares. `LOCK=NONE`: an online build, so the service's writes go on (on a table with
 * millions of rows it takes a while: that is the upgrade's one cost). An index of that name on
 * other columns is named and left alone (exit 3, the version not recorded).
 */
async function addIndexes(
  db: Db,
  side: Side,
  tables: readonly TableSpec[],
  existing: readonly string[],
  liveIndexes: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>,
): Promise<string[]> {
  const added: string[] = [];
  for (const { table, index } of ADDED_INDEXES[side]) {
    const columns = tables.find((t) => t.name === table)?.indexes[index];
    if (!columns || !existing.includes(table)) continue;
    const live = liveIndexes.get(table)?.get(index.toLowerCase());
    if (live && live.join(',') === columns.join(',')) continue;
    if (live) {
      throw new EnvironmentError(
        `index ${table}.${index} exists on (${live.join(', ')}), expected (${columns.join(', ')}): drop or rename it, then run db init again; schema version not recorded`,
      );
    }
    await addIndexOnline(db, table, index, columns);
    added.push(`${table}.${index}`);
  }
  return added;
}

/** Adds the {@link ADDED_COLUMNS} missing from tables that already existed. */
async function addColumns(
  db: Db,
  side: Side,
  existing: readonly string[],
  liveColumns: ReadonlyMap<string, ReadonlySet<string>>,
): Promise<string[]> {
  const added: string[] = [];
  for (const { table, column, definition } of ADDED_COLUMNS[side]) {
    if (!existing.includes(table) || liveColumns.get(table)?.has(column)) continue;
    await db.execute(alterTableAddColumn(table, column, definition).sql);
    added.push(`${table}.${column}`);
  }
  return added;
}

/** How long the index build may wait for a transaction that has the table open (seconds). */
export const ADD_INDEX_LOCK_WAIT_SECONDS = 2;

/**
 * The ALTER of {@link addIndexes}, on a connection of its own. An online build still takes a
 * metadata lock at its start and end: while any transaction has the table open it waits, and
 * every write to the table queues behind it. So it waits two seconds at most (the server's
 * default is a day) and is not retried: the service's writes are never held up for long.
 */
async function addIndexOnline(db: Db, table: string, index: string, columns: readonly string[]): Promise<void> {
  const conn = await db.pool.getConnection();
  try {
    await conn.query(setLockWaitTimeout(ADD_INDEX_LOCK_WAIT_SECONDS).sql);
    await conn.query(alterTableAddIndex(table, index, columns).sql);
  } catch (err) {
    const e = err as { errno?: number; message?: string };
    if (e.errno === 1205) {
      throw new EnvironmentError(
        `${table} is held by a running transaction: index ${index} not added (waited ${ADD_INDEX_LOCK_WAIT_SECONDS} s so as not to hold up the service's writes); run db init again; schema version not recorded`,
      );
    }
    throw new EnvironmentError(
      `cannot add index ${index} to ${table}: ${String(e.message ?? err).split('\n')[0]}; schema version not recorded`,
      { cause: err },
    );
  } finally {
    // its session setting must not reach another statement: the connection is not returned to the pool
    conn.destroy();
  }
}

/**
 * The reference tables of a side that exist here and hold at least one row (the version table
 * left out); one `LIMIT 1` read each, never a count of a large table.
 */
export async function tablesWithRows(db: Db, side: Side): Promise<string[]> {
  const { liveColumns } = await liveSchema(db);
  const names = parseSchema(schemaSql(side))
    .map((t) => t.name)
    .filter((t) => t !== 'fcctl_schema_version' && liveColumns.has(t));
  const holding: string[] = [];
  for (const t of names) {
    const any = selectAnyRow(t);
    if ((await db.query(any.sql, any.params)).length > 0) holding.push(t);
  }
  return holding;
}

/**
 * Why `db init --dev` must not mark this database, or null when it may: only a database already
 * marked, or one whose fcctl tables hold no rows (just created), becomes a development database —
 * `dev seed --replace` deletes what a development database holds.
 */
export async function devMarkRefusal(db: Db, side: Side): Promise<string | null> {
  if (await isDevDatabase(db, side)) return null;
  const holding = await tablesWithRows(db, side);
  return holding.length === 0
    ? null
    : `the ${side.toUpperCase()} database holds rows (${holding.join(', ')}) and is not marked already`;
}

/** True when `db init --dev` marked this database as a development database. */
export async function isDevDatabase(db: Db, side: Side): Promise<boolean> {
  try {
    const read = selectSchemaVersion(side, 'is_dev');
    const rows = await db.query<{ is_dev: number }>(read.sql, read.params);
    return rows[0]?.is_dev === 1;
  } catch {
    return false;
  }
}
