// Lists the test files that need no service, process or terminal: pure decisions, SQL as text,
// parsers, renderers (scripts/test.sh runs them on every supported Node besides the main one).
// A file is one when it reaches for none of the markers below; a test that starts using one of
// them leaves the list by itself, so the list needs no upkeep.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVICE =
  /servicesTest|testMysqlUrl|testAmqpUrl|services\.sh|runCli|spawn|execFile|child_process|tmux|chromium|helpers\/(db|broker|services|cli|service|flow-center|proxy|management|node-exporter|faults)\.js/;

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : /\.test\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

const files = walk(join(ROOT, 'test'))
  .map((f) => relative(ROOT, f))
  .filter((f) => !f.startsWith('test/faults/') && !SERVICE.test(readFileSync(join(ROOT, f), 'utf8')))
  .sort();
console.log(files.join('\n'));
