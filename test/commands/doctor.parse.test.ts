import { describe, expect, it } from 'vitest';
import { createDoctorCommand } from '../../src/commands/doctor/doctor.js';
import { CONSUMER_QUEUE } from '../../src/lib/doctor/isolation/types.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('doctor: flags → options', () => {
  it('defaults', async () => {
    const { options } = await parseWith(createDoctorCommand, ['doctor']);
    expect(options).toEqual({ probe: false, isolation: false, consumerQueue: CONSUMER_QUEUE, consumerUsers: [] });
  });
  it('every flag reaches its option, --consumer-user repeatable', async () => {
    const { options } = await parseWith(createDoctorCommand, [
      'doctor',
      '--probe',
      '--isolation',
      '--consumer-queue',
      'q.x',
      '--consumer-user',
      'a',
      '--consumer-user',
      'b',
    ]);
    expect(options).toEqual({ probe: true, isolation: true, consumerQueue: 'q.x', consumerUsers: ['a', 'b'] });
  });
  it('a bad value is refused before the run', async () => {
    expect(await parseError(createDoctorCommand, ['doctor', '--isolation', '--consumer-queue', ''])).toMatch(
      /--consumer-queue/,
    );
  });
  it('--consumer-queue and --consumer-user apply only with --isolation', async () => {
    expect(await parseError(createDoctorCommand, ['doctor', '--consumer-queue', 'q.x'])).toBe(
      '--consumer-queue applies only with --isolation',
    );
    expect(await parseError(createDoctorCommand, ['doctor', '--consumer-user', 'a'])).toBe(
      '--consumer-user applies only with --isolation',
    );
  });
});
