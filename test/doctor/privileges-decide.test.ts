import { describe, expect, it } from 'vitest';
import {
  anyDatabase,
  databaseMatches,
  unlistedRoles,
  excessPrivileges,
  type FcctlDatabases,
  fcctlTables,
  type ParsedGrant,
  parseGrant,
  privilegesCheck,
} from '../../src/lib/doctor/privileges.js';
import { selectCurrentDatabase, showOwnGrants } from '../../src/lib/doctor/sql.js';

const FCCTL: FcctlDatabases = [
  { name: 'form_center', tables: fcctlTables('fc') },
  { name: 'svc_hall', tables: fcctlTables('sh') },
];
const excess = (...lines: string[]) =>
  excessPrivileges(
    lines.map((l) => parseGrant(l)!),
    FCCTL,
  );

describe('doctor privileges: SHOW GRANTS lines parsed', () => {
  it.each<[string, ParsedGrant | null]>([
    [
      "GRANT USAGE ON *.* TO `relay`@`%` IDENTIFIED BY PASSWORD '*AF5C'",
      { privileges: ['USAGE'], database: '*', table: '*', grantOption: false },
    ],
    [
      "GRANT ALL PRIVILEGES ON *.* TO `fcctl`@`127.0.0.1` IDENTIFIED BY PASSWORD '*AF5C' WITH GRANT OPTION",
      { privileges: ['ALL PRIVILEGES'], database: '*', table: '*', grantOption: true },
    ],
    [
      'GRANT SELECT, UPDATE ON `form_center`.`answer_delivery` TO `relay`@`%`',
      { privileges: ['SELECT', 'UPDATE'], database: 'form_center', table: 'answer_delivery', grantOption: false },
    ],
    // MySQL 8: column lists, dynamic privileges, the grantee unquoted
    [
      'GRANT SELECT (`state`, `id`), UPDATE (`state`) ON `form_center`.`answer_delivery` TO relay@%',
      { privileges: ['SELECT', 'UPDATE'], database: 'form_center', table: 'answer_delivery', grantOption: false },
    ],
    [
      'GRANT BACKUP_ADMIN,SYSTEM_VARIABLES_ADMIN ON *.* TO `ops`@`%`',
      { privileges: ['BACKUP_ADMIN', 'SYSTEM_VARIABLES_ADMIN'], database: '*', table: '*', grantOption: false },
    ],
    [
      'GRANT CREATE, ALTER, INDEX ON `svc\\_hall`.* TO `migrate`@`%`',
      { privileges: ['CREATE', 'ALTER', 'INDEX'], database: 'svc\\_hall', table: '*', grantOption: false },
    ],
    // not privilege grants of this account
    ['GRANT SELECT, INSERT ON `test`.* TO PUBLIC', null],
    ['GRANT `fcctl_role` TO `relay`@`%`', null],
    ["GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION", null],
  ])('%s', (line, parsed) => {
    expect(parseGrant(line)).toEqual(parsed);
  });

  it('database names are LIKE patterns unless escaped', () => {
    expect(databaseMatches('svc\\_hall', 'svc_hall')).toBe(true);
    expect(databaseMatches('svc\\_hall', 'svcXhall')).toBe(false);
    expect(databaseMatches('svc_hall', 'svcXhall')).toBe(true);
    expect(databaseMatches('svc%', 'svc_hall_archive')).toBe(true);
    expect(anyDatabase('%')).toBe(true);
    expect(anyDatabase('fcctl\\_%')).toBe(true);
    expect(anyDatabase('fc\\%')).toBe(false);
    expect(anyDatabase('fc_prod')).toBe(false);
    expect(databaseMatches('form_center', 'FORM_CENTER')).toBe(true);
  });

  it('reads its own grants and database without a privilege', () => {
    expect(showOwnGrants()).toEqual({ sql: 'SHOW GRANTS', params: [] });
    expect(selectCurrentDatabase()).toEqual({ sql: 'SELECT DATABASE() AS d', params: [] });
  });
});

