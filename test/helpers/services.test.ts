import { existsSync } from 'node:fs';
import { expect } from 'vitest';
import { servicesTest } from './services.js';

// The fixture itself: file-scoped values are shared by the file's tests and hooks, made once.
const test = servicesTest({ prefix: 'fixture', init: 'fc' });
let seenInHook: string | undefined;
test.beforeAll(async ({ dbs }) => {
  seenInHook = dbs.fcName;
});

test('databases exist and are initialised; the same ones in a hook and a test', async ({ dbs, tmp }) => {
  expect(dbs.fcName).toBe(seenInHook);
  const [rows] = await dbs.admin.query(`SHOW TABLES FROM \`${dbs.fcName}\` LIKE 'answer_delivery'`);
  expect(rows).toHaveLength(1);
  expect(existsSync(tmp)).toBe(true);
});

test('a second test gets the same file-scoped databases and a fresh io', async ({ dbs, io }) => {
  expect(dbs.fcName).toBe(seenInHook);
  io.io.stdout.write('x');
  expect(io.stdout()).toBe('x');
});
