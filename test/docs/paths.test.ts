import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 28 moved most of src/lib; comments and pages that name a library file by its path must
// follow it. Every `src/lib/…`, `lib/…` or `src/commands/…` file path named in src/, test/, docs/,
// README.md and BENCHMARKS.md is a file of the tree (`.js` as imports spell it names the `.ts`).

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const ROOTS = ['src', 'test', 'docs', 'README.md', 'BENCHMARKS.md'];
/** Files that name paths of a tree they build themselves (a temp dir), not of this one. */
const OWN_TREES = new Set(['test/structure.test.ts']);

function filesUnder(p: string): string[] {
  const abs = join(REPO, p);
  if (!statSync(abs).isDirectory()) return [p];
  return readdirSync(abs).flatMap((f) => filesUnder(join(p, f)));
}

/** A path as written, from the repository root; not one relative to a file (`../lib/…`) or of another tree (`/var/lib/…`). */
const PATH = /(?<![\w./-])((?:src\/)?(?:lib|commands)\/[\w./-]*\w\.(?:ts|tsx|js))(?![\w/])/g;

const exists = (named: string) => {
  const p = named.startsWith('src/') ? named : `src/${named}`;
  return [p, p.replace(/\.js$/, '.ts'), p.replace(/\.js$/, '.tsx')].some((q) => existsSync(join(REPO, q)));
};

describe('file paths named in code comments and docs', () => {
  it('every src/lib or src/commands file named is in the tree', () => {
    const missing: string[] = [];
    const files = ROOTS.flatMap(filesUnder).filter((f) => /\.(ts|tsx|md|mjs)$/.test(f) && !OWN_TREES.has(f));
    expect(files.length).toBeGreaterThan(100);
    for (const f of files)
      for (const m of readFileSync(join(REPO, f), 'utf8').matchAll(PATH))
        if (!exists(m[1]!)) missing.push(`${f}: ${m[1]}`);
    expect(missing).toEqual([]);
  });
});
