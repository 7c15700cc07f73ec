import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';

/** The admin URL of the test MariaDB (set by `scripts/services.sh env`). */
export function testMysqlUrl(): string {
  const url = process.env['FCCTL_TEST_MYSQL_URL'];
  if (!url) throw new Error('FCCTL_TEST_MYSQL_URL is not set: run tests through `npm test` (scripts/test.sh)');
  return url;
}

export function testAmqpUrl(): string {
  const url = process.env['FCCTL_TEST_AMQP_URL'];
  if (!url) throw new Error('FCCTL_TEST_AMQP_URL is not set: run tests through `npm test` (scripts/test.sh)');
  return url;
}

export interface TestDatabases {
  readonly fcUrl: string;
  readonly shUrl: string;
  readonly fcName: string;
  readonly shName: string;
  /** a connection with rights on both, for arranging and asserting */
  readonly admin: mysql.Connection;
  /** env with FCCTL_FC/SH_DATABASE_URL pointing at these databases */
  env(extra?: Record<string, string>): Record<string, string | undefined>;
  drop(): Promise<void>;
}

/** Two fresh, empty databases for one test file, dropped afterwards. */
export async function freshDatabases(prefix = 't'): Promise<TestDatabases> {
  const base = testMysqlUrl().replace(/\/$/, '');
  const id = `${prefix}_${process.pid}_${randomBytes(3).toString('hex')}`;
  const fcName = `fcctl_${id}_fc`;
  const shName = `fcctl_${id}_sh`;
  const admin = await mysql.createConnection({
    uri: base,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    multipleStatements: true,
  });
  await admin.query(
    `CREATE DATABASE \`${fcName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin; CREATE DATABASE \`${shName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
  );
  const fcUrl = `${base}/${fcName}`;
  const shUrl = `${base}/${shName}`;
  const { cleanEnv } = await import('./cli.js');
  return {
    fcUrl,
    shUrl,
    fcName,
    shName,
    admin,
    env: (extra = {}) => cleanEnv({ FCCTL_FC_DATABASE_URL: fcUrl, FCCTL_SH_DATABASE_URL: shUrl, ...extra }),
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS \`${fcName}\`; DROP DATABASE IF EXISTS \`${shName}\``);
      await admin.end();
    },
  };
}
