import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

// docs/ARCHITECTURE.md's rules, measured on the tree as it is: commands are adapters (short, no
// logic), functions stay short, the library never imports a command and infrastructure never
// imports a domain.
describe('structure (scripts/structure.mjs)', () => {
  it('no command file over 99 lines or holding logic, no function over 80, no import against the layers', async () => {
    const { stdout } = await run(process.execPath, ['scripts/structure.mjs']).catch((err: { stdout: string }) => ({
      stdout: err.stdout,
    }));
    expect(stdout.trim()).toBe(
      "0 command files over 99 lines, 0 places of logic in command files, 0 functions over 80 lines, 0 imports against the layers, 0 statements executed outside a verb's store.ts",
    );
  });

  it('finds the logic a command file must leave to the library: loops, awaits, SQL, connections, two run functions', async () => {
    const root = await mkdtemp(join(tmpdir(), 'fcctl-structure-'));
    try {
      await mkdir(join(root, 'src/commands/noun'), { recursive: true });
      const adapter = [
        "import { checkAfter } from '../../lib/deliveries/failed/decide.js';",
        "import { runX } from '../../lib/noun/verb/command.js';",
        "import { runIdArg } from '../options.js';",
        'export const create = (o: { after: string }) => [checkAfter(o.after), runX, runIdArg];',
      ];
      await writeFile(join(root, 'src/commands/noun/adapter.ts'), `${adapter.join('\n')}\n`);
      const busy = [
        "import { readFile } from 'node:fs/promises';",
        "import { selectDue } from '../../lib/deliveries/send/sql.js';",
        "import { openDb } from '../../lib/db/connect.js';",
        "import { runA } from '../../lib/noun/a/command.js';",
        "import { runB } from '../../lib/noun/b/command.js';",
        'export async function go(rows: number[]) {',
        '  for (const r of rows) void r;',
        "  return [await readFile('x'), selectDue, openDb, runA, runB];",
        '}',
      ];
      await writeFile(join(root, 'src/commands/noun/busy.ts'), `${busy.join('\n')}\n`);
      const script = `import(${JSON.stringify(resolve('scripts/structure.mjs'))}).then((m) => console.log(JSON.stringify(m.measure(${JSON.stringify(root)}).commandLogic)))`;
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
      expect(JSON.parse(stdout)).toEqual([
        { at: 'src/commands/noun/busy.ts:1', what: 'an import of node:fs/promises' },
        { at: 'src/commands/noun/busy.ts:2', what: 'an import of ../../lib/deliveries/send/sql.js' },
        { at: 'src/commands/noun/busy.ts:3', what: 'an import of ../../lib/db/connect.js' },
        { at: 'src/commands/noun/busy.ts:6', what: 'an async function' },
        { at: 'src/commands/noun/busy.ts:7', what: 'a loop' },
        { at: 'src/commands/noun/busy.ts:8', what: 'an await' },
        { at: 'src/commands/noun/busy.ts', what: '2 run functions (runA, runB)' },
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('finds statements a verb folder executes outside its store.ts (run.ts orchestrates, store.ts executes)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'fcctl-structure-'));
    try {
      await mkdir(join(root, 'src/lib/noun/verb'), { recursive: true });
      await mkdir(join(root, 'src/lib/db'), { recursive: true });
      const store = ['export const read = (db: Db) => db.query(q.sql, q.params);'];
      await writeFile(join(root, 'src/lib/noun/verb/store.ts'), `${store.join('\n')}\n`);
      const runTs = [
        'export async function go(db: Db, conn: Conn) {',
        '  await read(db);',
        '  await db.query(q.sql, q.params);',
        '  await conn.execute(s.sql, s.params).then(() => db.transaction(f));',
        '}',
      ];
      await writeFile(join(root, 'src/lib/noun/verb/run.ts'), `${runTs.join('\n')}\n`);
      // infrastructure executes statements itself (the connection, the clock)
      await writeFile(join(root, 'src/lib/db/clock.ts'), 'export const now = (db: Db) => db.query(q.sql);\n');
      const script = `import(${JSON.stringify(resolve('scripts/structure.mjs'))}).then((m) => console.log(JSON.stringify(m.measure(${JSON.stringify(root)}).statementsOutsideStore)))`;
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
      expect(JSON.parse(stdout)).toEqual([
        { at: 'src/lib/noun/verb/run.ts:3', what: '.query(…)' },
        { at: 'src/lib/noun/verb/run.ts:4', what: '.execute(…)' },
        { at: 'src/lib/noun/verb/run.ts:4', what: '.transaction(…)' },
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
