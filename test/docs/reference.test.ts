import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

// Issue 28 §1: the README is what a newcomer reads in five minutes, the reference lives in
// docs/commands/<noun>.md, and this test keeps the two true to `fcctl --help`: every command and
// option --help prints is on its noun's page, and no page names an option or a command that does
// not exist. No services needed: the help comes from the command tree itself (src/main.ts).

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const read = (p: string) => readFileSync(join(REPO, p), 'utf8');

/** Flags of other programs the pages show beside fcctl's, each with where it comes from. */
const EXTERNAL_FLAGS: Record<string, string> = {
  '--now': 'systemctl enable/disable --now (docs/operations.md, service mode)',
  '--omit': 'npm ci --omit=dev (the image, docs/operations.md)',
  '--write': 'biome check --write (docs/development.md)',
  '--port': 'the flow-center stand-in fixtures/flow-center/server.mjs (docs/flow-center.md)',
  '--latency-ms': 'the flow-center stand-in (docs/flow-center.md)',
};
/** What may stand before fcctl on a command line. */
const LAUNCHERS = new Set(['node', 'exec', 'sudo', 'env', '$']);
/** `fcctl <word>` that names no command on purpose: the typo of the usage-error example. */
const NOT_COMMANDS = new Set(['sned']);

interface Command {
  readonly path: readonly string[]; // [] is fcctl itself
  readonly options: readonly string[]; // long flags, as --help prints them
  readonly subcommands: readonly string[];
}

/** The entries of one section (`Options:`, `Commands:`) of commander's help: lines indented by two. */
function section(help: string, name: string): string[] {
  const out: string[] = [];
  let inside = false;
  for (const line of help.split('\n')) {
    if (/^\S.*:$/.test(line)) inside = line === `${name}:`;
    else if (inside && /^ {2}\S/.test(line)) out.push(line.slice(2));
  }
  return out;
}

async function helpOf(path: readonly string[]): Promise<Command> {
  const r = await runCli([...path, '--help']);
  expect(r.code, `fcctl ${path.join(' ')} --help`).toBe(0);
  const options = section(r.stdout, 'Options')
    .map((l) => /^(?:-\w, )?(--[a-z][\w-]*)/.exec(l)?.[1])
    .filter((o): o is string => o !== undefined && o !== '--help' && o !== '--version');
  const subcommands = section(r.stdout, 'Commands')
    .map((l) => /^([a-z][\w-]*)/.exec(l)![1]!)
    .filter((c) => c !== 'help');
  return { path, options, subcommands };
}

async function tree(): Promise<Command[]> {
  const all: Command[] = [];
  const walk = async (path: readonly string[]) => {
    const c = await helpOf(path);
    all.push(c);
    for (const s of c.subcommands) await walk([...path, s]);
  };
  await walk([]);
  return all;
}

/** The page of a command: its noun's, `resume` with `pause`. */
const pageOf = (path: readonly string[]) => `docs/commands/${path[0] === 'resume' ? 'pause' : path[0]}.md`;

function markdownFiles(dir: string): string[] {
  return readdirSync(join(REPO, dir)).flatMap((f) => {
    const p = join(dir, f);
    return statSync(join(REPO, p)).isDirectory() ? markdownFiles(p) : p.endsWith('.md') ? [p] : [];
  });
}
const PAGES = ['README.md', ...markdownFiles('docs')];

/** Code as the reader sees it: every inline code span and every line of a fenced block. */
function codeOf(text: string): string[] {
  const code: string[] = [];
  const prose: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    else if (fenced) code.push(line.replace(/(^|\s)#\s.*$/, ''));
    else prose.push(line);
  }
  // spans may wrap over a line break in prose
  for (const m of prose.join('\n').matchAll(/(`+)([^`]+?)\1/g)) code.push(m[2]!.replace(/\s+/g, ' '));
  return code;
}

