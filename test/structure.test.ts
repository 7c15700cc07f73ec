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
      '0 command files over 99 lines, 0 places of logic in command files, 0 functions over 80 lines, 0 imports against the layers',
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
});
