import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const PRIVILEGES_PAGE = fileURLToPath(new URL('../../docs/privileges.md', import.meta.url));

/** One `sql` block of docs/privileges.md: the command it is for and its GRANT statements. */
export interface CommandGrants {
  /** `deliveries send --follow`, as the block's first line `-- fcctl …` names it */
  readonly command: string;
  /** with `{fc}`, `{sh}` and `{user}` placeholders, without the trailing `;` */
  readonly grants: readonly string[];
}

/**
 * The grants of every command, read from the page's fenced `sql` blocks: the one place they are
 * written, so the page and the test cannot drift. A block is `-- fcctl <command>` then GRANT lines
 * (and `--` comments).
 */
export function parsePrivilegesPage(markdown: string): CommandGrants[] {
  const blocks = [...markdown.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  return blocks.map((block) => {
    const lines = block.split('\n').filter((l) => l.trim() !== '');
    const command = /^-- fcctl (.+)$/.exec(lines[0] ?? '')?.[1];
    if (!command)
      throw new Error(`docs/privileges.md: an sql block without "-- fcctl <command>": ${block.slice(0, 60)}`);
    // after the first line, `--` lines are comments (why a grant is there)
    const grants = lines
      .slice(1)
      .filter((l) => !l.startsWith('--'))
      .map((l) => {
        if (!/^GRANT [A-Z, ]+ ON \{(fc|sh)\}\.(\*|\w+) TO \{user\};$/.test(l)) {
          throw new Error(`docs/privileges.md (${command}): not a GRANT this test understands: ${l}`);
        }
        return l.slice(0, -1);
      });
    return { command, grants };
  });
}

export function privilegesPage(): CommandGrants[] {
  return parsePrivilegesPage(readFileSync(PRIVILEGES_PAGE, 'utf8'));
}

/** The statements that give `user` (`'name'@'%'`) a block's grants on these databases. */
export function grantStatements(
  g: CommandGrants,
  names: { readonly fc: string; readonly sh: string; readonly user: string },
): string[] {
  return g.grants.map((s) =>
    s.replaceAll('{fc}', `\`${names.fc}\``).replaceAll('{sh}', `\`${names.sh}\``).replaceAll('{user}', names.user),
  );
}
