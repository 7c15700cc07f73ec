import { describe, expect, it } from 'vitest';
import { createConfigShowCommand } from '../../src/commands/config/show.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('config show: flags → options', () => {
  it('no options; the context resolves the configuration from the environment', async () => {
    const { options, ctx } = await parseWith(createConfigShowCommand, ['show'], { FCCTL_APP_KEY: '100021' });
    expect(options).toEqual({});
    expect(ctx.config.appKey).toMatchObject({ value: '100021', source: 'env' });
  });
  it('an unknown flag is refused before the run', async () => {
    expect(await parseError(createConfigShowCommand, ['show', '--nope'])).toMatch(/unknown option/);
  });
});
