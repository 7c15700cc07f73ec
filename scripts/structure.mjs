// The structure rules of issues 18 and 28 and docs/ARCHITECTURE.md, measured: command files under
// 100 lines and holding no logic (see `commandLogic`), functions under 80 lines (the
// canonicalizer's parser excepted), and the layers: the library never imports a command, and the
// infrastructure modules never import a domain.
// `node scripts/structure.mjs` lists what breaks them (exit 1); test/structure.test.ts runs it.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export const MAX_COMMAND_LINES = 99;
export const MAX_FUNCTION_LINES = 80;
const EXEMPT = new Set(['src/lib/canon/canonicalizer.ts']);
// Not commands: the option parsers and the context every command shares.
const COMMAND_SUPPORT = new Set(['src/commands/options.ts', 'src/commands/context.ts']);
/** src/lib folders that serve every domain; they import only each other (and no domain). */
export const INFRASTRUCTURE = new Set([
  'canon',
  'batch',
  'files',
  'metrics',
  'cli',
  'config',
  'db',
  'amqp',
  'flow',
  'time',
  'service',
  'ids.ts',
]);
/** The `canon` verbs' own folders: domain code (they may read a delivery envelope), though canon itself serves all. */
const CANON_VERBS = new Set(['hash', 'verify', 'check-envelope']);
const layerOf = (rel) => {
  const [, , top, sub] = rel.split('/');
  return top === 'canon' && CANON_VERBS.has(sub)
    ? 'domain'
    : INFRASTRUCTURE.has(top.replace(/\.js$/, '.ts'))
      ? 'infrastructure'
      : 'domain';
};

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/**
 * Modules a command file may not import: statements (`sql.ts`), connections (`lib/db/connect`,
 * `lib/amqp`, `lib/flow`, `lib/service`), and files, processes or sockets. What it needs from the
 * library is its one run function (`command.ts`), the pure checks of its flags (`decide.ts`,
 * `input.ts`, `lib/ids.ts`) and constants.
 */
const COMMAND_FORBIDDEN_IMPORTS = [
  /\/sql\.js$/,
  /(^|\/)lib\/(db\/connect|amqp\/|flow\/|service\/)/,
  /^node:(fs|fs\/promises|child_process|net|http|https|dgram)$/,
];

/**
 * What makes a command file more than an adapter (issue 28: "a command file parses, calls one run
 * function and renders; no logic"), found mechanically: a loop, an `await` or an `async` function
 * (the work, and its waiting, belong to the library's run function), an import of
 * {@link COMMAND_FORBIDDEN_IMPORTS}, or more than one `run…` function imported from the library.
 */
