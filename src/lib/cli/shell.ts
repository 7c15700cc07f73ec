/**
 * Commands printed for a person to paste into a shell (`explain`'s next command, the report's
 * actions, a run to retry): every word quoted here, so a value read from a database — a consumer
 * key, a path, a run id — is one word the shell reads as itself, never code it runs.
 */

/**
 * A word the shell reads as itself: left bare when it holds only characters no shell reads
 * specially, else in single quotes (inside which nothing is special; a `'` is closed, escaped and
 * reopened). The report's page carries the same rule in its own script (reconcile/report/client.ts).
 * @example shellWord('explain:e1:g0') // 'explain:e1:g0'; shellWord("a'$(b)") // `'a'\''$(b)'`
 */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

/**
 * A command line of `fcctl` and these words, each quoted by {@link shellWord}.
 * @example shellLine(['deliveries', 'replay', '--consumer', 'k 1']) // "fcctl deliveries replay --consumer 'k 1'"
 */
export function shellLine(words: readonly string[]): string {
  return ['fcctl', ...words].map(shellWord).join(' ');
}
