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

/** The publisher's RabbitMQ permissions, read from the page's `sh` block (rabbitmqctl lines). */
export interface BrokerPermissions {
  /** configure, write, read regexes on the vhost */
  readonly permissions: readonly [string, string, string];
  /** the exchange, and its topic write and read regexes */
  readonly topic: readonly [string, string, string];
}

/** The `sh` block of docs/privileges.md: `set_permissions` and `set_topic_permissions` for `{user}` on `{vhost}`. */
export function brokerPermissions(markdown = readFileSync(PRIVILEGES_PAGE, 'utf8')): BrokerPermissions {
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(markdown)?.[1];
  if (!block) throw new Error('docs/privileges.md: no sh block with the publisher permissions');
  const args = (verb: string) => {
    const line = block.split('\n').find((l) => l.startsWith(`rabbitmqctl ${verb} `));
    if (!line) throw new Error(`docs/privileges.md: no rabbitmqctl ${verb} line`);
    const rest = line.slice(`rabbitmqctl ${verb} -p {vhost} {user} `.length);
    return [...rest.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
  };
  const [c, w, r] = args('set_permissions') as [string, string, string];
  const [x, tw, tr] = args('set_topic_permissions') as [string, string, string];
  return { permissions: [c, w, r], topic: [x, tw, tr] };
}
