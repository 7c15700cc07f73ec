import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// docs/ARCHITECTURE.md's rules, measured on the tree as it is: commands are adapters, functions
// stay short, the library never imports a command and infrastructure never imports a domain.
describe('structure (scripts/structure.mjs)', () => {
  it('no command file over 99 lines, no function over 80, no import against the layers', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['scripts/structure.mjs']).catch(
      (err: { stdout: string }) => ({ stdout: err.stdout }),
    );
    expect(stdout.trim()).toBe(
      '0 command files over 99 lines, 0 functions over 80 lines, 0 imports against the layers',
    );
  });
});