/** GitHub's heading anchors. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const base = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const flagsIn = (s: string) => [...s.matchAll(/(?<![\w-])(--[a-z][a-z0-9-]*)/g)].map((m) => m[1]!);

let commands: Command[] = [];
let known = new Set<string>();
let global: readonly string[] = [];
const byPath = new Map<string, Command>();

beforeAll(async () => {
  commands = await tree();
  global = [...commands[0]!.options, '--help', '--version'];
  known = new Set([...commands.flatMap((c) => c.options), ...global]);
  for (const c of commands) byPath.set(c.path.join(' '), c);
}, 60_000);

describe('the command reference (docs/commands/) is what --help prints', () => {
  it('finds the command tree (every noun, every verb)', () => {
    expect(commands.length).toBeGreaterThan(25);
    expect(byPath.get('deliveries send')?.options).toContain('--batch-size');
  });

  it('every command and every option it prints is on its noun page, in the options table of that command', () => {
    const missing: string[] = [];
    for (const c of commands.slice(1)) {
      const name = c.path.join(' ');
      const page = pageOf(c.path);
      if (!existsSync(join(REPO, page))) {
        missing.push(`${page}: no page for fcctl ${name}`);
        continue;
      }
      const text = read(page);
      if (!text.replace(/\s+/g, ' ').includes(`fcctl ${name}`)) missing.push(`${page}: never names fcctl ${name}`);
      // a noun with only verbs has no options table of its own
      if (c.subcommands.length > 0 && c.options.length === 0) continue;
      const table = new RegExp(`(?:^|\\n)### Options of \`${name}\`\\n([\\s\\S]*?)(?=\\n#|(?![\\s\\S]))`).exec(
        text,
      )?.[1];
      if (table === undefined) {
        missing.push(`${page}: no "### Options of \`${name}\`" section`);
        continue;
      }
      const listed = [...table.matchAll(/^\| `(?:-\w, )?(--[a-z][\w-]*)/gm)].map((m) => m[1]!);
      for (const o of c.options)
        if (!listed.includes(o)) missing.push(`${page}: ${name} ${o} not in its options table`);
      for (const o of listed) if (!c.options.includes(o)) missing.push(`${page}: ${name} has no option ${o}`);
      for (const o of c.options)
        if (!new RegExp(`(?<![\\w-])${o}(?![\\w-])`).test(text)) missing.push(`${page}: ${name} ${o} missing`);
    }
    expect(missing).toEqual([]);
  });

  it('the global options (fcctl --help) are the table of docs/commands/config.md#global-options', () => {
    const table = /\n## Global options\n([\s\S]*?)(?=\n#|(?![\s\S]))/.exec(read('docs/commands/config.md'))?.[1] ?? '';
    const listed = [...table.matchAll(/^\| `(?:-\w, )?(--[a-z][\w-]*)/gm)].map((m) => m[1]!);
    expect(listed.filter((o) => o !== '--help' && o !== '--version').sort()).toEqual([...commands[0]!.options].sort());
    expect(listed).toEqual(expect.arrayContaining(['--help', '--version']));
  });

  it('every page of docs/commands/ is the page of a command', () => {
    const pages = new Set(commands.slice(1).map((c) => pageOf(c.path)));
    for (const f of readdirSync(join(REPO, 'docs/commands'))) expect(pages, f).toContain(`docs/commands/${f}`);
  });

  it("the list of other programs' flags holds only flags a page shows", () => {
    const all = PAGES.map(read).join('\n');
    for (const f of Object.keys(EXTERNAL_FLAGS)) expect(flagsIn(all), f).toContain(f);
  });

  it('no page names an option that no command has (external tools on a short, explained list)', () => {
    const bogus: string[] = [];
    for (const page of PAGES) {
      const text = read(page).replace(/\]\([^)]*\)/g, ']()'); // link targets are not text
      for (const f of flagsIn(text)) if (!known.has(f) && !(f in EXTERNAL_FLAGS)) bogus.push(`${page}: ${f}`);
    }
    expect(bogus).toEqual([]);
  });

  it('every `fcctl <noun> [<verb>] --flag` (or a span starting `<noun> <verb>`) names a command and its own options', () => {
    const nouns = new Set(commands.filter((c) => c.path.length === 1).map((c) => c.path[0]!));
    const wrong: string[] = [];
    for (const page of PAGES) {
      for (const code of codeOf(read(page))) {
        // one command per piece: a pipe, `&&` or `;` ends it
        for (const piece of code.split(/\s\|\s|&&|;/)) {
          const words = piece.trim().split(/\s+/);
          // fcctl in command position: after environment assignments or a launcher (`node bin/fcctl`)
          const at = words.findIndex((w) => !/^\w+=/.test(w) && !LAUNCHERS.has(w));
          const start = at >= 0 && /^(?:\S*\/)?fcctl$/.test(words[at]!) ? at + 1 : 0;
          const noun = words[start];
          if (noun === undefined || (start === 0 && !nouns.has(noun))) continue;
          if (!/^[a-z][\w-]*$/.test(noun)) continue; // `fcctl <command>`, `fcctl …`
          if (!nouns.has(noun)) {
            if (!NOT_COMMANDS.has(noun)) wrong.push(`${page}: no command fcctl ${noun} (${piece.trim()})`);
            continue;
          }
          let cmd = byPath.get(noun)!;
          const verb = words[start + 1];
          if (cmd.subcommands.length > 0 && verb !== undefined && /^[a-z][\w-]*$/.test(verb)) {
            const sub = byPath.get(`${noun} ${verb}`);
            if (sub === undefined) {
              if (start > 0) wrong.push(`${page}: no command fcctl ${noun} ${verb} (${piece.trim()})`);
              continue;
            }
            cmd = sub;
          }
          for (const f of flagsIn(piece))
            if (!cmd.options.includes(f) && !global.includes(f))
              wrong.push(`${page}: fcctl ${cmd.path.join(' ')} has no option ${f} (${piece.trim()})`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('README.md: what a newcomer reads in five minutes', () => {
  const readme = read('README.md');

  it('is at most 260 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(260);
  });

  it('opens with the two commands: set up and run the demo, set up and run the whole test suite', () => {
    const first = /```\w*\n([\s\S]*?)```/.exec(readme)![1]!;
    const commandsOf = first
      .split('\n')
      .map((l) => l.replace(/\s#.*$/, '').trim())
      .filter((l) => l !== '');
    expect(commandsOf).toEqual(['npm install && npm run demo', 'npm install && npm test']);
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['demo']).toBeDefined();
    expect(scripts['test']).toBeDefined();
  });

  it('links docs/ARCHITECTURE.md on its first screen', () => {
    expect(readme.split('\n').slice(0, 40).join('\n')).toContain('](docs/ARCHITECTURE.md)');
  });

  it('has one line per command, linking to its page', () => {
    for (const c of commands.slice(1)) {
      if (c.subcommands.length > 0 && c.options.length === 0) continue; // a noun of verbs only
      const line = readme.split('\n').find((l) => l.startsWith(`| [\`fcctl ${c.path.join(' ')}\`](`));
      expect(line, `fcctl ${c.path.join(' ')}`).toBeDefined();
      expect(line).toContain(`](${pageOf(c.path)}`);
    }
  });
});

describe('links in README.md and docs/', () => {
  it('every relative link resolves to a file, and its #anchor to a heading there', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const text = read(page).replace(/```[\s\S]*?```/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? join(REPO, page) : join(REPO, dirname(page), path);
        if (!existsSync(file)) {
          broken.push(`${page}: ${target} (no ${relative(REPO, file)})`);
          continue;
        }
        if (anchor !== undefined && !anchors(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor})`);
      }
    }
    expect(broken).toEqual([]);
  });
});
