import { describe, expect, it } from 'vitest';
import { createDbCheckCommand } from '../../src/commands/db/check.js';
import { createDbInitCommand } from '../../src/commands/db/init.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('db init: flags → options', () => {
  it('--side all is both sides, --dev off by default', async () => {
    expect((await parseWith(createDbInitCommand, ['init', '--side', 'all'])).options).toEqual({
      sides: ['fc', 'sh'],
      dev: false,
    });
  });
  it('every flag reaches its option', async () => {
    expect((await parseWith(createDbInitCommand, ['init', '--side', 'sh', '--dev'])).options).toEqual({
      sides: ['sh'],
      dev: true,
    });
  });
  it('--side is required and one of fc, sh, all', async () => {
    expect(await parseError(createDbInitCommand, ['init'])).toMatch(/--side/);
    expect(await parseError(createDbInitCommand, ['init', '--side', 'both'])).toMatch(/--side/);
  });
});

describe('db check: flags → options', () => {
  it('defaults: both sides', async () => {
    expect((await parseWith(createDbCheckCommand, ['check'])).options).toEqual({ sides: ['fc', 'sh'] });
  });
  it('--side reaches its option', async () => {
    expect((await parseWith(createDbCheckCommand, ['check', '--side', 'fc'])).options).toEqual({ sides: ['fc'] });
  });
  it('a bad side is refused before the run', async () => {
    expect(await parseError(createDbCheckCommand, ['check', '--side', 'x'])).toMatch(/--side/);
  });
});
