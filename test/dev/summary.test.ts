import { describe, expect, it } from 'vitest';
import { type SeedResult, summarizeSeed } from '../../src/lib/dev/run.js';
import { planSeed } from '../../src/lib/dev/seed.js';
import { planShSeed, SH_SEED_TASK_START_WINDOW } from '../../src/lib/dev/sh-seed.js';

const publisher = { appCode: 'demo-publisher', appKey: '100021' };
const plan = planSeed({
  seed: 1,
  answers: 40,
  consumerKeys: ['a', 'b'],
  schools: 2,
  snapshotBytes: 0,
  publisher,
  grantMix: true,
  includeFaults: true,
});
const fcOnly: SeedResult = {
  publisher,
  consumerKeys: ['a', 'b'],
  plan,
  replaced: false,
  shPlan: null,
  shStatus: 'skipped: --no-sh',
  shReplaced: false,
  seconds: 0.4,
};
const withSh: SeedResult = {
  ...fcOnly,
  replaced: true,
  shPlan: planShSeed(1, plan),
  shStatus: 'seeded',
  shReplaced: true,
};

describe('summarizeSeed (pure)', () => {
  it.each([
    { name: 'FC only, terminal', result: fcOnly, json: false, sh: false },
    { name: 'FC only, JSON', result: fcOnly, json: true, sh: false },
    { name: 'FC and SH, terminal', result: withSh, json: false, sh: true },
    { name: 'FC and SH, JSON', result: withSh, json: true, sh: true },
  ])('$name', ({ result, json, sh }) => {
    const { summary, counts } = summarizeSeed({ seed: 1, schools: 2 }, result, json);
    expect(summary).toMatchObject({
      command: 'dev seed',
      exitCode: 0,
      seed: 1,
      publisherAppKey: '100021',
      consumerKeys: 'a,b',
      schoolIds: '5,6',
      replaced: result.replaced,
      sh: result.shStatus,
      seconds: 0.4,
    });
    expect('faults' in summary).toBe(json);
    expect('drift' in summary).toBe(json && sh);
    expect('shRows' in summary).toBe(sh);
    if (sh)
      expect(summary).toMatchObject({
        shReplaced: true,
        shRows: result.shPlan!.rows.length,
        driftTaskStartFrom: SH_SEED_TASK_START_WINDOW.from,
      });
    expect(counts).toMatchObject({ answer: 40, answer_delivery: plan.deliveries.length });
    expect('fc_answer_projection' in counts).toBe(sh);
    expect(Object.keys(counts).some((k) => k.startsWith('drift_'))).toBe(sh);
  });
});
