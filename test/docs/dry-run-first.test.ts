/**
 * Every `fcctl … --execute` line in the docs' examples follows its own dry run (the same line without
 * `--execute`) in the same block (issue 36 §13: the dry run, then the write — in explain, the report
 * and the docs alike; docs/operations.md "Run it without first, read the output, then add --execute").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownFiles(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

/** The fenced blocks' command lines (continuations joined, comments cut), as words. */
function exampleBlocks(md: string): string[][][] {
  const blocks: string[][][] = [];
  let block: string[][] | null = null;
  let pending = '';
  for (const raw of md.split('\n')) {
    if (/^\s*```/.test(raw)) {
      if (block === null) block = [];
      else {
        blocks.push(block);
        block = null;
      }
      pending = '';
      continue;
    }
    if (block === null) continue;
    const line = pending + raw;
    if (/\\\s*$/.test(line)) {
      pending = line.replace(/\\\s*$/, ' ');
      continue;
    }
    pending = '';
    const words = line
      .replace(/(^|\s)#.*$/, '')
      .trim()
      .split(/\s+/)
      .filter(Boolean);
    if (words[0] === 'fcctl') block.push(words);
  }
  return blocks;
}

/** The `--execute` lines of the blocks with no dry run of theirs before them. */
function writesWithoutDryRun(md: string): string[] {
  const bad: string[] = [];
  for (const block of exampleBlocks(md))
    block.forEach((words, i) => {
      if (!words.includes('--execute')) return;
      const dry = words.filter((w) => w !== '--execute').join(' ');
      if (!block.slice(0, i).some((w) => w.join(' ') === dry)) bad.push(words.join(' '));
    });
  return bad;
}

describe('writesWithoutDryRun', () => {
  it.each([
    ['```sh\nfcctl x --a 1\nfcctl x --a 1 --execute   # do it\n```', []],
    ['```sh\nfcctl x --a 1 \\\n  --b 2   # dry\nfcctl x --a 1 --b 2 --execute\n```', []],
    ['```sh\nfcctl x --a 1 --execute\n```', ['fcctl x --a 1 --execute']],
    ['```sh\nfcctl x --a 1\n```\n```sh\nfcctl x --a 1 --execute\n```', ['fcctl x --a 1 --execute']],
    ['`fcctl x --execute` in prose', []],
  ])('%j → %j', (md, bad) => expect(writesWithoutDryRun(md)).toEqual(bad));
});

describe('the docs: every --execute example after its dry run', () => {
  const files = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))];
  it.each(files.map((f) => [f.slice(ROOT.length + 1), f]))('%s', (_name, file) => {
    expect(writesWithoutDryRun(readFileSync(file, 'utf8'))).toEqual([]);
  });
});