export function commandLogic(rel, sf) {
  const found = [];
  const at = (node) => `${rel}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`;
  const runImports = [];
  const visit = (node) => {
    if (
      ts.isForStatement(node) ||
      ts.isForInStatement(node) ||
      ts.isForOfStatement(node) ||
      ts.isWhileStatement(node) ||
      ts.isDoStatement(node)
    )
      found.push({ at: at(node), what: 'a loop' });
    else if (ts.isAwaitExpression(node)) found.push({ at: at(node), what: 'an await' });
    else if (ts.isFunctionLike(node) && node.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword))
      found.push({ at: at(node), what: 'an async function' });
    else if (ts.isImportDeclaration(node)) {
      const spec = node.moduleSpecifier.text;
      if (COMMAND_FORBIDDEN_IMPORTS.some((re) => re.test(spec)))
        found.push({ at: at(node), what: `an import of ${spec}` });
      const named = node.importClause?.namedBindings;
      if (!node.importClause?.isTypeOnly && named && ts.isNamedImports(named))
        for (const e of named.elements)
          if (!e.isTypeOnly && /^run[A-Z]/.test(e.name.text) && spec.includes('/lib/')) runImports.push(e.name.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  if (runImports.length > 1)
    found.push({ at: rel, what: `${runImports.length} run functions (${runImports.join(', ')})` });
  return found;
}

/** The calls that execute a statement: `db.query(…)`, `conn.execute(…)`, `db.transaction(…)`. */
const EXECUTES = new Set(['query', 'execute', 'transaction']);

/**
 * Statements executed outside a verb's `store.ts` (ARCHITECTURE.md's roles: `store.ts` holds the
 * executed statements, `run.ts` orchestrates): in a verb folder of a domain
 * (`src/lib/<domain>/<verb>/`), any other file calling `.query`, `.execute` or `.transaction`.
 */
export function storeBreaks(rel, sf) {
  const parts = rel.split('/');
  if (parts.length < 5 || layerOf(rel) !== 'domain' || parts[parts.length - 1] === 'store.ts') return [];
  const found = [];
  const visit = (node) => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      EXECUTES.has(node.expression.name.text)
    )
      found.push({
        at: `${rel}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`,
        what: `.${node.expression.name.text}(…)`,
      });
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function nameOf(node, sf) {
  if (node.name) return node.name.getText(sf);
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  return '(anonymous)';
}

export function measure(root = process.cwd()) {
  const longCommands = [];
  const commandLogicFound = [];
  const longFunctions = [];
  const layerBreaks = [];
  const statementsOutsideStore = [];
  for (const file of files(join(root, 'src'))) {
    const rel = relative(root, file);
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (rel.startsWith('src/commands/') && !COMMAND_SUPPORT.has(rel) && lines > MAX_COMMAND_LINES)
      longCommands.push({ file: rel, lines });
    layerBreaks.push(...importBreaks(rel, text));
    if (EXEMPT.has(rel)) continue;
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    if (rel.startsWith('src/commands/') && !COMMAND_SUPPORT.has(rel)) commandLogicFound.push(...commandLogic(rel, sf));
    if (rel.startsWith('src/lib/')) statementsOutsideStore.push(...storeBreaks(rel, sf));
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        if (end - start + 1 > MAX_FUNCTION_LINES)
          longFunctions.push({ file: rel, name: nameOf(node, sf), lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return { longCommands, commandLogic: commandLogicFound, longFunctions, layerBreaks, statementsOutsideStore };
}

/** Imports that go against the layers: lib → commands, infrastructure → a domain. */
function importBreaks(rel, text) {
  if (!rel.startsWith('src/lib/')) return [];
  const breaks = [];
  for (const m of text.matchAll(/from '(\.[^']+)'/g)) {
    const target = relative(process.cwd(), join(rel, '..', m[1]));
    if (target.startsWith('src/commands/') || !target.startsWith('src/lib/'))
      breaks.push({ file: rel, imports: target });
    else if (layerOf(rel) === 'infrastructure' && layerOf(target) === 'domain')
      breaks.push({ file: rel, imports: target });
  }
  return breaks;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { longCommands, commandLogic: logic, longFunctions, layerBreaks, statementsOutsideStore } = measure();
  for (const b of layerBreaks) console.log(`layer ${b.file} imports ${b.imports}`);
  for (const c of longCommands) console.log(`command ${c.file}: ${c.lines} lines`);
  for (const l of logic) console.log(`command logic ${l.at}: ${l.what}`);
  for (const f of longFunctions) console.log(`function ${f.file} ${f.name}: ${f.lines} lines`);
  for (const b of statementsOutsideStore) console.log(`statement outside store.ts ${b.at}: ${b.what}`);
  console.log(
    `${longCommands.length} command files over ${MAX_COMMAND_LINES} lines, ${logic.length} places of logic in command files, ${longFunctions.length} functions over ${MAX_FUNCTION_LINES} lines, ${layerBreaks.length} imports against the layers, ${statementsOutsideStore.length} statements executed outside a verb's store.ts`,
  );
  const found = longCommands.length + logic.length + longFunctions.length + layerBreaks.length;
  process.exitCode = found + statementsOutsideStore.length > 0 ? 1 : 0;
}
