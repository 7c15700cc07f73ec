import { describe, expect, it } from 'vitest';
import { createDevSeedCommand } from '../../src/commands/dev/seed.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('dev seed: flags → options', () => {
  it('defaults', async () => {
    const { options } = await parseWith(createDevSeedCommand, ['seed']);
    expect(options).toEqual({
      answers: 200,
      consumers: undefined,
      consumerKeys: undefined,
      schools: 2,
      snapshotBytes: 0,
      seed: 1,
      includeFaults: false,
      grantMix: true,
      replace: false,
      sh: true,
    });
  });
  it('every flag reaches its option, --consumer-keys split on commas', async () => {
    const { options } = await parseWith(createDevSeedCommand, [
      'seed',
      '--answers',
      '5',
      '--consumers',
      '2',
      '--consumer-keys',
      'a, b',
      '--schools',
      '3',
      '--snapshot-bytes',
      '2048',
      '--seed',
      '7',
      '--include-faults',
      '--no-grant-mix',
      '--replace',
      '--no-sh',
    ]);
    expect(options).toEqual({
      answers: 5,
      consumers: 2,
      consumerKeys: ['a', 'b'],
      schools: 3,
      snapshotBytes: 2048,
      seed: 7,
      includeFaults: true,
      grantMix: false,
      replace: true,
      sh: false,
    });
  });
  it('a value out of range is refused before the run', async () => {
    expect(await parseError(createDevSeedCommand, ['seed', '--schools', '0'])).toMatch(/--schools/);
  });
});
