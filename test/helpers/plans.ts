import type mysql from 'mysql2/promise';
import type { Statement } from '../../src/lib/db/statement.js';

/** One table access of a plan (EXPLAIN or ANALYZE FORMAT=JSON). */
export interface Access {
  table_name: string;
  access_type: string;
  key?: string;
  using_index?: boolean;
  rows?: number;
  r_rows?: number;
}

/** Every table access of a plan's JSON, depth first. */
function accesses(node: unknown, out: Access[] = []): Access[] {
  if (Array.isArray(node)) for (const n of node) accesses(n, out);
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (typeof o['table_name'] === 'string' && typeof o['access_type'] === 'string') out.push(o as unknown as Access);
    for (const v of Object.values(o)) accesses(v, out);
  }
  return out;
}

/** The table accesses of a statement's plan (`EXPLAIN`, or `ANALYZE` with the rows really read), derived tables left out. */
export async function planAccesses(
  conn: mysql.Connection,
  q: Statement,
  how: 'EXPLAIN' | 'ANALYZE',
): Promise<Access[]> {
  const [rows] = await conn.query(`${how} FORMAT=JSON ${q.sql}`, q.params);
  const text = Object.values((rows as Array<Record<string, string>>)[0]!)[0]!;
  return accesses(JSON.parse(text)).filter((a) => !a.table_name.startsWith('<'));
}
