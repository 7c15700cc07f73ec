import { describe, expect, it } from 'vitest';
import { createProjectionRepairCommand } from '../../src/commands/projection/repair-authoritative.js';
import { parseError, parseWith } from '../helpers/parse.js';

const ANSWER = 'a1000000-0000-4000-8000-000000000001';
const HASH = 'ab'.repeat(32);
const BASE = ['repair-authoritative', '--consumer', '100100', '--proof-id', 'INC-7'];

describe('projection repair-authoritative: flags → options', () => {
  it('defaults (a plan): a dry run, a new UUID as run id', async () => {
    const { options } = await parseWith(createProjectionRepairCommand, [...BASE, '--plan', 'run/repair-plan.jsonl']);
    expect(options).toMatchObject({
      consumerAppKey: '100100',
      proofId: 'INC-7',
      plan: 'run/repair-plan.jsonl',
      execute: false,
      concurrency: 4,
      maxRereads: 3,
      maxSeconds: 3600,
    });
    expect(options.runId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(options).not.toHaveProperty('single');
    expect(options).not.toHaveProperty('evidence');
  });
  it('every flag of one answer reaches its option', async () => {
    const { options } = await parseWith(createProjectionRepairCommand, [
      ...BASE,
      '--school',
      '5',
      '--answer',
      ANSWER,
      '--expected-revision',
      '3',
      '--expected-hash',
      HASH,
      '--expected-is-deleted',
      '1',
      '--envelope',
      'e.json',
      '--execute',
      '--evidence',
      'ev.jsonl',
      '--run-id',
      'nightly-1',
      '--concurrency',
      '8',
      '--max-rereads',
      '0',
      '--max-seconds',
      '10',
    ]);
    expect(options).toEqual({
      consumerAppKey: '100100',
      proofId: 'INC-7',
      schId: '5',
      single: { answerUuid: ANSWER, expected: { revision: '3', hash: HASH, isDeleted: true }, envelope: 'e.json' },
      execute: true,
      evidence: 'ev.jsonl',
      runId: 'nightly-1',
      concurrency: 8,
      maxRereads: 0,
      maxSeconds: 10,
    });
  });
  it('--expect-missing: the missing triple', async () => {
    const { options } = await parseWith(createProjectionRepairCommand, [
      ...BASE,
      '--school',
      '5',
      '--answer',
      ANSWER,
      '--expect-missing',
    ]);
    expect(options.single?.expected).toEqual({ revision: null, hash: null, isDeleted: null });
  });
  it('a value out of range is refused before the run', async () => {
    expect(
      await parseError(createProjectionRepairCommand, [...BASE, '--plan', 'p.jsonl', '--concurrency', '0']),
    ).toMatch(/--concurrency/);
  });
  it("a plan with one answer's flags, or neither, is refused before the run", async () => {
    expect(await parseError(createProjectionRepairCommand, [...BASE, '--plan', 'p.jsonl', '--answer', ANSWER])).toBe(
      '--plan cannot be combined with --answer, --expected-*, --expect-missing or --envelope',
    );
    expect(await parseError(createProjectionRepairCommand, [...BASE, '--answer', ANSWER])).toMatch(
      /^give --school and --answer/,
    );
    expect(
      await parseError(createProjectionRepairCommand, [
        ...BASE,
        '--school',
        '5',
        '--answer',
        'nope',
        '--expect-missing',
      ]),
    ).toBe('--answer "nope" is not a UUID');
  });
});
