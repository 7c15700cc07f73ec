/**
 * fcctl's commander `Command`: the same parser, with two usage errors made more useful — a
 * mistyped command at the top level is matched against every command path (`fcctl sned` → "did
 * you mean deliveries send?"; commander only looks one level down), and a command missing several
 * required options names all of them in one line (commander stops at the first, so an operator
 * fixing a cron line would need one run per option).
 */
import { Command } from '@commander-js/extra-typings';

/** Commander's limits for a suggestion: at most 3 edits, and more than 40 % of the word kept. */
const MAX_DISTANCE = 3;
const MIN_SIMILARITY = 0.4;

/**
 * Optimal-string-alignment distance (Damerau–Levenshtein without repeated edits of a substring),
 * the measure commander suggests with.
 * @example editDistance('sned', 'send') // 1 (a transposition)
 */
export function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > MAX_DISTANCE) return Math.max(a.length, b.length);
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 0; j <= b.length; j++) d[0]![j] = j;
  for (let j = 1; j <= b.length; j++) {
    for (let i = 1; i <= a.length; i++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** A command a mistyped word may have meant: the name compared, the path shown. */
export interface CommandCandidate {
  readonly name: string;
  readonly path: string;
}

const letters = (w: string) => [...w].sort().join('');

/**
 * The paths of the candidates closest to `word` by the rules commander suggests with (fewest
 * edits, at most 3, more than 40 % similar; no one-letter names), sorted. Among equally close
 * ones, those with exactly the word's letters win: swapped letters are the likeliest typo
 * (`sned` is `send`, though `seed` is one edit away too).
 * @example similarCommands('sned', [{ name: 'send', path: 'deliveries send' }, { name: 'seed', path: 'dev seed' }]) // ['deliveries send']
 */
export function similarCommands(word: string, candidates: readonly CommandCandidate[]): string[] {
  let best = MAX_DISTANCE;
  let similar: CommandCandidate[] = [];
  for (const c of candidates) {
    if (c.name.length <= 1) continue;
    const distance = editDistance(word, c.name);
    const length = Math.max(word.length, c.name.length);
    if ((length - distance) / length <= MIN_SIMILARITY) continue;
    if (distance < best) {
      best = distance;
      similar = [c];
    } else if (distance === best && !similar.some((s) => s.path === c.path)) {
      similar.push(c);
    }
  }
  const anagrams = similar.filter((c) => letters(c.name) === letters(word));
  return (anagrams.length > 0 ? anagrams : similar).map((c) => c.path).sort((x, y) => x.localeCompare(y));
}

/**
 * The "required option … not specified" message for every missing option at once; commander's
 * own wording when only one is missing.
 * @example missingOptionsMessage(["--school <id>", "--form <uuid>"]) // "error: required options '--school <id>' and '--form <uuid>' not specified"
 */
export function missingOptionsMessage(flags: readonly string[]): string {
  const quoted = flags.map((f) => `'${f}'`);
  if (quoted.length === 1) return `error: required option ${quoted[0]} not specified`;
  return `error: required options ${quoted.slice(0, -1).join(', ')} and ${quoted.at(-1)} not specified`;
}

/**
 * A commander error as the one line fcctl prints (without the `fcctl: ` prefix): `error: ` dropped,
 * a "(Did you mean …?)" line kept at the end of the same line.
 * @example commanderErrorLine("error: unknown command 'sned'\n(Did you mean send?)\n") // "unknown command 'sned' (did you mean send?)"
 */
export function commanderErrorLine(text: string): string {
  return text
    .replace(/^error: /, '')
    .trimEnd()
    .replace(/\n\(Did you mean ([^\n]*)\)$/, ' (did you mean $1)');
}

/**
 * The Command class fcctl builds its tree from; subcommands made by `.command()` are of it too.
 * Only the messages of two usage errors change: what is parsed, and the exit code (2), do not.
 */
export class FcctlCommand extends Command {
  override createCommand(name?: string): FcctlCommand {
    return new FcctlCommand(name);
  }

  override error(message: string, errorOptions?: { code?: string; exitCode?: number }): never {
    let text = message;
    if (errorOptions?.code === 'commander.missingMandatoryOptionValue') {
      // Raised for the first missing option of this command; the others are as missing.
      const missing = this.options
        .filter((o) => o.mandatory && this.getOptionValue(o.attributeName()) === undefined)
        .map((o) => o.flags);
      if (missing.length > 1) text = missingOptionsMessage(missing);
    } else if (
      errorOptions?.code === 'commander.unknownCommand' &&
      this.parent === null &&
      !message.includes('\n(Did you mean')
    ) {
      const word = /^error: unknown command '(.*)'$/s.exec(message)?.[1];
      const suggestion = word === undefined ? [] : similarCommands(word, this.leafCandidates());
      if (suggestion.length === 1) text = `${message}\n(Did you mean ${suggestion[0]}?)`;
      else if (suggestion.length > 1) text = `${message}\n(Did you mean one of ${suggestion.join(', ')}?)`;
    }
    return super.error(text, errorOptions);
  }

  /** Every command one level below a group, by its name and full path (`send` → `deliveries send`). */
  private leafCandidates(): CommandCandidate[] {
    return this.commands.flatMap((group) =>
      group.commands.map((c) => ({ name: c.name(), path: `${group.name()} ${c.name()}` })),
    );
  }
}