describe('doctor privileges: what is far more than fcctl needs', () => {
  it.each<[string, string[], string[]]>([
    [
      'the least-privilege relay of docs/privileges.md',
      [
        'GRANT USAGE ON *.* TO `relay`@`%`',
        'GRANT SELECT, UPDATE ON `form_center`.`answer_delivery` TO `relay`@`%`',
        'GRANT SELECT ON `form_center`.`fcctl_pause` TO `relay`@`%`',
        'GRANT SELECT, INSERT, UPDATE, DELETE ON `form_center`.`fcctl_worker` TO `relay`@`%`',
        'GRANT REFERENCES ON `form_center`.* TO `relay`@`%`',
      ],
      [],
    ],
    [
      "db init's schema rights, --max-lag's replica monitoring",
      [
        'GRANT REPLICATION CLIENT ON *.* TO `m`@`%`',
        'GRANT REPLICA MONITOR ON *.* TO `m`@`%`',
        'GRANT CREATE, ALTER, INDEX, SELECT ON `svc\\_hall`.* TO `m`@`%`',
      ],
      [],
    ],
    [
      'ALL ON *.* WITH GRANT OPTION (the test server user)',
      ['GRANT ALL PRIVILEGES ON *.* TO `fcctl`@`127.0.0.1` WITH GRANT OPTION'],
      ['global ALL PRIVILEGES', 'GRANT OPTION on *.*'],
    ],
    ['SUPER among harmless ones', ['GRANT SUPER, REPLICATION CLIENT ON *.* TO `x`@`%`'], ['global SUPER']],
    [
      'writes on another database (reads there are not named)',
      ['GRANT INSERT, SELECT ON `billing`.* TO `x`@`%`', 'GRANT SELECT ON `hr`.`people` TO `x`@`%`'],
      ["INSERT on billing.*, outside fcctl's databases"],
    ],
    [
      'writes on every table of an fcctl database, not only fcctl’s',
      ['GRANT SELECT, INSERT, UPDATE, DELETE, DROP ON `form_center`.* TO `x`@`%`'],
      ['INSERT, UPDATE, DELETE, DROP on every table of form_center'],
    ],
    [
      "a write on a table of the FC database that is not fcctl's",
      ['GRANT UPDATE ON `form_center`.`form_definition` TO `x`@`%`'],
      ['UPDATE on form_center.form_definition, not an fcctl table'],
    ],
    [
      'GRANT OPTION on an fcctl table',
      ['GRANT SELECT ON `svc_hall`.`fc_answer_projection` TO `x`@`%` WITH GRANT OPTION'],
      ['GRANT OPTION on svc_hall.fc_answer_projection'],
    ],
    [
      'a database pattern that covers an fcctl database (and others): its writes named',
      ['GRANT DELETE ON `svc%`.* TO `x`@`%`'],
      ['DELETE on every database matching svc%'],
    ],
    [
      "db init's CREATE, ALTER through a pattern covering fcctl's database: they reach the others too",
      ['GRANT SELECT, CREATE, ALTER ON `%`.* TO `x`@`%`'],
      ['CREATE, ALTER on every database matching %'],
    ],
  ])('%s', (_name, lines, expected) => {
    expect(excess(...lines)).toEqual(expected);
  });

  it('a warn line naming them, never a failure; ok when there is nothing to say', () => {
    expect(privilegesCheck('FC database', [])).toEqual({
      check: 'FC database privileges',
      status: 'ok',
      detail: "no global privilege, no writes outside fcctl's tables",
    });
    const warn = privilegesCheck('SH database', ['global SUPER', 'GRANT OPTION on *.*']);
    expect(warn.status).toBe('warn');
    expect(warn.detail).toContain('global SUPER; GRANT OPTION on *.*');
    expect(warn.detail).toContain('docs/privileges.md');
  });
});

describe('unlistedRoles', () => {
  it.each([
    ['a role not active (MariaDB lists only its grant)', ['GRANT `admin` TO `fcctl`@`%`'], ['admin']],
    ['MySQL 8 form, role with its host', ['GRANT `r1`@`%`,`r2`@`%` TO `u`@`%`'], ['r1', 'r2']],
    [
      "an active role: its grants are listed, and weighed as the user's",
      ['GRANT `admin` TO `fcctl`@`%`', 'GRANT ALL PRIVILEGES ON *.* TO `admin`'],
      [],
    ],
    ['no role', ['GRANT SELECT ON `fc`.* TO `fcctl`@`%`', 'GRANT SELECT ON `test`.* TO PUBLIC'], []],
  ])('%s', (_name, lines, roles) => {
    expect(unlistedRoles(lines)).toEqual(roles.map((r) => expect.stringMatching(new RegExp(`^role ${r}, whose`))));
  });
});
