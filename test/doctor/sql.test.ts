import { describe, expect, it } from 'vitest';
import { selectAppKeys } from '../../src/lib/doctor/isolation/sql.js';
import { selectServerVersion } from '../../src/lib/doctor/sql.js';

describe('doctor statements', () => {
  it("reads the server's version, and every registered app key whatever its status", () => {
    expect(selectServerVersion()).toEqual({ sql: 'SELECT VERSION() AS v', params: [] });
    expect(selectAppKeys()).toEqual({ sql: 'SELECT app_key FROM application_info ORDER BY app_key', params: [] });
  });
});
