import { describe, expect, it } from 'vitest';
import { createCanonCheckEnvelopeCommand } from '../../src/commands/canon/check-envelope.js';
import { createCanonHashCommand } from '../../src/commands/canon/hash.js';
import { DEFAULT_MAX_LINE_BYTES } from '../../src/lib/canon/hash/decide.js';
import { createCanonVerifyCommand } from '../../src/commands/canon/verify.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('canon hash: flags → options', () => {
  it('defaults: standard input, the hash of one document, exact numbers', async () => {
    const { options } = await parseWith(createCanonHashCommand, ['hash']);
    expect(options).toEqual({
      file: undefined,
      canonical: false,
      lines: false,
      numberMode: 'exact',
      maxLineBytes: DEFAULT_MAX_LINE_BYTES,
    });
  });
  it('every flag reaches its option, the file is the positional argument', async () => {
    const { options } = await parseWith(createCanonHashCommand, [
      'hash',
      'a.json',
      '--canonical',
      '--lines',
      '--number-mode',
      'double',
      '--max-line-bytes',
      '100',
    ]);
    expect(options).toEqual({ file: 'a.json', canonical: true, lines: true, numberMode: 'double', maxLineBytes: 100 });
  });
  it('a bad value is refused before the run', async () => {
    expect(await parseError(createCanonHashCommand, ['hash', '--number-mode', 'float'])).toMatch(/--number-mode/);
    expect(await parseError(createCanonHashCommand, ['hash', '--max-line-bytes', '0'])).toMatch(/--max-line-bytes/);
  });
});

describe('canon verify: flags → options', () => {
  it('defaults: exact numbers, every file in order', async () => {
    const { options } = await parseWith(createCanonVerifyCommand, ['verify', 'a.json', 'b.json']);
    expect(options).toEqual({ files: ['a.json', 'b.json'], numberMode: 'exact' });
  });
  it('--number-mode reaches its option', async () => {
    expect(
      (await parseWith(createCanonVerifyCommand, ['verify', 'a.json', '--number-mode', 'double'])).options.numberMode,
    ).toBe('double');
  });
  it('a file is required', async () => {
    expect(await parseError(createCanonVerifyCommand, ['verify'])).toMatch(/files/);
  });
});

describe('canon check-envelope: flags → options', () => {
  it('defaults: standard input', async () => {
    expect((await parseWith(createCanonCheckEnvelopeCommand, ['check-envelope'])).options).toEqual({ file: undefined });
  });
  it('the file is the positional argument', async () => {
    expect((await parseWith(createCanonCheckEnvelopeCommand, ['check-envelope', '-'])).options).toEqual({ file: '-' });
  });
  it('a second file is refused', async () => {
    expect(await parseError(createCanonCheckEnvelopeCommand, ['check-envelope', 'a', 'b'])).toMatch(
      /too many arguments/,
    );
  });
});
