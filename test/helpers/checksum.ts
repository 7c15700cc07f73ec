import type mysql from 'mysql2/promise';

/** The FC tables fcctl reads and writes. */
export const FC_TABLES = [
  'fcctl_schema_version',
  'application_info',
  'form_consumer_grant',
  'answer',
  'answer_delivery',
  'fcctl_replay_operation',
] as const;

/**
 * `CHECKSUM TABLE` of every FC table, as one comparable string: equal before and after means
 * the command changed nothing.
 */
export async function checksumTables(
  admin: mysql.Connection,
  database: string,
  tables: readonly string[] = FC_TABLES,
): Promise<string> {
  const [rows] = await admin.query(`CHECKSUM TABLE ${tables.map((t) => `\`${database}\`.\`${t}\``).join(', ')}`);
  return (rows as Array<{ Table: string; Checksum: string | number | null }>)
    .map((r) => `${r.Table}=${r.Checksum}`)
    .join(' ');
}
