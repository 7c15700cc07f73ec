import { describe, expect, it } from 'vitest';
import { keyOrderProblem } from '../../src/lib/db/schema.js';

describe('keyOrderProblem: key columns ordered by their bytes (issue 35 §4)', () => {
  it.each([
    ['char', 'utf8mb4_bin', true],
    ['varchar', 'utf8mb4_bin', true],
    ['char', 'utf8mb4_0900_bin', true],
    ['CHAR', 'ascii_bin', true],
    ['binary', null, true],
    ['varbinary', null, true],
    ['char', 'utf8mb4_unicode_ci', false],
    ['char', 'utf8mb4_0900_ai_ci', false],
    ['varchar', 'utf8mb4_general_ci', false],
    ['varchar', 'latin1_swedish_ci', false],
    ['char', null, false],
    ['text', 'utf8mb4_bin', false],
    ['int', null, false],
  ] as const)('%s %s → ordered by bytes: %s', (type, collation, ok) => {
    const p = keyOrderProblem({ table: 'answer', column: 'answer_uuid', type, collation });
    expect(p === null).toBe(ok);
    if (!ok) expect(p).toEqual({ kind: 'key-order', table: 'answer', column: 'answer_uuid', type, collation });
  });

  it.each([
    ['answer', 'values_json', 'longtext', null],
    ['answer_delivery', 'snapshot_json', 'longtext', null],
    ['answer_delivery', 'snapshot_json', 'json', 'json-type'],
    ['fc_answer_projection', 'snapshot_json', 'json', 'json-type'],
    ['answer', 'values_json', 'json', 'json-type'],
  ] as const)('%s.%s as %s → %s', (table, column, type, kind) => {
    const p = keyOrderProblem({ table, column, type, collation: 'utf8mb4_bin' });
    expect(p === null ? null : p.kind).toBe(kind);
  });
});
