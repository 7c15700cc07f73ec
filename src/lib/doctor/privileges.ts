/**
 * `doctor`'s privilege check (issue 35 §6): the user fcctl connects as should hold what
 * docs/privileges.md names and little more. `SHOW GRANTS` (no privilege needed for one's own) is
 * parsed and judged here; a user holding far more — a global privilege such as SUPER or ALL
 * PRIVILEGES ON *.*, GRANT OPTION, writes on another database or on tables that are not fcctl's —
 * gets a `warn` line naming them, never a failure: it works, it is only more than it should be.
 */
import type { Db } from '../db/connect.js';
import { parseSchema, type Side, schemaSql } from '../db/schema.js';
import type { CheckResult } from './decide.js';
import { selectCurrentDatabase, showOwnGrants } from './sql.js';

/** One `GRANT … ON … TO …` line of SHOW GRANTS, as MariaDB 10.6+ and MySQL 8 print it. */
export interface ParsedGrant {
  /** upper case, column lists dropped: `SELECT`, `ALL PRIVILEGES`, `REPLICATION CLIENT`, … */
  readonly privileges: readonly string[];
  /** `*` for `*.*`; a database name or LIKE pattern as written (`test\_%`) */
  readonly database: string;
  /** `*` for a database-level grant */
  readonly table: string;
  readonly grantOption: boolean;
}

/**
 * Global privileges that do not warn: `--max-lag` reads the replica's status with them
 * (docs/privileges.md), and a database used as its own replica needs them on this user.
 */
const REPLICA_MONITORING = new Set(['USAGE', 'REPLICATION CLIENT', 'REPLICA MONITOR', 'SLAVE MONITOR']);

/**
 * Database-level privileges on fcctl's own databases that neither read nor write another
 * application's rows: `db init`'s CREATE/ALTER/INDEX, `db check`'s REFERENCES, `db init --dev`'s SELECT.
 */
const SCHEMA_LEVEL_OK = new Set(['SELECT', 'CREATE', 'ALTER', 'INDEX', 'REFERENCES', 'SHOW VIEW']);

/** Privileges that only read (a table grant of these is not a write wherever it is). */
const READS = new Set(['SELECT', 'REFERENCES', 'SHOW VIEW', 'USAGE']);

const unquote = (name: string) => name.replace(/^`(.*)`$/, '$1').replace(/``/g, '`');

/**
 * Parses one SHOW GRANTS line; null for what is not a privilege grant (a role granted to the user,
 * `GRANT PROXY`, a grant to PUBLIC: held by every account of the server, not this one's choice).
 * @example parseGrant('GRANT SELECT, UPDATE (state) ON `fc`.`answer_delivery` TO `relay`@`%`') // { privileges: ['SELECT', 'UPDATE'], database: 'fc', table: 'answer_delivery', grantOption: false }
 */
export function parseGrant(line: string): ParsedGrant | null {
  const m =
    /^GRANT (.+?) ON (?:TABLE |FUNCTION |PROCEDURE |PACKAGE |PACKAGE BODY )?(`(?:[^`]|``)*`|\*)\.(`(?:[^`]|``)*`|\*) TO (\S+)(.*)$/s.exec(
      line.trim(),
    );
  if (!m) return null;
  const [, privs, db, table, grantee, rest] = m as unknown as [string, string, string, string, string, string];
  if (grantee === 'PUBLIC' || /^PROXY$/i.test(privs.trim())) return null;
  const privileges = privs
    .replace(/\([^)]*\)/g, '')
    .split(',')
    .map((p) => p.trim().toUpperCase())
    .filter((p) => p !== '');
  return {
    privileges,
    database: db === '*' ? '*' : unquote(db),
    table: table === '*' ? '*' : unquote(table),
    grantOption: /WITH GRANT OPTION/i.test(rest),
  };
}

/** Whether a database grant's name (a LIKE pattern: `_` and `%` wild unless escaped) covers `name`. */
export function databaseMatches(pattern: string, name: string): boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) re += escapeRe(pattern[++i]!);
    else if (c === '%') re += '.*';
    else if (c === '_') re += '.';
    else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`, 'i').test(name);
}

/**
 * Whether a database grant's name has an unescaped `%`: it covers databases beyond the one it
 * matched (an unescaped `_`, as `fc_prod` is commonly written, is taken for the name it spells).
 * @example anyDatabase('fcctl\\_%') // true
 */
export function anyDatabase(pattern: string): boolean {
  return /(^|[^\\])(\\\\)*%/.test(pattern);
}

const escapeRe = (c: string) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** fcctl's databases and, for each, the tables of its reference schema (sql/fc.sql, sql/sh.sql). */
export type FcctlDatabases = ReadonlyArray<{ readonly name: string; readonly tables: ReadonlySet<string> }>;

/**
 * What the user holds beyond what fcctl needs, one phrase each (empty: nothing to say).
 * @example excessPrivileges([parseGrant('GRANT ALL PRIVILEGES ON *.* TO `fcctl`@`%` WITH GRANT OPTION')!], []) // ['global ALL PRIVILEGES', 'GRANT OPTION on *.*']
 */
export function excessPrivileges(grants: readonly ParsedGrant[], fcctl: FcctlDatabases): string[] {
  const found: string[] = [];
  for (const g of grants) {
    const where = g.database === '*' ? '*.*' : `${g.database}.${g.table}`;
    if (g.database === '*') {
      const global = g.privileges.filter((p) => !REPLICA_MONITORING.has(p));
      if (global.length > 0) found.push(`global ${global.join(', ')}`);
    } else {
      const own = fcctl.find((d) => databaseMatches(g.database, d.name));
      const writes = g.privileges.filter((p) => !READS.has(p));
      if (own && anyDatabase(g.database)) {
        // `%`.*, `fc%`.*: fcctl's database among others; db init's CREATE and ALTER there reach them too
        if (writes.length > 0) found.push(`${writes.join(', ')} on every database matching ${g.database}`);
      } else if (!own) {
        if (writes.length > 0) found.push(`${writes.join(', ')} on ${where}, outside fcctl's databases`);
      } else if (g.table === '*') {
        const beyond = g.privileges.filter((p) => !SCHEMA_LEVEL_OK.has(p));
        if (beyond.length > 0) found.push(`${beyond.join(', ')} on every table of ${g.database}`);
      } else if (!own.tables.has(g.table) && writes.length > 0) {
        found.push(`${writes.join(', ')} on ${where}, not an fcctl table`);
      }
    }
    if (g.grantOption) found.push(`GRANT OPTION on ${where}`);
  }
  return found;
}

