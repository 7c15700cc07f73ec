/**
 * The one shell quoting of printed commands (lib/cli/shell.ts), checked against bash itself: each
 * word, however hostile, comes back as the one word it was, and nothing in it runs.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellLine, shellWord } from '../../src/lib/cli/shell.js';

/** The words bash makes of a line, `fcctl` a function that prints them. */
const argvOf = (line: string) =>
  execFileSync('bash', ['-c', `fcctl() { printf '%s\\0' "$@"; }\n${line}`], { encoding: 'utf8' })
    .split('\0')
    .slice(0, -1);

const HOSTILE = [
  '$(touch /tmp/never)',
  '`touch /tmp/never`',
  "'$(touch /tmp/never)'",
  "a'b",
  "'",
  "''",
  'a b',
  'a;b',
  'a|b&c>d<e',
  '$HOME',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell's parameter expansion, as a value holds it
  '${IFS}',
  '~root',
  '*',
  '!x',
  '#x',
  'a\nb',
  'tab\there',
  '"q"',
  '\\',
  '',
  '-x',
  '张三',
];

describe('shellWord and shellLine', () => {
  it('leave a plain word bare', () => {
    for (const w of ['explain:e1:g0', '5', 'honor_apply', '/runs/5/a-b.jsonl', 'k@x%y+z=1,2'])
      expect(shellWord(w)).toBe(w);
  });
  it.each(HOSTILE)('bash reads %j back as itself, one word', (w) => {
    expect(argvOf(shellLine(['x', w, 'y']))).toEqual(['x', w, 'y']);
  });
  it('quote every word of a line', () => {
    expect(shellLine(['deliveries', 'replay', '--consumer', "k'$x"])).toBe(
      `fcctl deliveries replay --consumer 'k'\\''$x'`,
    );
    expect(argvOf(shellLine(HOSTILE))).toEqual(HOSTILE);
  });
});
