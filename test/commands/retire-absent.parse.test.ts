import type { Command } from '@commander-js/extra-typings';
import { describe, expect, it } from 'vitest';
import type { Ctx, Deps, Resources } from '../../src/commands/context.js';
import { createRetireProveCommand } from '../../src/commands/retire-absent/prove.js';
import type { RetireProveOptions } from '../../src/lib/retire-absent/prove/command.js';
import { createRetireAbsentCommand, DEFAULT_MAX_PROOF_AGE_SECONDS } from '../../src/commands/retire-absent/retire.js';
import { parseError, parseWith } from '../helpers/parse.js';

/** `prove` under its parent, as main builds it: the parent's flags are parsed wherever they stand. */
const createProve = (
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF: (o: RetireProveOptions, ctx: Ctx) => Promise<number>,
) => createRetireProveCommand(createRetireAbsentCommand(parent, deps, resources), deps, resources, runF);
const PROVE = [
  'retire-absent',
  'prove',
  '--candidates',
  'run/retire-candidates.jsonl',
  '--fc-manifest',
  'run/fc.jsonl',
  '--out',
  'proof.json',
];

describe('retire-absent: flags → options', () => {
  it('defaults: a dry run, proofs up to 24h old', async () => {
    const { options } = await parseWith(createRetireAbsentCommand, ['retire-absent', '--proof', 'proof.json']);
    expect(options).toEqual({ proof: 'proof.json', execute: false, maxProofAgeSeconds: DEFAULT_MAX_PROOF_AGE_SECONDS });
  });
  it('every flag reaches its option, the age as seconds', async () => {
    const { options } = await parseWith(createRetireAbsentCommand, [
      'retire-absent',
      '--proof',
      'p.json',
      '--execute',
      '--max-proof-age',
      '2h',
      '--evidence',
      'ev.jsonl',
      '--run-id',
      'r-1',
    ]);
    expect(options).toEqual({
      proof: 'p.json',
      execute: true,
      maxProofAgeSeconds: 7200,
      evidence: 'ev.jsonl',
      runId: 'r-1',
    });
  });
  it('a value out of range is refused before the run; no --proof either', async () => {
    expect(
      await parseError(createRetireAbsentCommand, ['retire-absent', '--proof', 'p.json', '--max-proof-age', '31d']),
    ).toMatch(/--max-proof-age/);
    expect(await parseError(createRetireAbsentCommand, ['retire-absent'])).toBe(
      'give --proof FILE (made by `fcctl retire-absent prove`)',
    );
  });
});

describe('retire-absent prove: flags → options', () => {
  it('defaults: no checkpoints, proof id or task id given', async () => {
    const { options } = await parseWith(createProve, PROVE);
    expect(options).toEqual({
      candidates: 'run/retire-candidates.jsonl',
      fcManifest: 'run/fc.jsonl',
      fcCheckpoints: undefined,
      out: 'proof.json',
    });
  });
  it('every flag reaches its option, checkpoints in the order given', async () => {
    const { options } = await parseWith(createProve, [
      ...PROVE,
      '--fc-checkpoint',
      'a.json',
      '--fc-checkpoint',
      'b.json',
      '--proof-id',
      'rp-1',
      '--task-id',
      'task-1',
    ]);
    expect(options).toMatchObject({ fcCheckpoints: ['a.json', 'b.json'], proofId: 'rp-1', taskId: 'task-1' });
  });
  it("a value out of range is refused before the run; the parent's flags too", async () => {
    expect(await parseError(createProve, [...PROVE, '--proof-id', 'x'.repeat(129)])).toMatch(/--proof-id|128/);
    expect(await parseError(createProve, ['retire-absent', '--execute', '--run-id', 'r', ...PROVE.slice(1)])).toBe(
      '--execute, --run-id belong to `retire-absent`, not `retire-absent prove`',
    );
  });
});