/**
 * The `<side> database privileges` line: ok, or warn naming what is beyond docs/privileges.md.
 * @example privilegesCheck('FC database', []) // { check: 'FC database privileges', status: 'ok', … }
 */
export function privilegesCheck(label: string, excess: readonly string[]): CheckResult {
  const check = `${label} privileges`;
  return excess.length === 0
    ? { check, status: 'ok', detail: "no global privilege, no writes outside fcctl's tables" }
    : {
        check,
        status: 'warn',
        detail: `the user holds far more than fcctl needs: ${excess.join('; ')} (the grants of each command: docs/privileges.md)`,
      };
}

/**
 * The roles granted to the user whose own grants SHOW GRANTS does not list, one phrase each: it
 * lists an active role's (MariaDB: the default role's), and reading another's needs privileges on
 * `mysql` — a role the user can SET at any time may hold anything.
 * @example unlistedRoles(['GRANT `admin` TO `fcctl`@`%`']) // ['role admin, whose privileges SHOW GRANTS does not list (not active): check them against docs/privileges.md']
 */
export function unlistedRoles(lines: readonly string[]): string[] {
  const listed = new Set(lines.map((l) => / ON \S+ TO (`(?:[^`]|``)*`)/.exec(l)?.[1]).filter(Boolean));
  const roles = lines
    .filter((l) => !/ ON /.test(l))
    .flatMap((l) => /^GRANT (.+) TO /.exec(l.trim())?.[1]?.split(/,\s*/) ?? [])
    .map((r) => r.replace(/@.*$/, ''))
    .filter((r) => /^`.*`$/.test(r) && !listed.has(r));
  return roles.map(
    (r) =>
      `role ${unquote(r)}, whose privileges SHOW GRANTS does not list (not active): check them against docs/privileges.md`,
  );
}

/** The connection's own grants (privilege grants only), the roles they leave out, and its database. */
export async function readPrivileges(
  db: Db,
): Promise<{ database: string | null; grants: ParsedGrant[]; roles: string[] }> {
  const current = selectCurrentDatabase();
  const [row] = await db.query<{ d: string | null }>(current.sql, current.params);
  const show = showOwnGrants();
  const rows = await db.query<Record<string, string>>(show.sql, show.params);
  const lines = rows.map((r) => String(Object.values(r)[0] ?? ''));
  const grants = lines.map((l) => parseGrant(l)).filter((g): g is ParsedGrant => g !== null);
  return { database: row?.d ?? null, grants, roles: unlistedRoles(lines) };
}

/** The tables of a side's reference schema. */
export function fcctlTables(side: Side): ReadonlySet<string> {
  return new Set(parseSchema(schemaSql(side)).map((t) => t.name));
}

/** What {@link privilegeChecks} needs of doctor's deps. */
export interface PrivilegeDeps {
  readonly config: {
    readonly fcDatabaseUrl: { readonly value?: string };
    readonly shDatabaseUrl: { readonly value?: string };
  };
  fcDb(): Promise<Db>;
  shDb(): Promise<Db>;
}

/**
 * One line per configured database: its user's grants against fcctl's two databases. A side that
 * does not connect is left out (its connection line already failed).
 */
export async function privilegeChecks(deps: PrivilegeDeps): Promise<CheckResult[]> {
  const read: Array<{ side: Side; database: string | null; grants: ParsedGrant[]; roles: string[] }> = [];
  for (const side of ['fc', 'sh'] as Side[]) {
    if (deps.config[side === 'fc' ? 'fcDatabaseUrl' : 'shDatabaseUrl'].value === undefined) continue;
    try {
      read.push({ side, ...(await readPrivileges(side === 'fc' ? await deps.fcDb() : await deps.shDb())) });
    } catch {
      // not reachable: the side's connection check says why
    }
  }
  const fcctl: FcctlDatabases = read
    .filter((r) => r.database !== null)
    .map((r) => ({ name: r.database!, tables: fcctlTables(r.side) }));
  return read.map((r) =>
    privilegesCheck(`${r.side.toUpperCase()} database`, [...excessPrivileges(r.grants, fcctl), ...r.roles]),
  );
}
