// `node --import ./bench/record-modules.mjs …` with RECORD_MODULES_FILE=<file>: appends to that
// file, one a line, the URL of every ES module the process resolves (a resolve hook, which runs on
// the loader thread) and, at exit, the path of every CommonJS module in require.cache (React is
// CommonJS; a require() never passes the ES resolve hook). Used to prove what start-up loads
// (bench/startup.mjs, test/cli/startup-modules.test.ts). Without the variable it does nothing.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const file = process.env.RECORD_MODULES_FILE;
if (file) {
  const hook = `
    import { appendFileSync } from 'node:fs';
    let file;
    export function initialize(data) { file = data.file; }
    export async function resolve(specifier, context, next) {
      const r = await next(specifier, context);
      appendFileSync(file, r.url + '\\n');
      return r;
    }`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`, { data: { file } });
  const cache = createRequire(import.meta.url).cache;
  process.on('exit', () =>
    appendFileSync(
      file,
      Object.keys(cache)
        .map((p) => `${p}\n`)
        .join(''),
    ),
  );
}
