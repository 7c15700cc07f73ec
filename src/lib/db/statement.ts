/**
 * A built SQL statement: the text with `?` placeholders and the values bound to them, in order.
 * Every SQL builder returns one (tested as text, executed on the real databases).
 * @example const s: Statement = { sql: 'SELECT 1 FROM answer WHERE answer_uuid = ?', params: [uuid] }; await db.query(s.sql, s.params);
 */
export interface Statement {
  readonly sql: string;
  readonly params: unknown[];
}
